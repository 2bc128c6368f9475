"""Plain PyTorch reference of the QuEST quantizer: the executable spec of the Triton kernels.

Follows the official ``HalfHadamardTrustQuantizer`` (IST-DASLab/QuEST) step by step, on 2-D
input ``(M, K)``:

1. rotate ``x_h = x · blockdiag(H_block, …)`` (skipped when ``rotate=False``);
2. ``σ = sqrt(mean(x_h²))`` per row, ``scale = α_b·σ + 1e-8``, ``Δ = 2·scale/(2**b - 1)``;
3. ``q = clamp(floor(x_h/Δ), -2**(b-1), 2**(b-1)-1)``, ``x̂ = (q + 1/2)·Δ``;
4. trust mask ``M = 1[|x̂ - x_h| ≤ s·Δ/2]`` (or clip mask ``M = 1[|x_h| ≤ c·α_b·σ]``).

Statistics run in float32 (float64 for float64 input) and carry no gradient. Every row is
first divided by a power of two ``r`` near its largest magnitude (:func:`row_scale`), the
scaling of LAPACK's ``xNRM2`` 2-norm: steps 1-4 run on ``x/r``, and ``x̂``, ``Δ`` are multiplied
back by ``r`` (on the CPU only where the unscaled σ overflows, see :func:`row_statistics`).
Dividing and multiplying by a power of two is exact, so the codes, ``x̂`` and ``Δ`` are bit for
bit those of the unscaled formulas wherever those do not overflow, while ``x_h²`` can no longer
overflow (fp32 rows above ~1e18 gave σ = inf, hence Δ = inf and x̂ = inf). Outputs beyond the
dtype's range saturate at its largest finite value (:func:`saturate`).
"""

import torch
import torch.distributed as dist

from ...grid import FP4_LEVELS, FP4_SCALE, optimal_gaussian_scale
from ...hadamard import _rotate

EPS = 1e-8


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float64 for float64 input, float32 otherwise."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def row_scale(x: torch.Tensor) -> torch.Tensor:
    """Per-row power of two ``r = 2**floor(log2 max|x|)`` of shape (M, 1), so that ``max|x/r|``
    lies in [1, 2) (``r = 1/2`` for a zero row). Dividing by it is exact (LAPACK ``xNRM2``
    scaling)."""
    low, high = torch.aminmax(x, dim=-1, keepdim=True)
    _, exponent = torch.frexp(torch.maximum(high, -low))
    return torch.ldexp(torch.ones_like(high), exponent - 1)


def rms(xh: torch.Tensor, group=None) -> torch.Tensor:
    """Per-row RMS ``sqrt(Σ x_h² / K)`` of shape (M, 1): no mean subtraction, no groups. With a
    process `group` the sum of squares runs over the K-shards of all its ranks (``all_reduce``)."""
    sumsq = xh.square().sum(dim=-1, keepdim=True)
    k = xh.shape[-1]
    if group is not None:
        dist.all_reduce(sumsq, group=group)
        k *= dist.get_world_size(group)
    return (sumsq / k).sqrt()


def row_statistics(x: torch.Tensor, block: int, rotate: bool, group=None):
    """``(x_h / r, σ / r, r)``: the rows of `x` in the compute dtype, rotated, and their RMS,
    both divided by the per-row power of two ``r`` of :func:`row_scale`, so that no square
    overflows. On the CPU the unscaled statistics are tried first (the finiteness check of the
    M sums costs no device sync) and kept when finite, with ``r`` None: the same bits, without
    the scaling's passes. A process `group` splits the rows along K over its ranks (row-wise
    tensor parallelism): ``r`` is then the largest over the ranks (``all_reduce`` MAX) and σ
    that of the whole rows."""
    xc = x.to(compute_dtype(x.dtype))
    if xc.device.type == "cpu" and group is None and not torch.compiler.is_compiling():
        xh = _rotate(xc, block) if rotate else xc
        sigma = rms(xh)
        if bool(torch.isfinite(sigma).all()):
            return xh, sigma, None
    r = row_scale(xc)
    if group is not None:
        dist.all_reduce(r, op=dist.ReduceOp.MAX, group=group)
    xs = xc / r
    xh = _rotate(xs, block) if rotate else xs
    return xh, rms(xh, group), r


def saturate(t: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
    """`t` cast to `dtype` (default: its own), values beyond the largest finite value of `dtype`
    clamped to it, so that finite values never round to ±inf (NaN stays NaN)."""
    dtype = t.dtype if dtype is None else dtype
    big = torch.finfo(dtype).max
    return t.clamp(-big, big).to(dtype)


def int_codes(xh: torch.Tensor, bits: int, sigma: torch.Tensor, eps) -> tuple:
    """Codes ``q`` (same float dtype as `xh`) and step ``Δ`` (M, 1) of the mid-rise int grid of
    rows with RMS `sigma`; `eps` is the 1e-8 of the official scale, in the units of `xh`."""
    scale = optimal_gaussian_scale(bits) * sigma + eps
    step = 2.0 * scale / (2**bits - 1)
    q = torch.clamp(torch.floor(xh / step), -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return q, step


def fp4_round(xh: torch.Tensor, sigma: torch.Tensor, eps) -> tuple:
    """Nearest FP4 level ``±{0,.5,1,1.5,2,3,4,6}·u`` with ``u = 0.48707976·σ + 1e-8``.

    Returns ``(x̂, u, levels)``: x̂ = levels·u, levels the chosen FP4 levels (grid units)."""
    unit = FP4_SCALE * sigma + eps
    mags = torch.tensor(FP4_LEVELS, dtype=xh.dtype, device=xh.device)
    levels = torch.cat([-mags.flip(0)[:-1], mags])  # 15 sorted levels
    y = xh / unit
    mids = (levels[1:] + levels[:-1]) / 2
    idx = torch.bucketize(y, mids)
    return levels[idx] * unit, unit, levels[idx]


def keep_48(values: torch.Tensor) -> torch.Tensor:
    """4:8 structure (official ``HadamardFourEightTrustQuantizer``): in each group of 8 columns
    (4 adjacent pairs) keep the 2 pairs of largest L2 norm; returns the bool keep-mask.

    Pass the rounded values in grid units (``q + ½`` on the int grid, the FP4 level on the FP4
    grid): x̂ is that times the row's step, so the ranking is the official one, but the squared
    pair norms are then exact small multiples of ¼ that do not depend on the step's rounding
    (row-wise tensor parallelism gets σ, hence Δ, to the last bit only). Ties, frequent on a
    coarse grid (e.g. codes (1, 2) and (2, 1)), go to the pair of lower index: the ranking key
    ``8·norm² + (3 - pair)`` is exact in float32/64 and has no ties, so the choice is
    deterministic and the same on every shard."""
    m, k = values.shape
    dtype = compute_dtype(values.dtype)
    pairs = values.to(dtype).reshape(m, k // 8, 4, 2).square().sum(-1)
    order = torch.arange(3, -1, -1, dtype=dtype, device=values.device)
    top = (8 * pairs + order).topk(2, dim=-1).indices
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
    group=None,
):
    """QuEST forward on (M, K): returns ``(x̂ in the rotated basis, mask bool, step (M,1))``.

    ``x̂`` and ``step`` are in the compute dtype (float32, or float64 for float64 input), both
    saturated at its largest finite value (only reached when the exact value is beyond it). For
    the FP4 grid ``step`` is the FP4 unit ``u`` and the trust radius is ``s·u`` (half the top
    gap). A process `group` splits the rows along K (see :func:`row_statistics`).
    """
    xh, sigma, r = row_statistics(x, block, rotate, group)
    eps = EPS if r is None else EPS / r
    if grid == "fp4":
        xhat, step, units = fp4_round(xh, sigma, eps)
        radius = trust * step
        alpha = 6.0 * FP4_SCALE
    else:
        q, step = int_codes(xh, bits, sigma, eps)
        units = q + 0.5
        xhat = units * step
        radius = trust * step / 2
        alpha = optimal_gaussian_scale(bits)
    if clip_scale is not None:
        mask = xh.abs() <= clip_scale * alpha * sigma
    else:
        mask = (xhat - xh).abs() <= radius
    if sparse48:  # chosen on the grid units, independent of Δ's last bit (see keep_48)
        xhat = xhat * keep_48(units)
    if r is None:  # finite σ: |x_h| and Δ are far below the dtype's maximum
        return xhat, mask, step
    return saturate(xhat * r), mask, saturate(step * r)


def quest_codes_naive(x: torch.Tensor, bits: int, *, block: int = 128, rotate: bool = True):
    """Integer codes of the forward: ``(codes int8 (M,K), step (M,1))`` with
    ``(codes + 0.5)·step == x̂`` bit for bit (the compute dtype of :func:`quest_fwd_naive`)."""
    xh, sigma, r = row_statistics(x, block, rotate)
    if r is None:
        q, step = int_codes(xh, bits, sigma, EPS)
        return q.to(torch.int8), step
    q, step = int_codes(xh, bits, sigma, EPS / r)
    return q.to(torch.int8), saturate(step * r)


def quest_bwd_naive(
    grad: torch.Tensor, mask: torch.Tensor, *, block: int = 128, rotate: bool = True
) -> torch.Tensor:
    """Trust estimator backward on (M, K): ``∂L/∂x = ((∂L/∂x̂) ⊙ M) · Hᵀ`` (H symmetric)."""
    g = grad * mask.to(grad.dtype)
    return _rotate(g, block) if rotate else g


def rotate_saturated(x: torch.Tensor, block: int) -> torch.Tensor:
    """``x · blockdiag(H_block, …)`` in x's dtype, computed in the compute dtype and saturated at
    the dtype's largest finite value (a rotation grows a row's entries up to ``sqrt(block)``
    times, beyond the fp16 range for entries above ~5.8e3 at block 128).

    Only finite rows saturate: a row holding ±inf or NaN keeps its unclamped rotation (±inf or
    NaN in its blocks), so non-finite input gives non-finite output downstream, as in
    ``nn.Linear`` (the clamp used to turn ±inf into the largest finite value)."""
    rotated = _rotate(x.to(compute_dtype(x.dtype)), block)
    saturated = saturate(rotated, x.dtype)
    if x.numel() == 0:
        return saturated
    finite_rows = torch.isfinite(x).all(dim=-1, keepdim=True)
    return torch.where(finite_rows, saturated, rotated.to(x.dtype))
