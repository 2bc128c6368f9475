"""Argument checks shared by the public entry points (errors name the argument)."""

from __future__ import annotations

import numbers

import numpy as np

from icml25_core import check_array, check_scalar


def check_int(value, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """An int (Python or numpy, not bool) in ``[low, high]``; returned as a Python int."""
    check_scalar(value, name, kind=int, low=low, high=high)
    return int(value)


def check_bool(value, name: str, *, allow_int: bool = False) -> bool:
    """A bool (Python or numpy); with `allow_int`, the ints 0 and 1 too. Returned as a bool.

    Truthiness is not enough: ``"False"`` or ``None`` for a flag would silently pick a branch.
    """
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if allow_int and isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    wanted = "a bool (or 0/1)" if allow_int else "a bool"
    raise TypeError(f"`{name}` must be {wanted}, got {value!r}")


def check_index_array(values, name: str, size: int, *, length: int | None = None) -> np.ndarray:
    """1-D integer array with entries in ``[0, size)``; returned as int64.

    Floats holding whole numbers (``np.loadtxt`` reads every column as float) are accepted.
    """
    arr = check_array(values, name, ndim=1, dtype="numeric", allow_empty=True)
    if arr.dtype.kind == "b":
        raise TypeError(f"`{name}` must be integer, got dtype bool")
    if arr.dtype.kind == "f":
        whole = arr == np.round(arr)
        if not whole.all():
            raise ValueError(f"`{name}` must hold whole numbers, got {arr[~whole][0]}")
        arr = arr.astype(np.int64)
    if length is not None and len(arr) != length:
        raise ValueError(f"`{name}` must have length {length}, got {len(arr)}")
    if arr.size and (arr.min() < 0 or arr.max() >= size):
        bad = arr[(arr < 0) | (arr >= size)][0]
        raise ValueError(f"`{name}` must lie in [0, {size - 1}], got {bad}")
    return arr.astype(np.int64, copy=False)


def check_probabilities(values, name: str, *, axis: int = -1, atol: float = 1e-9) -> np.ndarray:
    """Non-negative float array whose sums along `axis` are 1 (within `atol`)."""
    arr = check_array(values, name, dtype="numeric", cast=np.float64)
    if (arr < 0).any():
        raise ValueError(f"`{name}` must be non-negative, got {arr.min()}")
    sums = arr.sum(axis=axis)
    if not np.allclose(sums, 1.0, rtol=0, atol=atol):
        worst = sums.flat[np.argmax(np.abs(sums - 1.0))]
        raise ValueError(f"`{name}` must sum to 1 along axis {axis}, got a sum of {worst}")
    return arr


def check_real(value, name: str, **bounds) -> float:
    """A finite real number (bounds as in :func:`icml25_core.check_scalar`)."""
    check_scalar(value, name, kind=numbers.Real, **bounds)
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"`{name}` must be finite, got {value}")
    return value
