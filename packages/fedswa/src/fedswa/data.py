"""Real inputs as float32 NCHW tensors and int64 labels: Fashion-MNIST and scikit-learn digits."""

from __future__ import annotations

import torch

from icml25_core import fashion_mnist

__all__ = ["load_fashion_mnist", "load_digits"]


def load_fashion_mnist(root=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fashion-MNIST from the Debian ``dataset-fashion-mnist`` files, scaled to ``[0, 1]``.

    Parameters
    ----------
    root : path, optional
        Folder of the ``.gz`` files; default ``$FASHION_MNIST_DIR`` or
        ``/usr/share/datasets/fashion-mnist``.

    Returns
    -------
    x_train : Tensor, shape [60000, 1, 28, 28], float32
    y_train : Tensor, shape [60000], int64
    x_test : Tensor, shape [10000, 1, 28, 28], float32
    y_test : Tensor, shape [10000], int64

    Raises
    ------
    FileNotFoundError
        If the files are missing; the message names the Debian package ``dataset-fashion-mnist``
        and the ``apt-get install`` line.
    """
    out = []
    for split in ("train", "test"):
        images, labels = fashion_mnist(split, root=root)
        x = torch.from_numpy(images).to(torch.float32).div_(255.0).unsqueeze(1)
        out += [x, torch.from_numpy(labels).to(torch.int64)]
    return out[0], out[1], out[2], out[3]


def load_digits() -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn's 8x8 digits (1797 images, 10 classes), scaled to ``[0, 1]``.

    Returns
    -------
    x : Tensor, shape [1797, 1, 8, 8], float32
    y : Tensor, shape [1797], int64

    Raises
    ------
    ImportError
        If scikit-learn is not installed (``pip install "fedswa[test]"`` or scikit-learn).
    """
    try:
        from sklearn.datasets import load_digits as sk_digits
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("load_digits needs scikit-learn: pip install scikit-learn") from err
    data = sk_digits()
    x = torch.as_tensor(data.images, dtype=torch.float32).div_(16.0).unsqueeze(1)
    return x, torch.as_tensor(data.target, dtype=torch.int64)
