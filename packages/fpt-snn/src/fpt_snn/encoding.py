"""Turn static inputs into input sequences [T, B, F] (time first, spikingjelly's layout).

Source: row-/pixel-sequential image tasks of the SNN literature (the paper's sequential
CIFAR / MNIST experiments); ``rate_encode`` is the usual Bernoulli rate code.
"""

from __future__ import annotations

import torch

from icml25_core import check_scalar, check_tensor

from ._validation import FLOAT_DTYPES


def _images(images):
    if isinstance(images, torch.Tensor) and not images.is_floating_point():
        raise TypeError(f"`images` must be a float tensor, got dtype {images.dtype}")
    return check_tensor(images, "images", ndim=3, dtype=FLOAT_DTYPES)


def row_sequential(images, dwell=1):
    """One image row per step, each shown for `dwell` steps.

    Parameters
    ----------
    images : Tensor, shape [B, H, W], float
    dwell : int, default=1
        Steps per row (the reproduce uses 4: T = 32 for 8×8 digits).

    Returns
    -------
    Tensor, shape [H·dwell, B, W], dtype of `images`

    Raises
    ------
    TypeError, ValueError
        If `images` is not a finite non-empty 3-D float tensor or `dwell` < 1.
    """
    images = _images(images)
    check_scalar(dwell, "dwell", kind=int, low=1)
    return images.transpose(0, 1).repeat_interleave(int(dwell), dim=0)


def pixel_sequential(images):
    """One pixel per step (row-major): T = H·W, one input per step.

    Parameters
    ----------
    images : Tensor, shape [B, H, W], float

    Returns
    -------
    Tensor, shape [H·W, B, 1], dtype of `images`

    Raises
    ------
    TypeError, ValueError
        As :func:`row_sequential`.
    """
    images = _images(images)
    return images.reshape(images.shape[0], -1).T.unsqueeze(-1)


def rate_encode(x, T, generator=None):
    """Bernoulli rate code: each step spikes with probability `x`.

    Parameters
    ----------
    x : Tensor, any shape, float in [0, 1]
        Intensities.
    T : int
        Number of steps (>= 1).
    generator : torch.Generator, optional

    Returns
    -------
    Tensor, shape [T, *x.shape], dtype of `x`, values in {0, 1}

    Raises
    ------
    TypeError, ValueError
        If `x` is not a finite non-empty float tensor in [0, 1], or `T` < 1.
    """
    if isinstance(x, torch.Tensor) and not x.is_floating_point():
        raise TypeError(f"`x` must be a float tensor, got dtype {x.dtype}")
    check_tensor(x, "x", dtype=FLOAT_DTYPES)
    if bool((x < 0).any() | (x > 1).any()):
        raise ValueError("`x` must hold probabilities in [0, 1]")
    check_scalar(T, "T", kind=int, low=1)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"`generator` must be a torch.Generator, got {type(generator).__name__}")
    probs = x.unsqueeze(0).expand(int(T), *x.shape)
    return torch.bernoulli(probs, generator=generator)
