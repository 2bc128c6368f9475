"""Datasets as float32 image tensors: Debian Fashion-MNIST and scikit-learn's digits.

Fashion-MNIST comes from the Debian package ``dataset-fashion-mnist`` through
``icml25_core.fashion_mnist`` (DECISIONS 1); digits from ``sklearn.datasets.load_digits``
(``pip install fsl-sage[digits]``).
"""

from __future__ import annotations

import numpy as np
import torch

from icml25_core import check_choice, check_scalar, fashion_mnist

__all__ = ["load_digits", "load_fashion_mnist"]

#: Fashion-MNIST training-set pixel mean and standard deviation (of x / 255).
FMNIST_MEAN, FMNIST_STD = 0.2860, 0.3530


def load_fashion_mnist(split: str = "train", limit: int | None = None, root=None):
    """Fashion-MNIST images ``[N, 1, 28, 28]`` float32 (standardised) and labels ``[N]`` int64.

    Parameters
    ----------
    split : {"train", "test"}
    limit : int, optional
        Keep the first ``limit`` samples.
    root : path, optional
        Folder of the IDX files (default: the Debian package's).

    Raises
    ------
    FileNotFoundError
        If the Debian package ``dataset-fashion-mnist`` is not installed.
    ValueError
        For a bad `split` or `limit`.
    """
    check_choice(split, "split", ("train", "test"))
    images, labels = fashion_mnist(split, root=root)
    if limit is not None:
        check_scalar(limit, "limit", kind=int, low=1)
        images, labels = images[:limit], labels[:limit]
    x = (images.astype(np.float32) / 255.0 - FMNIST_MEAN) / FMNIST_STD
    return torch.from_numpy(x[:, None]), torch.from_numpy(labels.astype(np.int64))


def load_digits():
    """scikit-learn's 8x8 digits: images ``[1797, 1, 8, 8]`` float32 in [0, 1], labels int64.

    Raises
    ------
    ImportError
        Without scikit-learn (``pip install fsl-sage[digits]``).
    """
    try:
        from sklearn.datasets import load_digits as sk_digits
    except ImportError as err:
        raise ImportError("load_digits needs scikit-learn: pip install 'fsl-sage[digits]'") from err

    data = sk_digits()
    x = (data.images.astype(np.float32) / 16.0)[:, None]
    return torch.from_numpy(x), torch.from_numpy(data.target.astype(np.int64))
