"""Plain PyTorch reference of the QuEST quantizer: the executable spec of the Triton kernels.

Follows the official ``HalfHadamardTrustQuantizer`` (IST-DASLab/QuEST) step by step, on 2-D
input ``(M, K)``:

1. rotate ``x_h = x · blockdiag(H_block, …)`` (skipped when ``rotate=False``);
2. ``σ = sqrt(mean(x_h²))`` per row, ``scale = α_b·σ + 1e-8``, ``Δ = 2·scale/(2**b - 1)``;
3. ``q = clamp(floor(x_h/Δ), -2**(b-1), 2**(b-1)-1)``, ``x̂ = (q + 1/2)·Δ``;
4. trust mask ``M = 1[|x̂ - x_h| ≤ s·Δ/2]`` (or clip mask ``M = 1[|x_h| ≤ c·α_b·σ]``).

Statistics run in float32 (float64 for float64 input) and carry no gradient.
"""

import torch

from ...grid import FP4_LEVELS, FP4_SCALE, optimal_gaussian_scale
from ...hadamard import _rotate

EPS = 1e-8


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float64 for float64 input, float32 otherwise."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def rms(xh: torch.Tensor) -> torch.Tensor:
    """Per-row RMS ``sqrt(mean(x_h²))`` of shape (M, 1): no mean subtraction, no groups."""
    return xh.square().mean(dim=-1, keepdim=True).sqrt()


def int_codes(xh: torch.Tensor, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Codes ``q`` (same float dtype as `xh`) and step ``Δ`` (M, 1) of the mid-rise int grid."""
    scale = optimal_gaussian_scale(bits) * rms(xh) + EPS
    step = 2.0 * scale / (2**bits - 1)
    q = torch.clamp(torch.floor(xh / step), -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return q, step


def fp4_round(xh: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Nearest FP4 level ``±{0,.5,1,1.5,2,3,4,6}·u`` with ``u = 0.48707976·σ + 1e-8``.

    Returns ``(x̂, u)``."""
    unit = FP4_SCALE * rms(xh) + EPS
    mags = torch.tensor(FP4_LEVELS, dtype=xh.dtype, device=xh.device)
    levels = torch.cat([-mags.flip(0)[:-1], mags])  # 15 sorted levels
    y = xh / unit
    mids = (levels[1:] + levels[:-1]) / 2
    idx = torch.bucketize(y, mids)
    return levels[idx] * unit, unit


def keep_48(xhat: torch.Tensor) -> torch.Tensor:
    """4:8 structure (official ``HadamardFourEightTrustQuantizer``): in each group of 8 columns
    (4 adjacent pairs) keep the 2 pairs of largest L2 norm; returns the bool keep-mask."""
    m, k = xhat.shape
    pairs = xhat.reshape(m, k // 8, 4, 2).square().sum(-1)
    top = pairs.topk(2, dim=-1).indices
    keep = torch.zeros_like(pairs, dtype=torch.bool).scatter_(-1, top, True)
    return keep.repeat_interleave(2, dim=-1).reshape(m, k)


def quest_fwd_naive(
    x: torch.Tensor,
    bits: int,
    *,
    block: int = 128,
    trust: float = 1.0,
    clip_scale: float | None = None,
    rotate: bool = True,
    grid: str = "int",
    sparse48: bool = False,
):
    """QuEST forward on (M, K): returns ``(x̂ in the rotated basis, mask bool, step (M,1))``.

    ``x̂`` and ``step`` are in the compute dtype (float32, or float64 for float64 input). For the
    FP4 grid ``step`` is the FP4 unit ``u`` and the trust radius is ``s·u`` (half the top gap).
    """
    xh = x.to(compute_dtype(x.dtype))
    if rotate:
        xh = _rotate(xh, block)
    if grid == "fp4":
        xhat, step = fp4_round(xh)
        radius = trust * step
        alpha = 6.0 * FP4_SCALE
    else:
        q, step = int_codes(xh, bits)
        xhat = (q + 0.5) * step
        radius = trust * step / 2
        alpha = optimal_gaussian_scale(bits)
    if clip_scale is not None:
        mask = xh.abs() <= clip_scale * alpha * rms(xh)
    else:
        mask = (xhat - xh).abs() <= radius
    if sparse48:
        xhat = xhat * keep_48(xhat)
    return xhat, mask, step


def quest_codes_naive(x: torch.Tensor, bits: int, *, block: int = 128, rotate: bool = True):
    """Integer codes of the forward: ``(codes int8 (M,K), step (M,1))`` with
    ``(codes + 0.5)·step == x̂`` bit for bit (the compute dtype of :func:`quest_fwd_naive`)."""
    xh = x.to(compute_dtype(x.dtype))
    if rotate:
        xh = _rotate(xh, block)
    q, step = int_codes(xh, bits)
    return q.to(torch.int8), step


def quest_bwd_naive(
    grad: torch.Tensor, mask: torch.Tensor, *, block: int = 128, rotate: bool = True
) -> torch.Tensor:
    """Trust estimator backward on (M, K): ``∂L/∂x = ((∂L/∂x̂) ⊙ M) · Hᵀ`` (H symmetric)."""
    g = grad * mask.to(grad.dtype)
    return _rotate(g, block) if rotate else g
