"""scikit-learn's bundled digits (1797 8×8 images, 10 classes) as row sequences.

Source: ``sklearn.datasets.load_digits`` (UCI optical digits test set, shipped inside
scikit-learn); spec §4 of fpt-snn: stratified 80/20 split, row-sequential with dwell 4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from icml25_core import check_scalar

from ._validation import FLOAT_DTYPES
from .encoding import row_sequential

N_DIGITS, N_CLASSES = 1797, 10  # sklearn.datasets.load_digits


@dataclass(frozen=True)
class Sequences:
    """A train/test split of sequences [T, n, F] with int64 labels [n]."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor


def digits_sequences(dwell=4, test_size=0.2, random_state=0, dtype=torch.float32):
    """Load the digits, scale pixels to [0, 1], split stratified, encode row by row.

    Parameters
    ----------
    dwell : int, default=4
        Steps per image row: T = 8·dwell (default T = 32, 8 inputs per step).
    test_size : float, default=0.2
        Fraction held out, in (0, 1).
    random_state : int, default=0
        Seed of the stratified split.
    dtype : torch.dtype, default=torch.float32
        A float dtype (float32, float64, bfloat16, float16).

    Returns
    -------
    Sequences
        ``x_*`` of shape [8·dwell, n, 8], ``y_*`` of shape [n].

    Raises
    ------
    ValueError, TypeError
        On `dwell` < 1, `test_size` outside (0, 1) or leaving fewer than 10 images (one per
        class) on either side of the stratified split, a non-int `random_state`, or a `dtype`
        that is not a torch float dtype.
    ImportError
        Without scikit-learn (``pip install fpt-snn[data]``).
    """
    check_scalar(dwell, "dwell", kind=int, low=1)
    check_scalar(test_size, "test_size", low=0, high=1, inclusive="neither")
    check_scalar(random_state, "random_state", kind=int)
    if dtype not in FLOAT_DTYPES:
        raise TypeError(
            f"`dtype` must be a torch float dtype (float32, float64, bfloat16, float16), "
            f"got {dtype!r}"
        )
    n_test = math.ceil(test_size * N_DIGITS)  # scikit-learn's rounding of a float test_size
    if min(n_test, N_DIGITS - n_test) < N_CLASSES:
        raise ValueError(
            f"`test_size` must leave at least {N_CLASSES} of the {N_DIGITS} digits (one per "
            f"class) in both splits of the stratified split, got {test_size} "
            f"({n_test} test, {N_DIGITS - n_test} train)"
        )
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ImportError(
            "digits_sequences needs scikit-learn: pip install fpt-snn[data]"
        ) from error
    digits = load_digits()
    images = digits.images / 16.0
    tr, te, ytr, yte = train_test_split(
        images, digits.target, test_size=test_size, stratify=digits.target,
        random_state=random_state,
    )  # fmt: skip

    def encode(a):
        return row_sequential(torch.as_tensor(a, dtype=dtype), dwell)

    return Sequences(
        encode(tr), torch.as_tensor(ytr, dtype=torch.int64),
        encode(te), torch.as_tensor(yte, dtype=torch.int64),
    )  # fmt: skip
