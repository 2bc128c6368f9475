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
"""

from __future__ import annotations

import torch

from ..surrogate import spike


def fpt_dense(x, L, R, bias, theta, alphas, *, heaviside=False, strict=False, surrogate="official"):
    """Run the K evaluations densely; returns the last iterate ``s^{K−1}``.

    Parameters
    ----------
    x : Tensor, shape [T, N], float32 | float64
        Input currents.
    L : Tensor, shape [T, T]
        Input operator (Λ, lower-triangular).
    R : Tensor, shape [T, T]
        Reset operator (A, strictly lower-triangular).
    bias : float or Tensor, shape [T]
        Added to ``L x`` (``−θ`` for the LIF; a learned per-step bias otherwise).
    theta : float
        Threshold θ scaling the reset.
    alphas : sequence of K floats or Tensor, shape [K]
        Forward slopes α_k.
    heaviside, strict, surrogate
        As in :func:`fpt_snn.surrogate.spike`.

    Returns
    -------
    Tensor, shape [T, N], dtype of `x`
        The firing probabilities (or Heaviside spikes) after K evaluations.
    """
    if isinstance(bias, torch.Tensor):
        column = bias.reshape(-1, 1)
    else:
        column = torch.full((x.shape[0], 1), bias, dtype=x.dtype, device=x.device)
    C = torch.addmm(column, L, x)  # one fused GEMM: C = L x + b
    s = None
    for k in range(len(alphas)):
        h = C if s is None else torch.addmm(C, R, s, alpha=-theta)  # C − θ R s, fused
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
    L : Tensor, shape [T, T]
        Λ, lower-triangular (``L[t, j] = λ^{t−j}``).

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
    return torch.einsum("tj,jtn->tn", L, G * x[:, None, :])


def fpt_dense_hard(
    x, L, theta, alphas, *, heaviside=False, strict=False, surrogate="official"
):  # fmt: skip
    """K evaluations of the hard-reset fixed point; returns ``s^{K−1}``.

    Parameters
    ----------
    x : Tensor, shape [T, N], float32 | float64
        The drive (see :func:`hard_reset_drive`).
    L : Tensor, shape [T, T]
        Λ.
    theta : float
        Effective threshold ``θ − v_reset`` on the shifted membrane.
    alphas, heaviside, strict, surrogate
        As in :func:`fpt_dense`.

    Returns
    -------
    Tensor, shape [T, N], dtype of `x`
    """
    s = None
    for k in range(len(alphas)):
        h = (L @ x if s is None else hard_reset_drive(x, s, L)) - theta
        s = spike(h, alphas[k], surrogate=surrogate, heaviside=heaviside, strict=strict)
    return s
