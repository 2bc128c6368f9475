"""QuEST quantizers and the baselines it is compared with (QuEST §3-4; official
``src/optim/quantization``): a functional op and ``nn.Module`` s mapping (..., K) -> (..., K).
"""

import math

import torch
from torch import nn

from ._validation import (
    check_bits,
    check_block,
    check_bool,
    check_float_tensor,
    check_positive,
)
from .estimator import TrustSTE
from .grid import GRIDS, optimal_gaussian_scale
from .kernels.quest import pick_backend, quest_pack, unpack_mask

#: The paper's 1-bit clip factors c (mask 1[|x_h| <= c·α_1·σ]) with and without the Hadamard.
CLIP_1BIT_HT = 1.30
CLIP_1BIT_NO_HT = 1.25


def _check_spec(bits, block, trust, clip_scale, grid, sparse48):
    bits = check_bits(bits)
    block = check_block(block)
    trust = check_positive(trust, "trust", allow_inf=True)
    if clip_scale is not None:
        clip_scale = check_positive(clip_scale, "clip_scale")
    if grid not in GRIDS:
        raise ValueError(f"`grid` must be one of {GRIDS}, got {grid!r}")
    if grid == "fp4" and bits != 4:
        raise ValueError(f"`bits` must be 4 for grid='fp4', got {bits}")
    if sparse48 and block % 8:
        raise ValueError(f"`sparse48` needs a block that is a multiple of 8, got block={block}")
    return bits, block, trust, clip_scale


def _check_k(x, block, rotate, sparse48, name="x"):
    k = x.shape[-1]
    if k == 0:
        raise ValueError(f"the last dimension of `{name}` (K) must be at least 1, got K=0")
    if rotate and k % block:
        raise ValueError(
            f"the last dimension of `{name}` (K={k}) must be a multiple of block={block}"
        )
    if sparse48 and k % 8:
        raise ValueError(f"`sparse48` needs K to be a multiple of 8, got K={k}")


def _apply(x, spec):
    """Run :class:`TrustSTE` on the 2-D view of `x`; returns (x̂, bool mask, step) shaped like x."""
    shape = x.shape
    x2 = x.reshape(-1, shape[-1])
    if x2.shape[0] == 0:
        empty_step = x.new_empty((*shape[:-1], 1), dtype=torch.float32)
        return x.new_empty(shape), torch.ones(shape, dtype=torch.bool, device=x.device), empty_step
    backend = pick_backend(x2, block=spec["block"], grid=spec["grid"], sparse48=spec["sparse48"])
    if spec["group"] is not None:  # σ over K-shards on several ranks: the reference
        backend = "torch"
    xhat, mask, step = TrustSTE.apply(x2, spec, backend)
    if mask.dtype == torch.uint8:
        mask = unpack_mask(mask, shape[-1])
    return xhat.reshape(shape), mask.reshape(shape), step.reshape(*shape[:-1], 1)


def quest_quantize(
    x,
    bits=4,
    *,
    block=128,
    trust=1.0,
    clip_scale=None,
    rotate=True,
    half=True,
    grid="int",
):
    r"""QuEST fake quantization of the rows of `x` with the trust estimator (QuEST §3).

    ``x_h = x·blockdiag(H)``, ``σ = RMS(x_h)``, ``Δ = 2(α_b σ + 1e-8)/(2**b - 1)``,
    ``x̂ = (clamp(floor(x_h/Δ), -2**(b-1), 2**(b-1)-1) + 1/2)·Δ``; backward
    ``∂L/∂x = ((∂L/∂x̂) ⊙ M)·Hᵀ`` with ``M = 1[|x̂ - x_h| <= s·Δ/2]``.

    $$
    \hat{x} = \Delta \left( \mathrm{clamp}\!\left( \left\lfloor \frac{x_h}{\Delta} \right\rfloor,
        -2^{b-1},\, 2^{b-1} - 1 \right) + \tfrac{1}{2} \right)
    $$

    $$
    \frac{\partial L}{\partial x} =
        \left( \frac{\partial L}{\partial \hat{x}} \odot
        \mathbf{1}\!\left[ |\hat{x} - x_h| \le s \tfrac{\Delta}{2} \right] \right) H^{\top}
    $$

    Parameters
    ----------
    x : Tensor of shape (..., K), floating (fp16, bf16, fp32, fp64)
        Rows to quantize (activation tokens, or the rows of a weight (N, K)).
    bits : int, default=4
        Bit-width, 1..8.
    block : int, default=128
        Hadamard block (power of 2; K must be a multiple of it); the paper's 128.
    trust : float, default=1.0
        Trust factor s in units of Δ/2 (official ``trust = α_b/(2**b-1)`` in σ units); ``inf``
        gives the straight-through estimator.
    clip_scale : float, optional
        Clip mode instead of trust: ``M = 1[|x_h| <= c·α_b·σ]`` (paper: 1.30 at 1 bit with HT).
        None means trust mode at every bit-width, 1 bit included: unlike
        :class:`QuESTQuantizer` and :class:`QuESTConfig`, this low-level op does not switch to
        the paper's 1-bit clip mode by itself (pass ``clip_scale=1.30`` for that).
    rotate : bool, default=True
        Apply the Hadamard rotation (False: the paper's "no-HT" ablation).
    half : bool, default=True
        Return x̂ in the rotated basis ("Half" Hadamard: both GEMM operands stay rotated);
        False rotates it back.
    grid : {"int", "fp4"}, default="int"
        MSE-optimal uniform grid, or FP4 ``±{0,.5,1,1.5,2,3,4,6}·0.48707976σ`` (bits must be 4).

    Returns
    -------
    x_hat : Tensor of shape (..., K), dtype of x
        Finite for finite `x`: values beyond the dtype's range saturate at its largest finite
        value (fp16: the Hadamard can grow an entry ``sqrt(block)`` times).
    mask : Tensor of shape (..., K), bool
        Where the gradient is trusted.
    step : Tensor of shape (..., 1), float32 (float64 for float64 input)
        Δ (the FP4 unit for ``grid="fp4"``), saturated likewise.

    Notes
    -----
    σ is computed on each row divided by a power of two near its largest magnitude (LAPACK
    ``xNRM2`` scaling), so ``x_h²`` never overflows (it did for fp32 rows above ~1e18); the
    scaling is exact, so the result is bit for bit that of the formulas above wherever they do
    not overflow, and ``Q(2**k·x) = 2**k·Q(x)`` once the 1e-8 is negligible.

    Raises
    ------
    TypeError
        If `x` is not a floating tensor (integer input included).
        If `rotate`/`half` is not a bool.
    ValueError
        Non-finite `x`; `bits` not an int in 1..8; `block` not a power of 2 (at most 16384);
        K = 0 or not a multiple of `block`; `trust`/`clip_scale` not positive; an unknown `grid`.
    """
    x = check_float_tensor(x, "x")
    bits, block, trust, clip_scale = _check_spec(bits, block, trust, clip_scale, grid, False)
    rotate, half = check_bool(rotate, "rotate"), check_bool(half, "half")
    _check_k(x, block, rotate, False)
    spec = _spec(bits, block, trust, clip_scale, rotate, half, grid, False)
    return _apply(x, spec)


def _spec(bits, block, trust, clip_scale, rotate, half, grid, sparse48, group=None):
    alpha = optimal_gaussian_scale(bits)
    return dict(
        bits=bits, block=block, trust=trust, clip_scale=clip_scale, rotate=rotate, half=half,
        grid=grid, sparse48=sparse48, alpha=alpha, group=group,
    )  # fmt: skip


def quantize_codes(x, bits=4, *, block=128, rotate=True):
    """Integer codes of QuEST's forward (the int4 inference path, gemm-quest layout).

    Parameters
    ----------
    x : Tensor of shape (..., K), floating
    bits : int, default=4
        1..8.
    block : int, default=128
        Hadamard block (power of 2 dividing K).
    rotate : bool, default=True

    Returns
    -------
    codes : Tensor of shape (..., K), int8, in ``[-2**(b-1), 2**(b-1)-1]``
    step : Tensor of shape (..., 1), float32 (float64 for float64 input)
        With ``(codes + 0.5) * step == x_hat`` of :func:`quest_quantize` bit for bit.

    Raises
    ------
    TypeError, ValueError
        As :func:`quest_quantize`.
    """
    x = check_float_tensor(x, "x")
    bits = check_bits(bits)
    block = check_block(block)
    rotate = check_bool(rotate, "rotate")
    _check_k(x, block, rotate, False)
    codes, step, _ = _codes(x, bits, block, rotate)
    return codes, step


def _codes(x, bits, block, rotate):
    """Unchecked codes, step and int32 row sums of (..., K) input."""
    shape = x.shape
    x2 = x.reshape(-1, shape[-1])
    backend = pick_backend(x2, block=block, grid="int", sparse48=False)
    if x2.shape[0] == 0:
        backend = "torch"
    codes, step, rowsum = quest_pack(
        x2, bits, block=block, rotate=rotate, backend=backend, alpha=optimal_gaussian_scale(bits)
    )
    return codes.reshape(shape), step.reshape(*shape[:-1], 1), rowsum.reshape(shape[:-1])


class QuESTQuantizer(nn.Module):
    """QuEST fake quantizer with the trust estimator (official ``HalfHadamardTrustQuantizer``).

    Parameters
    ----------
    bits : int, default=4
        1..8.
    block : int, default=128
        Hadamard block, a power of 2.
    trust : float, default=1.0
        Trust factor s (units of Δ/2); ``inf`` = STE.
    clip_scale : float, optional
        Clip-mode factor c. At ``bits=1`` the default is the paper's 1.30 (1.25 without HT).
    half : bool, default=True
        Keep x̂ in the rotated basis.
    grid : {"int", "fp4"}, default="int"
    sparse48 : bool, default=False
        4:8 weights: keep the 2 largest-L2 of each 4 adjacent pairs of x̂ (official
        ``HadamardFourEightTrustQuantizer``; 2.5 bits per parameter).
    rotate : bool, default=True
        False gives the no-HT ``TrustQuantizer``.

    Raises
    ------
    TypeError
        In forward, for non-floating input.
    ValueError
        For bad arguments (see :func:`quest_quantize`), or K not a multiple of `block`.
    """

    mask_rate: torch.Tensor  # registered buffer: share of entries clipped/masked, last call

    def __init__(
        self,
        bits=4,
        block=128,
        trust=1.0,
        clip_scale=None,
        half=True,
        grid="int",
        sparse48=False,
        rotate=True,
    ):
        super().__init__()
        if clip_scale is None and isinstance(bits, int) and bits == 1:
            clip_scale = CLIP_1BIT_HT if rotate else CLIP_1BIT_NO_HT
        bits, block, trust, clip_scale = _check_spec(bits, block, trust, clip_scale, grid, sparse48)
        self.bits, self.block, self.trust, self.clip_scale = bits, block, trust, clip_scale
        self.grid, self.sparse48 = grid, check_bool(sparse48, "sparse48")
        self.rotate = check_bool(rotate, "rotate")
        # `half` (the paper's name) shadows nn.Module.half(): quantizer.half() is not callable
        self.half = check_bool(half, "half")  # type: ignore[assignment,method-assign]
        self.register_buffer("mask_rate", torch.tensor(float("nan")), persistent=False)

    @property
    def rotated_output(self) -> bool:
        """Whether forward returns x̂ in the Hadamard basis (a "half" quantizer with HT)."""
        return bool(self.rotate and self.half)

    def forward(self, x, group=None):
        """x (..., K) -> (..., K), dtype preserved (x̂ beyond the dtype's range saturates at its
        largest finite value). The fraction of trusted entries of the last forward is kept in the
        non-persistent buffer ``mask_rate``.

        `group` (a ``torch.distributed`` process group, default None) says that each row of `x`
        is split along K over the group's ranks in equal shards of whole Hadamard blocks
        (row-wise tensor parallelism, :class:`~quest_qat.parallel.QuESTRowwiseParallel`): the
        rotation stays per shard and σ is the RMS of the whole row (an ``all_reduce`` of the
        per-rank sums of squares), so each rank gets its shard of the unsharded x̂.

        Raises
        ------
        TypeError
            For non-floating input.
        ValueError
            If K is not a multiple of the Hadamard block (or of 8 with ``sparse48``).
        """
        x = check_float_tensor(x, "x", finite=False)
        _check_k(x, self.block, self.rotate, self.sparse48)
        spec = _spec(
            self.bits, self.block, self.trust, self.clip_scale, self.rotate, self.half, self.grid,
            self.sparse48, group,
        )  # fmt: skip
        xhat, mask, _ = _apply(x, spec)
        if mask.numel():
            self.mask_rate.copy_(mask.float().mean().detach())
        return xhat

    def extra_repr(self):
        mode = f"clip_scale={self.clip_scale}" if self.clip_scale else f"trust={self.trust}"
        return (
            f"bits={self.bits}, block={self.block}, {mode}, rotate={self.rotate}, "
            f"half={self.half}, grid={self.grid!r}, sparse48={self.sparse48}"
        )


class TrustQuantizer(QuESTQuantizer):
    """QuEST without the Hadamard rotation (official ``TrustQuantizer``, the "no-HT" ablation)."""

    def __init__(self, bits=4, trust=1.0, clip_scale=None, grid="int"):
        super().__init__(bits, 1, trust, clip_scale, True, grid, False, rotate=False)


class STEQuantizer(QuESTQuantizer):
    """The paper's STE baseline: the same α_b·RMS grid, no rotation, identity gradient
    (official ``STEQuantizer``)."""

    def __init__(self, bits=4):
        super().__init__(bits, 1, float("inf"), None, True, "int", False, rotate=False)
        self.clip_scale = None  # identity gradient at every bit-width, 1 bit included


class _AbsMaxRound(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bits):
        compute = torch.float64 if x.dtype == torch.float64 else torch.float32
        xc = x.to(compute)
        step = 2.0 * (xc.abs().amax(-1, keepdim=True) + 1e-8) / (2**bits - 1)
        q = torch.clamp(torch.floor(xc / step), -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        return ((q + 0.5) * step).to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class _PlainBasis:
    """Baselines quantize in the original basis: no Hadamard, nothing rotated."""

    rotate = rotated_output = sparse48 = False
    block = 1
    grid = "int"


class AbsMaxSTEQuantizer(_PlainBasis, nn.Module):
    """Per-row absmax mid-rise grid with the identity (straight-through) gradient: the outer
    levels sit at ``±max|x|`` (official ``STEQuantizer`` with absmax scaling, QuEST §4 baseline).

    Parameters
    ----------
    bits : int, default=4
        1..8.
    """

    def __init__(self, bits=4):
        super().__init__()
        self.bits = check_bits(bits)

    def forward(self, x):
        """x (..., K) -> (..., K), dtype preserved."""
        x = check_float_tensor(x, "x", finite=False)
        return _AbsMaxRound.apply(x, self.bits)

    def extra_repr(self):
        return f"bits={self.bits}"


def _round_pass(v):
    """floor(v + 1/2) forward, identity backward (LSQ's ``round_pass``, floor-based ties)."""
    return v + (torch.floor(v + 0.5) - v).detach()


def _grad_scale(v, scale):
    """Identity forward, gradient multiplied by `scale` (LSQ's ``grad_scale``)."""
    return v * scale + (v - v * scale).detach()


def _check_first_batch(x, what):
    """The data-driven init of LSQ/PACT needs a non-empty, finite first batch."""
    if x.numel() == 0:
        raise ValueError(f"`x` is empty: the first batch initialises the {what}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"`x` holds NaN or infinity: the first batch initialises the {what}")


class LSQQuantizer(_PlainBasis, nn.Module):
    """Learned step size quantization (Esser et al., ICLR 2020; QuEST §4 baseline).

    ``x̂ = floor(clamp(x/s, -Q_N, Q_P) + 1/2)·s`` with ``Q_N = 2**(b-1)``, ``Q_P = 2**(b-1) - 1``;
    the step gradient is scaled by ``g = 1/sqrt(numel·Q_P)``; the step is initialised on the first
    batch to ``2·mean|x|/sqrt(Q_P)`` unless `step_init` is given.

    Parameters
    ----------
    bits : int, default=4
        2..8 (1 bit leaves Q_P = 0).
    step_init : float, optional
        Initial step; otherwise data-driven on the first forward.

    Raises
    ------
    ValueError
        In forward, if the first batch (which sets the step) is empty or not finite.
    """

    initialized: torch.Tensor  # registered buffer (bool): the step was set from data

    def __init__(self, bits=4, step_init=None):
        super().__init__()
        self.bits = check_bits(bits, low=2)
        self.q_n, self.q_p = 2 ** (self.bits - 1), 2 ** (self.bits - 1) - 1
        init = 1.0 if step_init is None else check_positive(step_init, "step_init")
        self.step = nn.Parameter(torch.tensor(init))
        self.register_buffer("initialized", torch.tensor(step_init is not None))

    def forward(self, x):
        """x (..., K) -> (..., K). The ``initialized`` buffer is persistent, so a resumed run keeps
        its step (the official code re-initialises it).
        """
        x = check_float_tensor(x, "x", finite=False)
        if not bool(self.initialized):
            _check_first_batch(x, "step")
            with torch.no_grad():
                self.step.fill_(2.0 * x.abs().mean().item() / math.sqrt(self.q_p) + 1e-12)
                self.initialized.fill_(True)
        g = 1.0 / math.sqrt(x.numel() * self.q_p)
        s = _grad_scale(self.step, g)
        v = torch.clamp(x / s, -self.q_n, self.q_p)
        return _round_pass(v) * s

    def extra_repr(self):
        return f"bits={self.bits}"


class _PACTRound(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, clip, bits):
        step = 2.0 * clip / (2**bits - 1)
        q = torch.clamp(torch.floor(x / step), -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        ctx.save_for_backward(x, clip)
        return (q + 0.5) * step

    @staticmethod
    def backward(ctx, grad):
        x, clip = ctx.saved_tensors
        inside = x.abs() < clip
        grad_x = grad * inside
        grad_clip = (grad * torch.sign(x) * (~inside)).sum().reshape(clip.shape)
        return grad_x, grad_clip, None


class PACTQuantizer(_PlainBasis, nn.Module):
    """PACT (Choi et al., 2018) on QuEST's mid-rise grid over ``[-α, α]`` (QuEST §4 baseline).

    ``Δ = 2α/(2**b - 1)``, ``x̂ = (clamp(floor(x/Δ), -2**(b-1), 2**(b-1)-1) + 1/2)·Δ``;
    ``∂x̂/∂x = 1[|x| < α]``, ``∂x̂/∂α = sign(x)·1[|x| >= α]`` (the official code gives x no
    gradient; we follow PACT).

    Parameters
    ----------
    bits : int, default=4
        1..8.
    clip_init : float, optional
        Initial α; otherwise ``α_b·RMS(x)`` of the first batch.

    Raises
    ------
    ValueError
        In forward, if the first batch (which sets α) is empty or not finite.
    """

    initialized: torch.Tensor  # registered buffer (bool): the clip was set from data

    def __init__(self, bits=4, clip_init=None):
        super().__init__()
        self.bits = check_bits(bits)
        init = 1.0 if clip_init is None else check_positive(clip_init, "clip_init")
        self.clip = nn.Parameter(torch.tensor(init))
        self.register_buffer("initialized", torch.tensor(clip_init is not None))

    def forward(self, x):
        """x (..., K) -> (..., K). The Parameter ``clip`` holds α; ``initialized`` is persistent."""
        x = check_float_tensor(x, "x", finite=False)
        if not bool(self.initialized):
            _check_first_batch(x, "clip")
            with torch.no_grad():
                rms = x.float().square().mean().sqrt().item()
                self.clip.fill_(optimal_gaussian_scale(self.bits) * rms + 1e-8)
                self.initialized.fill_(True)
        return _PACTRound.apply(x, self.clip.to(x.dtype), self.bits)

    def extra_repr(self):
        return f"bits={self.bits}"
