r"""ReFrame's metrics: SMAPE (the refresh trigger), PSNR and ꟻLIP.

Axis letters: N batch, C channels, H height, W width, T frames.

Sources: Liu & Aamodt, "ReFrame: Layer Caching for Accelerated Inference in Real-Time Rendering",
ICML 2025 (arXiv:2506.13814); official code github.com/ubc-aamodt-group/reframe-layer-caching
(``samples/unet/unet.py``, ``samples/FE/inference.py``, ``samples/SS/inference.py`` for SMAPE,
``samples/flip/compare_images.py`` for ꟻLIP).
"""

from __future__ import annotations

import math
import os

import numpy as np
import torch

from icml25_core import check_scalar, check_tensor

__all__ = ["smape", "psnr", "flip", "sequence_psnr"]

_SMAPE_ENV = "REFRAME_SMAPE_BACKEND"


def naive_smape(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    r"""Readable reference of :func:`smape` (one pass of torch ops, float32 accumulation).

    $$ s = \frac{2\,\mathrm{mean}|a-b|}{\mathrm{mean}(|a|+|b|)}
         = \frac{2\sum|a-b|}{\sum(|a|+|b|)} $$
    with $0/0 := 0$.

    Notes
    -----
    Source: official ``samples/unet/unet.py`` (``2 * diff / (|x| + |x_r|).mean()``), one global
    ratio of means; the official float division raises on 0/0, here 0/0 is 0 (spec §2).
    """
    a32, b32 = a.float(), b.float()
    num = (a32 - b32).abs().sum()
    den = (a32.abs() + b32.abs()).sum()
    # 0/0 := 0 only for an exact zero denominator: NaN inputs stay NaN (a policy refreshes then)
    return torch.where(den == 0, 0.0, 2 * num / torch.where(den == 0, 1.0, den))


def smape(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    r"""Symmetric mean absolute percentage error between two frames, ReFrame's refresh score.

    $$ s(a, b) = \frac{2\,\mathrm{mean}|a-b|}{\mathrm{mean}(|a|+|b|)} \in [0, 2] $$

    One global ratio of means (not a mean of per-pixel ratios), computed on the tensors' device
    without a host sync; $0/0 := 0$.

    Parameters
    ----------
    a, b : Tensor, any shape (the same), floating point
        Two frames or trigger buffers (e.g. the current input and the input at the last refresh).

    Returns
    -------
    Tensor, shape [], float32
        The score, on the inputs' device.

    Raises
    ------
    TypeError
        If `a` or `b` is not a floating-point tensor.
    ValueError
        If shapes differ or a tensor is empty.

    Notes
    -----
    Source: official ``samples/unet/unet.py`` and ``samples/FE/inference.py``
    (``diff = |x - x_r|.mean(); smape = 2 * diff / (|x| + |x_r|).mean()``); 0/0 is 0 here where the
    official float division raises (spec §2). On CUDA with the ``[triton]`` extra a fused Triton
    reduction computes both sums in one pass (``REFRAME_SMAPE_BACKEND=torch|triton`` overrides).

    Examples
    --------
    >>> import torch
    >>> float(smape(torch.ones(4), torch.full((4,), 3.0)))
    1.0
    """
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise TypeError(f"`{name}` must be a floating-point torch.Tensor, got {_kind(t)}")
        if t.numel() == 0:
            raise ValueError(f"`{name}` must not be empty")
    if a.shape != b.shape:
        raise ValueError(
            f"`a` and `b` must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}"
        )
    backend = os.environ.get(_SMAPE_ENV, "auto")
    if backend == "triton" or (backend == "auto" and a.is_cuda and _triton_available()):
        from .kernels.smape_triton import triton_smape

        return triton_smape(a, b)
    return naive_smape(a, b)


def _kind(t) -> str:
    return f"dtype {t.dtype}" if isinstance(t, torch.Tensor) else type(t).__name__


def _triton_available() -> bool:
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def _images(x, name: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(x).__name__}")
    check_tensor(x, name, ndim=(3, 4))
    if not x.is_floating_point():
        raise TypeError(f"`{name}` must be floating point, got {x.dtype}")
    return x if x.ndim == 4 else x[None]


def psnr(a: torch.Tensor, b: torch.Tensor, *, data_range: float = 1.0) -> float:
    r"""Peak signal-to-noise ratio in dB of two images clamped to ``[0, data_range]``.

    $$ \mathrm{PSNR} = 10 \log_{10}
       \frac{R^2}{\mathrm{mean}\,(\mathrm{clamp}(a) - \mathrm{clamp}(b))^2} $$

    Parameters
    ----------
    a, b : Tensor, shape [N, C, H, W] or [C, H, W], floating point
        The images (same shape).
    data_range : float, default=1.0
        $R$, the peak value (spec §2: range 1, clamped).

    Returns
    -------
    float
        PSNR in dB; ``inf`` for identical images.

    Raises
    ------
    TypeError, ValueError
        For non-tensors, wrong ranks, NaN/inf, mismatched shapes or a non-positive range.

    Notes
    -----
    Source: the usual definition; spec §2 (range 1, clamped) as the official FE/SS evaluation.
    """
    a4, b4 = _images(a, "a"), _images(b, "b")
    if a4.shape != b4.shape:
        raise ValueError(
            f"`a` and `b` must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}"
        )
    check_scalar(data_range, "data_range", low=0, inclusive="neither")
    mse = ((a4.double().clamp(0, data_range) - b4.double().clamp(0, data_range)) ** 2).mean()
    mse_f = float(mse)
    return math.inf if mse_f == 0 else 10 * math.log10(data_range**2 / mse_f)


def sequence_psnr(mses) -> float:
    r"""Sequence PSNR from per-frame MSEs (range 1): $10\log_{10}(1/\overline{\mathrm{MSE}})$.

    $\overline{\mathrm{MSE}} = \mathrm{mean}_t\,\mathrm{MSE}_t$.

    Refresh frames, identical to the uncached output, contribute MSE 0 (spec §2).

    Parameters
    ----------
    mses : sequence of float
        Per-frame mean squared errors, >= 0, at least one.

    Returns
    -------
    float
        dB; ``inf`` when every MSE is 0.

    Raises
    ------
    ValueError
        If `mses` is empty, negative or not finite.
    """
    arr = np.asarray(list(mses), dtype=np.float64)
    if arr.size == 0:
        raise ValueError("`mses` must not be empty")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError("`mses` must be finite and >= 0")
    mean = float(arr.mean())
    return math.inf if mean == 0 else 10 * math.log10(1 / mean)


def _to_hwc(x: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray(x.detach().float().clamp(0, 1).permute(1, 2, 0).cpu().numpy())


def flip(a: torch.Tensor, b: torch.Tensor) -> float:
    r"""Mean LDR ꟻLIP error of `b` against the reference `a`, by NVIDIA's ``flip-evaluator``.

    Parameters
    ----------
    a : Tensor, shape [N, 3, H, W] or [3, H, W], floating point in [0, 1]
        Reference images (e.g. the uncached output), sRGB.
    b : Tensor, same shape as `a`
        Test images (e.g. the cached output).

    Returns
    -------
    float
        ꟻLIP's mean error, averaged over the N images; 0 for identical images.

    Raises
    ------
    ImportError
        Without the ``[flip]`` extra (``pip install 'reframe-cache[flip]'``).
    TypeError, ValueError
        For non-tensors, wrong ranks, channels other than 3, NaN/inf or mismatched shapes.

    Notes
    -----
    Source: official ``samples/flip/compare_images.py``
    (``flip_evaluator.evaluate(baseline, reframe, "LDR")``, mean error); flip-evaluator's defaults
    (67 pixels per degree: 0.7 m, 0.7 m monitor width, 3840 px). Images are clamped to [0, 1] and
    passed as HWC float32 arrays (LDR, sRGB), which is how flip-evaluator reads 8-bit PNGs.
    """
    a4, b4 = _images(a, "a"), _images(b, "b")
    if a4.shape != b4.shape:
        raise ValueError(
            f"`a` and `b` must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}"
        )
    if a4.shape[1] != 3:
        raise ValueError(f"`a` must have 3 (RGB) channels, got {a4.shape[1]}")
    try:
        import flip_evaluator
    except ImportError as err:  # pragma: no cover - exercised without the extra
        raise ImportError("flip() needs flip-evaluator: pip install 'reframe-cache[flip]'") from err
    errors = []
    for ref, test in zip(a4, b4, strict=True):
        _, mean, _ = flip_evaluator.evaluate(_to_hwc(ref), _to_hwc(test), "LDR")
        errors.append(float(mean))
    return float(np.mean(errors))
