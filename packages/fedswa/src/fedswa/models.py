"""Small models of the reproduction: the MLP 784-200-10 of the quick run and a small CNN."""

from __future__ import annotations

from torch import nn

from icml25_core import check_scalar

__all__ = ["mlp", "small_cnn"]


def mlp(in_features: int = 784, hidden: int = 200, num_classes: int = 10) -> nn.Module:
    """``Flatten -> Linear(in, hidden) -> ReLU -> Linear(hidden, classes)`` (2NN of McMahan et al.
    2017, the usual FL baseline on (Fashion-)MNIST); input ``[B, 1, H, W]`` float32.

    Raises ValueError if a size is below 1 (at least 2 classes)."""
    check_scalar(in_features, "in_features", kind=int, low=1)
    check_scalar(hidden, "hidden", kind=int, low=1)
    check_scalar(num_classes, "num_classes", kind=int, low=2)
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(in_features, hidden),
        nn.ReLU(),
        nn.Linear(hidden, num_classes),
    )


def small_cnn(num_classes: int = 10) -> nn.Module:
    """Two 5x5 conv layers (32, 64 channels) with BatchNorm and max-pooling, then a linear head;
    input ``[B, 1, 28, 28]`` float32 (the ``--full`` reproduce model)."""
    return nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * 7 * 7, num_classes),
    )
