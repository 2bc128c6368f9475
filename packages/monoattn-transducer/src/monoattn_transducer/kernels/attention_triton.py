"""Expected monotonic attention as a fused Triton kernel: one program per query row.

Same maths as :mod:`monoattn_transducer.kernels.attention_torch` (MILk expected attention,
fairseq ``expected_soft_attention``): the row max, the exponentials, the prefix sum, the ratio
and the suffix sum (a reverse scan) stay in registers; one read of each input row, one write of
the weights.
The backward recomputes the row with the torch reference under autograd (no separate kernel).

This module belongs to the ``[triton]`` extra (card ``optional-modules``).
"""

from typing import Any

import torch

from icml25_core.extras import requires_extra

from .attention_torch import expected_attention_torch

with requires_extra("monoattn-transducer", "triton"):
    import triton
    import triton.language as tl

__all__ = ["expected_attention_triton"]


@triton.jit
def _ema_kernel(P, E, M, OUT, T, eps, HAS_MASK: tl.constexpr, BLOCK_T: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    j = tl.arange(0, BLOCK_T)
    inb = j < T
    base = row * T
    e = tl.load(E + base + j, mask=inb, other=float("-inf")).to(tl.float32)
    p = tl.load(P + base + j, mask=inb, other=0.0).to(tl.float32)
    valid = inb
    if HAS_MASK:
        pad = tl.load(M + base + j, mask=inb, other=1)
        valid = inb & (pad == 0)
    e = tl.where(valid, e, float("-inf"))
    m = tl.max(e, axis=0)
    m = tl.where(m == float("-inf"), 0.0, m)
    ex = tl.where(valid, tl.exp(e - m) + eps, 0.0)
    p = tl.where(valid, p, 0.0)
    csum = tl.cumsum(ex, axis=0)
    ratio = p / tl.maximum(csum, 1.1754943508222875e-38)
    # Suffix sum as a true reverse scan (as the torch reference's flip-cumsum-flip): `ratio`
    # spans ~1e38 (early frames whose prefix sum underflows) down to ~1e-8, so the shortcut
    # `total - cumsum(ratio) + ratio` cancels catastrophically in fp32 (negative weights,
    # rows summing to 2 for energies of magnitude ~10).
    rev = tl.cumsum(ratio, axis=0, reverse=True)
    tl.store(OUT + base + j, ex * rev, mask=inb)


class _EMATriton(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, p: torch.Tensor, e: torch.Tensor, mask: Any, eps: float):
        N, R, T = e.shape
        pc = p.to(torch.float32).contiguous()
        ec = e.to(torch.float32).contiguous()
        out = torch.empty_like(ec)
        has_mask = mask is not None
        mk = mask.to(torch.int8).contiguous() if has_mask else ec
        block = max(triton.next_power_of_2(T), 16)
        _ema_kernel[(N * R,)](pc, ec, mk, out, T, eps, HAS_MASK=has_mask, BLOCK_T=block)
        ctx.save_for_backward(p, e)
        ctx.mask, ctx.eps = mask, eps
        return out

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor):
        p, e = ctx.saved_tensors
        with torch.enable_grad():
            pp = p.detach().requires_grad_(p.requires_grad)
            ee = e.detach().requires_grad_(e.requires_grad)
            w = expected_attention_torch(pp, ee, ctx.mask, ctx.eps)
            inputs = [x for x in (pp, ee) if x.requires_grad]
            grads = iter(torch.autograd.grad(w, inputs, g)) if inputs else iter(())
        gp = next(grads) if p.requires_grad else None
        ge = next(grads) if e.requires_grad else None
        return gp, ge, None, None


def expected_attention_triton(
    alignment: torch.Tensor, energy: torch.Tensor, mask: torch.Tensor | None, eps: float
) -> torch.Tensor:
    """Triton twin of :func:`~monoattn_transducer.kernels.attention_torch.expected_attention_torch`
    (fp32 compute and output)."""
    out = _EMATriton.apply(alignment, energy, mask, eps)
    assert isinstance(out, torch.Tensor)
    return out
