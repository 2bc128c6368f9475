"""Dense FPT reference: K fixed-point evaluations with full T×T matmuls (the executable spec).

Axes: T time steps, N neurons (all non-time axes flattened).

Source: Feng et al., ICML 2025, Sec. 4 (fixed-point iteration of the unrolled LIF) and official
``imagenet_train.py::FPT_adaptive_alpha`` (WanjinVon/FPT)::

    C = L x + b                    (L = Λ, b = −θ; learnable: L = tril(W), b learned)
    s⁰ = f_0(C)
    s^k = f_k(C − θ R s^{k−1}),    k = 1..K−1   (R = A; learnable: R = tril(W) − I)

with ``f_k = σ(α_k ·)`` (or Heaviside) and the surrogate backward of
:func:`fpt_snn.surrogate.spike`.

Hard reset (ours; not in the paper or the official code): in ``w = V − v_reset`` the
spikingjelly hard reset is ``h_t = λw_{t−1} + x'_t``, ``w_t = (1 − s_t)h_t``, fire on
``h_t >= θ − v_reset`` (snntorch ``"zero"``: v_reset = 0, fire on >), ``w_0 = 0``. Unrolled,
``h = M(s) x'`` with ``M(s)[t, j] = λ^{t−j} Π_{m=j}^{t−1}(1 − s_m)`` (j <= t): the reset
multiplies instead of subtracting, so the operator depends on the spikes. The fixed-point
iteration ``s^k = f_k(M(s^{k−1}) x' − (θ − v_reset))``, ``s⁰ = f_0(Λx' − (θ − v_reset))``
(``M(0) = Λ``) keeps the paper's convergence argument: row t of M depends on ``s_m``, m < t
only, so with Heaviside spikes step t is exact once steps < t are (induction as for the
nilpotent A of Sec. 4): exact for t <= k after k evaluations, hence for all t at K >= T.

Per-neuron τ (PLIF-style; Fang et al., ICCV 2021): ``Λ[t, j, n] = λ_n^{t−j}``. Neurons are
ordered in G contiguous groups of equal λ (:mod:`fpt_snn._layout`), the operators come as
[G, T, T] stacks and every product with them is a batched GEMM on the [G, T, M] view of the
[T, N] data (:func:`grouped_matmul`): G·T² memory for the operators, not N·T².
"""

from __future__ import annotations

import torch

from ..surrogate import spike


def grouped_matmul(M, v):
    """``M v`` over time, one operator per neuron group.

    Parameters
    ----------
    M : Tensor, shape [T', T] or [G, T', T]
        One operator for all neurons, or one per group (group g holds neurons
        ``g·N/G .. (g+1)·N/G − 1``).
    v : Tensor, shape [T, N]
        N a multiple of G.

    Returns
    -------
    Tensor, shape [T', N]
    """
    if M.ndim == 2:
        return M @ v
    per_group = torch.matmul(M, v.reshape(v.shape[0], M.shape[0], -1).transpose(0, 1))
    return per_group.transpose(0, 1).reshape(M.shape[1], -1)


def add_product(c, M, v, scale):
    """``c + scale · (M v)`` (grouped as :func:`grouped_matmul`), one fused GEMM when it can.

    `scale` is a float, or a tensor broadcastable to [T', N] (per-neuron or learnable θ).
    """
    if M.ndim == 2 and not isinstance(scale, torch.Tensor):
        return torch.addmm(c, M, v, alpha=scale)
    return c + scale * grouped_matmul(M, v)


def fpt_dense(x, L, R, bias, theta, alphas, *, heaviside=False, strict=False, surrogate="official"):
    """Run the K evaluations densely; returns the last iterate ``s^{K−1}``.

    Parameters
    ----------
    x : Tensor, shape [T, N], float32 | float64
        Input currents.
    L : Tensor, shape [T, T] or [G, T, T]
        Input operator (Λ, lower-triangular), shared or one per neuron group
        (see :func:`grouped_matmul`).
    R : Tensor, shape of `L`
        Reset operator (A, strictly lower-triangular).
    bias : float or Tensor broadcastable to [T, N]
        Added to ``L x`` (``−θ`` for the LIF, per neuron [N] when θ is; a learned per-step
        bias [T, 1] otherwise).
    theta : float or Tensor, shape [] or [N]
        Threshold θ scaling the reset (a tensor: per neuron, or learnable).
    alphas : sequence of K floats or Tensor, shape [K]
        Forward slopes α_k.
    heaviside, strict, surrogate
        As in :func:`fpt_snn.surrogate.spike`.

    Returns
    -------
    Tensor, shape [T, N], dtype of `x`
        The firing probabilities (or Heaviside spikes) after K evaluations.
    """
    bias = torch.as_tensor(bias, dtype=x.dtype, device=x.device)
    C = add_product(bias, L, x, 1.0)  # C = L x + b (one fused GEMM for a shared L)
    s = None
    for k in range(len(alphas)):
        h = C if s is None else add_product(C, R, s, -theta)  # C − θ R s
        s = spike(h, alphas[k], surrogate=surrogate, heaviside=heaviside, strict=strict)
    return s


def hard_reset_drive(x, s, L):
    """``h = M(s) x`` with ``M(s)[t, j] = L[t, j] Π_{m=j}^{t−1}(1 − s_m)`` (per neuron).

    Parameters
    ----------
    x : Tensor, shape [T, N]
        The drive (input scaled by c, initial carry at step 0).
    s : Tensor, shape [T, N]
        Spikes (or firing probabilities) of the previous evaluation.
    L : Tensor, shape [T, T] or [G, T, T]
        Λ, lower-triangular (``L[t, j] = λ^{t−j}``), shared or one per neuron group.

    Returns
    -------
    Tensor, shape [T, N]

    Notes
    -----
    The products come from one ``cumprod`` over a [T, T, N] tensor ``G[j, t] = Π_{m=j}^{t−1}
    (1 − s_m)`` (exact zeros after a Heaviside spike; no logarithms), so memory and work are
    O(T²·N) per evaluation: the dense path only.
    """
    T = x.shape[0]
    keep_prev = torch.cat([torch.ones_like(s[:1]), 1 - s[:-1]])  # keep_prev[t] = 1 − s_{t−1}
    idx = torch.arange(T, device=x.device)
    later = (idx[None, :] > idx[:, None])[:, :, None]  # [j, t, 1]: t > j
    G = torch.cumprod(torch.where(later, keep_prev[None, :, :], torch.ones_like(s[None])), 1)
    terms = G * x[:, None, :]  # [j, t, N]
    if L.ndim == 2:
        return torch.einsum("tj,jtn->tn", L, terms)
    grouped = terms.reshape(T, T, L.shape[0], -1)  # [j, t, G, M]
    return torch.einsum("gtj,jtgm->tgm", L, grouped).reshape(T, -1)


def fpt_dense_hard(
    x, L, theta, alphas, *, heaviside=False, strict=False, surrogate="official"
):  # fmt: skip
    """K evaluations of the hard-reset fixed point; returns ``s^{K−1}``.

    Parameters
    ----------
    x : Tensor, shape [T, N], float32 | float64
        The drive (see :func:`hard_reset_drive`).
    L : Tensor, shape [T, T] or [G, T, T]
        Λ, shared or one per neuron group.
    theta : float or Tensor, shape [] or [N]
        Effective threshold ``θ − v_reset`` on the shifted membrane.
    alphas, heaviside, strict, surrogate
        As in :func:`fpt_dense`.

    Returns
    -------
    Tensor, shape [T, N], dtype of `x`
    """
    s = None
    for k in range(len(alphas)):
        h = (grouped_matmul(L, x) if s is None else hard_reset_drive(x, s, L)) - theta
        s = spike(h, alphas[k], surrogate=surrogate, heaviside=heaviside, strict=strict)
    return s
