"""RNN-T forward-backward as Triton kernels: one program per utterance, anti-diagonal sweeps.

Same maths as :mod:`monoattn_transducer.kernels.lattice_torch` (Graves 2012; spec section 2).
The alpha kernel walks the ``T + U`` anti-diagonals ``d = t + u`` of one lattice, a block of
``u`` at a time in registers, reading the previous diagonal back from the alpha buffer after a
barrier. The beta kernel walks them in reverse and, as soon as ``beta(t, u)`` is known, writes the
two edge occupancies leaving ``(t, u)`` (the blank occupancy and the alignment posterior
``P(tau_{u+1} = t)``), so the posterior needs no third pass. Indices are int64
(pytorch/audio#3736). Works in the input dtype (fp32 or fp64).

This module belongs to the ``[triton]`` extra (card ``optional-modules``); it imports triton at
its top. Under ``TRITON_INTERPRET=1`` it runs on CPU tensors (the tests).
"""

import torch

from icml25_core.extras import requires_extra

from .lattice_torch import lattice_masks

with requires_extra("monoattn-transducer", "triton"):
    import triton
    import triton.language as tl

__all__ = ["lattice_triton"]


@triton.jit
def _lae(a, b):
    m = tl.maximum(a, b)
    safe = tl.where(m == float("-inf"), 0.0, m)
    total = tl.exp(a - safe) + tl.exp(b - safe)
    r = safe + tl.log(tl.where(m == float("-inf"), 1.0, total))
    return tl.where(m == float("-inf"), float("-inf"), r)


@triton.jit
def _alpha_kernel(
    BLANK, EMIT, ALPHA, LOGZ, TLEN, ULEN, T, U,
    BLOCK_U: tl.constexpr,
):  # fmt: skip
    b = tl.program_id(0).to(tl.int64)
    tb = tl.load(TLEN + b).to(tl.int64)
    ub = tl.load(ULEN + b).to(tl.int64)
    W = U + 1
    base_b = b * T * W
    base_e = b * T * U
    ninf = float("-inf")
    for d in range(0, tb + ub):
        for u0 in range(0, ub + 1, BLOCK_U):
            u = u0 + tl.arange(0, BLOCK_U).to(tl.int64)
            t = d - u
            ok = (u <= ub) & (t >= 0) & (t < tb)
            ok_b = ok & (t >= 1)
            a_prev = tl.load(ALPHA + base_b + (t - 1) * W + u, mask=ok_b, other=ninf)
            bl = tl.load(BLANK + base_b + (t - 1) * W + u, mask=ok_b, other=ninf)
            ok_e = ok & (u >= 1)
            a_left = tl.load(ALPHA + base_b + t * W + u - 1, mask=ok_e, other=ninf)
            em = tl.load(EMIT + base_e + t * U + u - 1, mask=ok_e, other=ninf)
            val = _lae(a_prev + bl, a_left + em)
            val = tl.where((t == 0) & (u == 0), 0.0, val)
            tl.store(ALPHA + base_b + t * W + u, val, mask=ok)
        tl.debug_barrier()
    a_end = tl.load(ALPHA + base_b + (tb - 1) * W + ub)
    b_end = tl.load(BLANK + base_b + (tb - 1) * W + ub)
    tl.store(LOGZ + b, a_end + b_end)


@triton.jit
def _beta_kernel(
    BLANK, EMIT, ALPHA, BETA, LOGZ, PBLANK, PEMIT, TLEN, ULEN, T, U,
    BLOCK_U: tl.constexpr,
):  # fmt: skip
    b = tl.program_id(0).to(tl.int64)
    tb = tl.load(TLEN + b).to(tl.int64)
    ub = tl.load(ULEN + b).to(tl.int64)
    lz = tl.load(LOGZ + b)
    W = U + 1
    base_b = b * T * W
    base_e = b * T * U
    ninf = float("-inf")
    for i in range(0, tb + ub):
        d = tb + ub - 1 - i
        for u0 in range(0, ub + 1, BLOCK_U):
            u = u0 + tl.arange(0, BLOCK_U).to(tl.int64)
            t = d - u
            ok = (u <= ub) & (t >= 0) & (t < tb)
            is_end = (t == tb - 1) & (u == ub)
            ok_b = ok & (t + 1 < tb)
            b_down = tl.load(BETA + base_b + (t + 1) * W + u, mask=ok_b, other=ninf)
            b_down = tl.where(is_end, 0.0, b_down)
            bl = tl.load(BLANK + base_b + t * W + u, mask=ok, other=ninf)
            bl = tl.where(ok_b | is_end, bl, ninf)
            ok_e = ok & (u < ub)
            b_right = tl.load(BETA + base_b + t * W + u + 1, mask=ok_e, other=ninf)
            em = tl.load(EMIT + base_e + t * U + u, mask=ok_e, other=ninf)
            val = _lae(b_down + bl, b_right + em)
            tl.store(BETA + base_b + t * W + u, val, mask=ok)
            a = tl.load(ALPHA + base_b + t * W + u, mask=ok, other=ninf)
            pb = tl.exp(a + bl + b_down - lz)
            pb = tl.where(ok_b | is_end, pb, 0.0)
            tl.store(PBLANK + base_b + t * W + u, pb, mask=ok)
            pe = tl.exp(a + em + b_right - lz)
            pe = tl.where(ok_e, pe, 0.0)
            tl.store(PEMIT + base_e + t * U + u, pe, mask=ok_e)
        tl.debug_barrier()


def lattice_triton(
    blank_lp: torch.Tensor,
    emit_lp: torch.Tensor,
    t_len: torch.Tensor,
    u_len: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Triton twin of :func:`~monoattn_transducer.kernels.lattice_torch.lattice_torch`.

    Same arguments and returns (``-inf`` alpha/beta and 0 occupancies outside the lattice).
    """
    B, T, W = blank_lp.shape
    U = W - 1
    blank_lp = blank_lp.contiguous()
    emit_lp = emit_lp.contiguous()
    ninf = float("-inf")
    alpha = torch.full_like(blank_lp, ninf)
    beta = torch.full_like(blank_lp, ninf)
    p_blank = torch.zeros_like(blank_lp)
    p_emit = torch.zeros_like(emit_lp)
    log_z = blank_lp.new_empty(B)
    t_len = t_len.to(torch.int64).contiguous()
    u_len = u_len.to(torch.int64).contiguous()
    block = min(max(triton.next_power_of_2(W), 16), 256)
    _alpha_kernel[(B,)](blank_lp, emit_lp, alpha, log_z, t_len, u_len, T, U, BLOCK_U=block)
    _beta_kernel[(B,)](
        blank_lp, emit_lp, alpha, beta, log_z, p_blank, p_emit, t_len, u_len, T, U, BLOCK_U=block
    )
    mblank, memit = lattice_masks(T, U, t_len, u_len)
    return log_z, alpha, beta, p_blank.masked_fill(~mblank, 0.0), p_emit.masked_fill(~memit, 0.0)
