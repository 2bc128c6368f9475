"""Input checks shared by the estimators, samplers and nuisances (errors name the argument)."""

from __future__ import annotations

import numpy as np

from icml25_core import check_array

#: Above this many arms, an arm too small to fit is reported as a likely continuous treatment.
MANY_ARMS = 10


def check_design(x, name, *, ndim=2, n=None):
    """Finite, non-empty float64 array of ``ndim`` dims whose first axis has length ``n``."""
    arr = check_array(x, name, ndim=ndim, dtype="numeric", cast=np.float64)
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"`{name}` has {arr.shape[0]} rows but `X` has {n}")
    return arr


def integer_labels(t, *, n, name="T"):
    """Treatment labels (n,) as int64; ValueError naming ``name`` for non-integer values."""
    arr = check_design(t, name, ndim=1, n=n)
    fractional = arr != np.round(arr)
    if fractional.any():
        raise ValueError(
            f"`{name}` must be a discrete treatment coded by integers (0/1, or 0/1/2/... for "
            f"several arms); found non-integer values {np.unique(arr[fractional])[:5].tolist()}. "
            "Continuous treatments are not supported"
        )
    huge = np.abs(arr) > 2**53  # beyond, float64 labels are not exact integers any more
    if huge.any():
        raise ValueError(
            f"`{name}` labels must lie within +-2^53 to be read exactly as integers; found "
            f"{np.unique(arr[huge])[:5].tolist()}"
        )
    return arr.astype(np.int64)


def check_treatment(t, *, n, min_per_arm=1, name="T"):
    """Discrete treatment of length ``n``: integer codes, >= 2 arms, >= ``min_per_arm`` units each.

    Returns
    -------
    t : ndarray of shape (n,), int64
        The treatment labels.
    arms : ndarray of shape (A,), int64
        The sorted distinct labels; ``arms[0]`` is the base arm of every contrast.

    Raises
    ------
    ValueError
        NaN/inf, a length other than ``n``, non-integer (continuous) values, a single arm, or an
        arm with fewer than ``min_per_arm`` units.
    """
    arr = integer_labels(t, n=n, name=name)
    arms, counts = np.unique(arr, return_counts=True)
    if arms.size < 2:
        raise ValueError(f"`{name}` must have at least two arms, got only {arms.tolist()}")
    few = counts < min_per_arm
    if few.any():
        shown = ", ".join(
            f"arm {a}: {c}" for a, c in zip(arms[few][:5], counts[few][:5], strict=True)
        )
        more = f", ... ({few.sum()} arms in all)" if few.sum() > 5 else ""
        hint = (
            f"; {arms.size} levels with few units each: is `{name}` continuous? Only discrete "
            "treatments are supported"
            if arms.size > MANY_ARMS
            else ""
        )
        raise ValueError(
            f"`{name}` needs at least {min_per_arm} units per arm, got {shown}{more}{hint}"
        )
    return arr, arms
