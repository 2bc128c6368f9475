"""Dense FPT reference: K fixed-point evaluations with full T×T matmuls (the executable spec).

Axes: T time steps, N neurons (all non-time axes flattened).

Source: Feng et al., ICML 2025, Sec. 4 (fixed-point iteration of the unrolled LIF) and official
``imagenet_train.py::FPT_adaptive_alpha`` (WanjinVon/FPT)::

    C = L x + b                    (L = Λ, b = −θ; learnable: L = tril(W), b learned)
    s⁰ = f_0(C)
    s^k = f_k(C − θ R s^{k−1}),    k = 1..K−1   (R = A; learnable: R = tril(W) − I)

with ``f_k = σ(α_k ·)`` (or Heaviside) and the surrogate backward of
:func:`fpt_snn.surrogate.spike`.
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
