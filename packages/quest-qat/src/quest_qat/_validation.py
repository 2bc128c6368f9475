"""Argument checks shared by the public entry points (clear errors that name the argument)."""

import numbers

import numpy as np
import torch

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def check_bits(bits, name: str = "bits", *, low: int = 1, high: int = 8) -> int:
    """An int bit-width in ``[low, high]``; bools and floats such as 1.585 are rejected.

    Raises
    ------
    ValueError
        If `bits` is not an integer in ``[low, high]``.
    """
    if (
        isinstance(bits, bool)
        or not isinstance(bits, numbers.Integral)
        or not low <= int(bits) <= high
    ):
        raise ValueError(f"`{name}` must be an int in {low}..{high}, got {bits!r}")
    return int(bits)


#: Largest Hadamard size: a 2**14 x 2**14 float64 matrix is already 2 GiB.
MAX_BLOCK = 2**14


def check_block(block, name: str = "block") -> int:
    """A Hadamard block size: a power of 2 in ``[1, MAX_BLOCK]``.

    Raises
    ------
    ValueError
        If `block` is not a power of 2 between 1 and ``MAX_BLOCK`` (16384).
    """
    if (
        isinstance(block, bool)
        or not isinstance(block, numbers.Integral)
        or int(block) < 1
        or int(block) & (int(block) - 1)
    ):
        raise ValueError(f"`{name}` must be a power of 2, got {block!r}")
    if int(block) > MAX_BLOCK:
        raise ValueError(f"`{name}` must be a power of 2 at most {MAX_BLOCK}, got {block}")
    return int(block)


def check_bool(value, name: str) -> bool:
    """A bool (Python or numpy); strings such as ``"no"`` and ints are rejected.

    Raises
    ------
    TypeError
        If `value` is not a bool.
    """
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"`{name}` must be a bool, got {value!r}")
    return bool(value)


def check_positive(value, name: str, *, allow_inf: bool = False) -> float:
    """A positive real number (``inf`` allowed when `allow_inf`).

    Raises
    ------
    ValueError
        If `value` is not a positive real number.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"`{name}` must be a positive number, got {value!r}")
    value = float(value)
    if not (value > 0) or (value == float("inf") and not allow_inf) or value != value:
        raise ValueError(f"`{name}` must be a positive number, got {value!r}")
    return value


def check_float_tensor(x, name: str = "x", *, finite: bool = True) -> torch.Tensor:
    """A floating tensor with at least one dimension; integer input is a TypeError.

    Raises
    ------
    TypeError
        If `x` is not a tensor or not of a floating dtype.
    ValueError
        If `x` is 0-d or (when `finite`) holds NaN or infinity.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(f"`{name}` must be a floating tensor (fp16/bf16/fp32/fp64), got {x.dtype}")
    if x.dim() == 0:
        raise ValueError(f"`{name}` must have at least one dimension, got a 0-d tensor")
    if finite and x.numel():
        with torch.no_grad():  # no autograd node (it would save x)
            finite_all = bool(torch.isfinite(x).all())
        if not finite_all:
            raise ValueError(f"`{name}` holds NaN or infinity")
    return x
