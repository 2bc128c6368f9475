"""Fused Triton FPT: one program per block of neurons, time in blocks of 32 steps.

Axes: T time steps, N neurons; BT steps per time block, BN neurons per program, i = t − t0.

Forward: each program walks the time blocks in order; in a block it builds the Λ_B and A_B tiles
in registers, gets ``C = Λ_B x_B + λ^{i+1} C_{t0−1}`` with one ``tl.dot``, then runs the K
evaluations in registers (``tl.dot(A_B, s)`` plus the decayed carry ``γ λ^i D^k_{t0−1}``).
Backward: the adjoint, walking the time blocks in reverse with one reverse carry per evaluation
(``E_t = Σ_{t'≥t} λ^{t'−t} g_{t'}``) and one for ``Λᵀ g_C``. The forward saves the K
pre-activations ``h^k`` for the backward (K·T·N floats) instead of recomputing them.
Maths as :mod:`fpt_snn.kernels.fpt_chunked` (Feng et al., ICML 2025, Sec. 4); fp32 throughout,
``tl.dot`` with IEEE precision (no TF32).

This module belongs to the ``[triton]`` extra (card ``optional-modules``): it imports triton at
its top and decorates the kernels on import, when Triton reads ``TRITON_INTERPRET``. The
dispatcher (:func:`fpt_snn.kernels.run_triton`) imports it when the Triton method first runs,
after :func:`~fpt_snn.kernels.resolve_method` has chosen it.
"""

import math

import torch

from icml25_core.extras import requires_extra

with requires_extra("fpt-snn", "triton"):
    import triton
    import triton.language as tl

__all__ = ["fpt_triton"]

BLOCK_T = 32
BLOCK_N = 32


@triton.jit
def _fpt_fwd_kernel(
    X, S, H, D, ALPHA,
    T, N, lam, log2_lam, gamma, theta,
    K: tl.constexpr, HEAVISIDE: tl.constexpr, STRICT: tl.constexpr,
    BT: tl.constexpr, BN: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    cols = pid * BN + tl.arange(0, BN)
    cmask = cols < N
    i = tl.arange(0, BT)
    diff = (i[:, None] - i[None, :]).to(tl.float32)
    lower = diff >= 0
    lam_b = tl.where(lower, tl.exp2(tl.where(lower, diff, 0.0) * log2_lam), 0.0)
    reset_b = (lam_b - tl.where(diff == 0, 1.0, 0.0)) * (gamma / lam)  # A_B, in-block
    fi = i.to(tl.float32)
    decay_c = tl.exp2((fi + 1.0) * log2_lam)
    decay_d = gamma * tl.exp2(fi * log2_lam)
    last_row = tl.exp2((BT - 1.0 - fi) * log2_lam)
    lam_bt = tl.exp2(BT * log2_lam)
    c_carry = tl.zeros([BN], dtype=tl.float32)
    for t0 in range(0, T, BT):
        rows = t0 + i
        mask = (rows[:, None] < T) & cmask[None, :]
        offs = rows[:, None] * N + cols[None, :]
        x = tl.load(X + offs, mask=mask, other=0.0).to(tl.float32)
        c = tl.dot(lam_b, x, input_precision="ieee") + decay_c[:, None] * c_carry[None, :]
        c_carry = tl.sum(tl.where(i[:, None] == BT - 1, c, 0.0), axis=0)
        c = c - theta
        s = tl.zeros([BT, BN], dtype=tl.float32)
        for k in tl.static_range(K):
            if k == 0:
                h = c
            else:
                d = tl.load(D + (k - 1) * N + cols, mask=cmask, other=0.0)
                reset = tl.dot(reset_b, s, input_precision="ieee")
                h = c - theta * (reset + decay_d[:, None] * d[None, :])
                d_new = tl.sum(last_row[:, None] * s, axis=0) + lam_bt * d
                tl.store(D + (k - 1) * N + cols, d_new, mask=cmask)
            tl.store(H + k * T * N + offs, h, mask=mask)
            alpha = tl.load(ALPHA + k)
            if HEAVISIDE:
                s = tl.where(h > 0, 1.0, 0.0) if STRICT else tl.where(h >= 0, 1.0, 0.0)
            else:
                s = tl.sigmoid(alpha * h)
        tl.store(S + offs, s, mask=mask)


@triton.jit
def _fpt_bwd_kernel(
    G, H, E, GX, ALPHA_B,
    T, N, lam, log2_lam, gamma, theta, n_blocks,
    K: tl.constexpr, BT: tl.constexpr, BN: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    cols = pid * BN + tl.arange(0, BN)
    cmask = cols < N
    i = tl.arange(0, BT)
    diff = (i[:, None] - i[None, :]).to(tl.float32)
    lower = diff >= 0
    lam_b = tl.where(lower, tl.exp2(tl.where(lower, diff, 0.0) * log2_lam), 0.0)
    reset_b = (lam_b - tl.where(diff == 0, 1.0, 0.0)) * (gamma / lam)  # A_B, in-block
    fi = i.to(tl.float32)
    fwd_pow = tl.exp2(fi * log2_lam)  # λ^i: folds a block into its reverse carry
    back_h = gamma * tl.exp2((BT - 1.0 - fi) * log2_lam)  # γ λ^{BT−1−i}
    back_c = tl.exp2((BT - fi) * log2_lam)  # λ^{BT−i}
    lam_bt = tl.exp2(BT * log2_lam)
    for b in range(0, n_blocks):
        t0 = (n_blocks - 1 - b) * BT
        rows = t0 + i
        mask = (rows[:, None] < T) & cmask[None, :]
        offs = rows[:, None] * N + cols[None, :]
        g_s = tl.load(G + offs, mask=mask, other=0.0).to(tl.float32)
        g_c = tl.zeros([BT, BN], dtype=tl.float32)
        for kk in tl.static_range(K):
            k = K - 1 - kk
            h = tl.load(H + k * T * N + offs, mask=mask, other=0.0)
            slope = tl.load(ALPHA_B + k)
            sig = tl.sigmoid(slope * h)
            g_h = g_s * slope * sig * (1.0 - sig)
            g_c += g_h
            if k > 0:
                e = tl.load(E + k * N + cols, mask=cmask, other=0.0)
                back = tl.dot(tl.trans(reset_b), g_h, input_precision="ieee")
                g_s = -theta * (back + back_h[:, None] * e[None, :])
                e_new = tl.sum(fwd_pow[:, None] * g_h, axis=0) + lam_bt * e
                tl.store(E + k * N + cols, e_new, mask=cmask)
        e = tl.load(E + cols, mask=cmask, other=0.0)
        g_x = tl.dot(tl.trans(lam_b), g_c, input_precision="ieee") + back_c[:, None] * e[None, :]
        e_new = tl.sum(fwd_pow[:, None] * g_c, axis=0) + lam_bt * e
        tl.store(E + cols, e_new, mask=cmask)
        tl.store(GX + offs, g_x, mask=mask)


def _scalars(lam, convention):
    gamma = lam if convention == "spikingjelly" else 1.0
    return float(lam), math.log2(lam), float(gamma)


class _FPTTriton(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lam, theta, alphas, alphas_b, convention, heaviside, strict):
        T, N = x.shape
        K = len(alphas)
        xc = x.contiguous()
        lam_f, log2_lam, gamma = _scalars(lam, convention)
        s = torch.empty((T, N), dtype=torch.float32, device=x.device)
        h = torch.empty((K, T, N), dtype=torch.float32, device=x.device)
        d = torch.zeros((max(K - 1, 1), N), dtype=torch.float32, device=x.device)
        alpha_t = torch.tensor(alphas, dtype=torch.float32, device=x.device)
        grid = (triton.cdiv(N, BLOCK_N),)
        _fpt_fwd_kernel[grid](
            xc, s, h, d, alpha_t, T, N, lam_f, log2_lam, gamma, float(theta),
            K=K, HEAVISIDE=heaviside, STRICT=strict, BT=BLOCK_T, BN=BLOCK_N,
        )  # fmt: skip
        ctx.save_for_backward(h)
        ctx.meta = (lam_f, log2_lam, gamma, float(theta), tuple(alphas_b), x.dtype)
        return s.to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        (h,) = ctx.saved_tensors
        lam_f, log2_lam, gamma, theta, alphas_b, dtype = ctx.meta
        K, T, N = h.shape
        g = grad.contiguous().to(torch.float32)
        gx = torch.empty((T, N), dtype=torch.float32, device=g.device)
        e = torch.zeros((K, N), dtype=torch.float32, device=g.device)
        slope = torch.tensor(alphas_b, dtype=torch.float32, device=g.device)
        grid = (triton.cdiv(N, BLOCK_N),)
        _fpt_bwd_kernel[grid](
            g, h, e, gx, slope, T, N, lam_f, log2_lam, gamma, theta, triton.cdiv(T, BLOCK_T),
            K=K, BT=BLOCK_T, BN=BLOCK_N,
        )  # fmt: skip
        return gx.to(dtype), None, None, None, None, None, None, None


def fpt_triton(x, lam, theta, alphas, alphas_b, *, convention="spikingjelly", heaviside=False,
               strict=False):  # fmt: skip
    """Fused FPT forward (and backward through autograd); returns ``s^{K−1}`` [T, N].

    Parameters
    ----------
    x : Tensor, shape [T, N], float (loaded as float32)
    lam : float
        λ in (0, 1) (no gradient to τ or α on this path).
    theta : float
    alphas, alphas_b : tuple of K floats
        Forward and backward sigmoid slopes.
    convention : {"spikingjelly", "snntorch"}
    heaviside, strict : bool
    """
    return _FPTTriton.apply(x, lam, theta, tuple(alphas), tuple(alphas_b), convention,
                            heaviside, strict)  # fmt: skip
