"""The trust gradient estimator (QuEST §3.2; official ``HalfHadamardTrustQuantizer.forward``).

Forward returns the quantized ``x̂``; backward passes the gradient only where the trust mask is
set and rotates it back: ``∂L/∂x = ((∂L/∂x̂) ⊙ M) · Hᵀ``. The scale σ carries no gradient, and a
trust factor ``s = ∞`` gives the plain straight-through estimator. Only the mask is saved for
backward (a bool tensor in the reference, a 1-bit-per-entry bitmap in Triton), never ``x_h``.
"""

import torch

from .hadamard import _rotate
from .kernels.quest import quest_bwd, quest_fwd
from .kernels.quest.naive import compute_dtype, saturate


class TrustSTE(torch.autograd.Function):
    """``x̂ = Q(x·H)`` (times ``Hᵀ`` unless `half`) with the trust-masked gradient.

    Inputs: ``x`` (M, K) floating; ``spec``, a dict with keys ``bits, block, trust, clip_scale,
    rotate, half, grid, sparse48, alpha`` and optionally ``group`` (a process group over which
    the rows are split along K: row-wise tensor parallelism); ``backend`` "torch" or "triton".
    Outputs: ``x̂`` (M, K) in x's dtype (saturated at its largest finite value, so finite input
    gives finite output), the mask (bool (M, K) or uint8 bitmap (M, K/8); not
    differentiable) and the step (M, 1) (not differentiable).
    """

    @staticmethod
    def forward(ctx, x, spec, backend):
        """Quantize `x` (M, K); returns ``(x̂, mask, step)`` as in the class docstring."""
        xhat, mask, step, packed = quest_fwd(
            x,
            spec["bits"],
            block=spec["block"],
            trust=spec["trust"],
            clip_scale=spec["clip_scale"],
            rotate=spec["rotate"],
            grid=spec["grid"],
            sparse48=spec["sparse48"],
            backend=backend,
            alpha=spec["alpha"],
            group=spec.get("group"),
        )
        if spec["rotate"] and not spec["half"]:
            xhat = _rotate(xhat.to(compute_dtype(x.dtype)), spec["block"])
        if xhat.dtype != x.dtype:  # x̂ beyond the range of fp16 (or bf16) saturates
            xhat = saturate(xhat, x.dtype)
        ctx.save_for_backward(mask)
        ctx.spec, ctx.packed, ctx.dtype = spec, packed, x.dtype
        ctx.mark_non_differentiable(mask, step)
        return xhat, mask, step

    @staticmethod
    def backward(ctx, grad, _grad_mask, _grad_step):
        """The trust estimator's gradient: `grad` (M, K) masked where the forward did not trust
        ``x``, rotated back with ``H``; no gradient for ``spec`` and ``backend``."""
        (mask,) = ctx.saved_tensors
        spec = ctx.spec
        if spec["rotate"] and not spec["half"]:
            grad = _rotate(grad, spec["block"])
        out = quest_bwd(grad, mask, block=spec["block"], rotate=spec["rotate"], packed=ctx.packed)
        return out.to(ctx.dtype), None, None
