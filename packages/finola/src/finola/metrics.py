"""Image quality: PSNR in the CompressAI convention (images in [0, 1], clamped, per image, mean).

The convention matters more than the formula: a PSNR computed with the wrong data range is off by
a constant (``20 log10 255`` ≈ 48 dB for a [0, 255] / [0, 1] mix-up, the "90 dB" of
CompressAI#190), and one averaged over the pixels of a whole batch instead of per image weights
the images differently. :func:`psnr` therefore refuses a reference outside ``[0, data_range]``
and states its averaging.
"""

import math
import numbers
import warnings

import numpy as np
import torch

from icml25_core import check_scalar

__all__ = ["psnr"]


def _as_tensor(value, name: str) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value)
    raise TypeError(f"`{name}` must be a torch.Tensor or numpy array, got {type(value).__name__}")


def _check_image(t: torch.Tensor, name: str) -> torch.Tensor:
    if t.ndim not in (3, 4):
        raise ValueError(
            f"`{name}` must have shape (N, C, H, W) or (C, H, W), got {tuple(t.shape)}"
        )
    if t.numel() == 0:
        raise ValueError(f"`{name}` is empty (shape {tuple(t.shape)})")
    if t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"`{name}` must hold real numbers, got dtype {t.dtype}")
    t = t.detach().to(torch.float64)
    if torch.isnan(t).any():
        raise ValueError(f"`{name}` contains NaN")
    return t


def psnr(x, y, data_range: float = 1.0, *, per_image: bool = False):
    """Peak signal-to-noise ratio of reconstructions `x` against references `y`, in dB.

    The convention is CompressAI's (``compute_psnr`` of its evaluation scripts): images hold
    values in ``[0, data_range]`` (``[0, 1]`` by default); the reconstruction is clamped to that
    range first (a decoder's output is unbounded, a saved image is not); the PSNR
    ``10 log10(data_range² / MSE)`` is computed for each image, with the MSE over its channels
    and pixels; and the result is the mean of the per-image PSNRs (not the PSNR of the mean
    MSE). Per image it equals ``skimage.metrics.peak_signal_noise_ratio(y, x.clip(0, 1),
    data_range=1)``.

    Parameters
    ----------
    x : torch.Tensor or numpy.ndarray, shape (N, C, H, W) or (C, H, W), real dtype
        Reconstructions (C = 3 for RGB). Values outside ``[0, data_range]`` are clamped;
        infinities are clamped too; NaN is refused.
    y : torch.Tensor or numpy.ndarray, same shape as `x`, real dtype
        References (targets), every value in ``[0, data_range]``. A reference outside that range
        is refused instead of clamped: it almost always means [0, 255] images measured with
        ``data_range=1``.
    data_range : float, default=1.0
        The largest possible pixel value (``1`` for images in [0, 1]; ``255`` only for
        references that really are in [0, 255]).
    per_image : bool, default=False
        Return the PSNR of each image instead of the mean.

    Returns
    -------
    float or torch.Tensor
        The mean PSNR over the images, a Python float; with ``per_image=True`` a float64 tensor
        of shape (N,) (shape (1,) for a single (C, H, W) image) on `x`'s device. An image
        reconstructed exactly has PSNR ``inf`` (and so has the mean).

    Raises
    ------
    TypeError
        If `x` or `y` is not a tensor or array, or holds complex or bool values; if `per_image`
        is not a bool or `data_range` not a real number.
    ValueError
        If `x` or `y` is not 3- or 4-dimensional, is empty or contains NaN; if their shapes or
        devices differ; if `y` has a value outside ``[0, data_range]`` or is infinite; if a
        finite value of `x` exceeds 2 · data_range (a [0, 255] reconstruction); if
        `data_range` is not positive and finite.

    Warns
    -----
    UserWarning
        If ``data_range > 1`` but every reference value lies in [0, 1]: images in [0, 1]
        measured with ``data_range=255`` read ≈ 48 dB too high (CompressAI#190).

    Notes
    -----
    The pitfall this guards against (CompressAI#190, cited by the spec): a data range that does
    not match the images ([0, 1] images against a peak of 255, or one side divided by 255 and
    the other not) shifts the PSNR by about 48 dB and gives numbers such as "90 dB" that no
    codec reaches. Keep every image in [0, 1] and use the default ``data_range=1``.

    Examples
    --------
    >>> import torch
    >>> y = torch.full((2, 3, 4, 4), 0.5)
    >>> round(psnr(y + 0.1, y), 3)
    20.0
    >>> psnr(y * 255, y * 255)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `y` (the reference) has values outside [0, 1] (min 127.5, max 127.5): ...
    """
    if not isinstance(per_image, bool):
        raise TypeError(f"`per_image` must be a bool, got {type(per_image).__name__}")
    if not isinstance(data_range, numbers.Real) or isinstance(data_range, bool):
        raise TypeError(f"`data_range` must be a real number, got {type(data_range).__name__}")
    check_scalar(data_range, "data_range", low=0, inclusive="neither")
    if not math.isfinite(data_range):
        raise ValueError(f"`data_range` must be finite, got {data_range}")
    x = _check_image(_as_tensor(x, "x"), "x")
    y = _check_image(_as_tensor(y, "y"), "y")
    if x.shape != y.shape:
        raise ValueError(
            f"`x` and `y` must have the same shape, got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    if x.device != y.device:
        raise ValueError(f"`x` and `y` must be on the same device, got {x.device} and {y.device}")
    lo, hi = float(y.min()), float(y.max())
    if lo < 0 or hi > data_range:
        hint = (
            "images in [0, 255] must be divided by 255 first"
            if hi > 1 and data_range == 1
            else "pass images in [0, 1] with data_range=1"
        )
        raise ValueError(
            f"`y` (the reference) has values outside [0, {data_range:g}] "
            f"(min {lo:g}, max {hi:g}): {hint} (CompressAI#190)"
        )
    finite = x[torch.isfinite(x)]
    x_hi = float(finite.max()) if finite.numel() else 0.0
    if x_hi > 2 * data_range:  # far beyond what clamping an overshoot is for
        raise ValueError(
            f"`x` (the reconstruction) reaches {x_hi:g}, over twice data_range={data_range:g}: "
            "a [0, 255] image against a [0, 1] reference? (CompressAI#190)"
        )
    if data_range > 1 and hi <= 1:
        warnings.warn(
            f"every value of `y` lies in [0, 1] but data_range={data_range:g}: if the images are "
            "in [0, 1], pass data_range=1, or the PSNR reads too high (CompressAI#190)",
            UserWarning,
            stacklevel=2,
        )
    if x.ndim == 3:
        x, y = x.unsqueeze(0), y.unsqueeze(0)
    x = x.clamp(0.0, data_range)
    mse = (x - y).square().flatten(1).mean(dim=1)
    values = 10.0 * torch.log10(data_range**2 / mse)  # mse == 0 gives +inf
    if per_image:
        return values
    return float(values.mean())
