"""Input checks shared by the estimators, samplers and nuisances (errors name the argument)."""

from __future__ import annotations

import numpy as np

from icml25_core import check_array


def check_design(x, name, *, ndim=2, n=None):
    """Finite, non-empty float64 array of ``ndim`` dims whose first axis has length ``n``."""
    arr = check_array(x, name, ndim=ndim, dtype="numeric", cast=np.float64)
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"`{name}` has {arr.shape[0]} rows but `X` has {n}")
    return arr


def check_binary_treatment(t, *, n, min_per_arm=1, name="T"):
    """Treatment vector in {0, 1} of length ``n`` with at least ``min_per_arm`` units per arm."""
    arr = check_design(t, name, ndim=1, n=n)
    if not np.isin(arr, (0.0, 1.0)).all():
        bad = np.unique(arr[~np.isin(arr, (0.0, 1.0))])[:5]
        raise ValueError(f"`{name}` must be binary in {{0, 1}}, found values {bad.tolist()}")
    arr = arr.astype(np.int64)
    counts = np.bincount(arr, minlength=2)
    if counts.min() < min_per_arm:
        raise ValueError(
            f"`{name}` needs at least {min_per_arm} units per arm, got {counts[0]} control "
            f"and {counts[1]} treated"
        )
    return arr
