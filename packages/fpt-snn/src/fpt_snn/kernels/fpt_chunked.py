"""Chunked FPT: blocks of 64 steps, GEMMs inside a block, decayed carries across blocks.

Axes: T time steps, N neurons; B steps per block, i = t − t0 the step inside a block.

Same maths as :mod:`fpt_snn.kernels.fpt_dense` for the structured LIF operators (Λ from a scalar
λ, A from Λ), in O(T·B·N) instead of O(T²·N) work. Across blocks, ``C_t = λ C_{t−1} + x_t``
gives ``C_{t0+i} = (Λ_B x_B)_i + λ^{i+1} C_{t0−1}``, and for every evaluation k the reset sum
``(A s)_{t0+i} = (A_B s_B)_i + γ λ^i D_{t0−1}`` with ``D_t = (Λ s)_t`` (γ = λ for spikingjelly,
γ = 1 for snntorch): one carry of ``C`` and one carry of ``D`` per evaluation.
Source: paper Sec. 4 (spec §3 ``kernels/fpt_chunked.py``); the block recurrence is ours.
"""

from __future__ import annotations

import torch

from ..surrogate import spike

BLOCK = 64


def _powers(lam, n, offset, like):
    exps = torch.arange(n, device=like.device, dtype=like.dtype) + offset
    return torch.pow(lam, exps)


def fpt_chunked(
    x,
    lam,
    theta,
    alphas,
    *,
    convention="spikingjelly",
    heaviside=False,
    strict=False,
    surrogate="official",
    block=BLOCK,
):
    """Run the K evaluations block by block; returns ``s^{K−1}``.

    Parameters
    ----------
    x : Tensor, shape [T, N], float32 | float64
    lam : float or 0-d Tensor
        Decay λ = 1 − 1/τ (a tensor stays differentiable).
    theta : float
    alphas : sequence of K floats or Tensor, shape [K]
    convention : {"spikingjelly", "snntorch"}
    heaviside, strict, surrogate : as in :func:`fpt_snn.surrogate.spike`.
    block : int, default=64
        Steps per block.

    Returns
    -------
    Tensor, shape [T, N], dtype of `x`
    """
    T = x.shape[0]
    K = len(alphas)
    lam = torch.as_tensor(lam, dtype=x.dtype, device=x.device)
    gamma = lam if convention == "spikingjelly" else torch.ones_like(lam)
    n_full = min(block, T)
    idx = torch.arange(n_full, device=x.device)
    diff = (idx[:, None] - idx[None, :]).to(x.dtype)
    lower = diff >= 0
    lam_b = torch.where(lower, torch.pow(lam, torch.where(lower, diff, 0 * diff)), 0 * diff)
    reset_b = (lam_b - torch.eye(n_full, dtype=x.dtype, device=x.device)) * (gamma / lam)
    c_carry = torch.zeros_like(x[0])
    d_carry = [torch.zeros_like(x[0]) for _ in range(K - 1)]
    out = []
    for t0 in range(0, T, block):
        n = min(block, T - t0)
        Lb, Ab = lam_b[:n, :n], reset_b[:n, :n]
        decay_c = _powers(lam, n, 1, x)[:, None]  # λ^{i+1}
        decay_d = (gamma * _powers(lam, n, 0, x))[:, None]  # γ λ^i
        last_row = _powers(lam, n, 0, x).flip(0)  # λ^{n−1−i}
        C_raw = torch.addmm(decay_c * c_carry, Lb, x[t0 : t0 + n])
        c_carry = C_raw[-1]
        C = C_raw - theta
        s: torch.Tensor | None = None
        for k in range(K):
            if s is None:
                h = C
            else:
                h = torch.addmm(C - theta * decay_d * d_carry[k - 1], Ab, s, alpha=-theta)
            s_new = spike(h, alphas[k], surrogate=surrogate, heaviside=heaviside, strict=strict)
            if k > 0:
                d_carry[k - 1] = last_row @ s + lam**n * d_carry[k - 1]
            s = s_new
        assert s is not None  # K >= 1 iterations ran
        out.append(s)
    return torch.cat(out)
