"""Spike functions with surrogate gradients, and the straight-through spike sampler.

Source: Feng et al., ICML 2025, Sec. 4 and official ``imagenet_train.py::FPT_adaptive_alpha``
(WanjinVon/FPT): each fixed-point evaluation is ``σ(α_k h)``; its backward uses the flatter slope
``α_b = max(1, α_k / 3)``: ``∂s/∂h = α_b σ(α_b h)(1 − σ(α_b h))``. The output is a Bernoulli draw
with a straight-through (identity) gradient.
"""

from __future__ import annotations

import torch

from icml25_core import check_scalar

__all__ = ["sigmoid_surrogate", "spike", "sample_spikes", "backward_slope"]


def backward_slope(alpha: float, surrogate: str) -> float:
    """Slope of the backward sigmoid: ``max(1, α/3)`` ("official") or ``α`` ("exact")."""
    return max(1.0, alpha / 3.0) if surrogate == "official" else alpha


def _dsigmoid_from(sig):
    return sig * (1 - sig)


class _Spike(torch.autograd.Function):
    """``s = σ(αh)`` or ``H(h)`` forward; ``α_b σ'(α_b h)`` backward (``h σ'(α_b h)`` for α)."""

    @staticmethod
    def forward(ctx, h, alpha, alpha_b, heaviside, strict):
        ctx.save_for_backward(h, alpha, alpha_b)
        if heaviside:
            return (h > 0).to(h.dtype) if strict else (h >= 0).to(h.dtype)
        return torch.sigmoid(alpha * h)

    @staticmethod
    def backward(ctx, grad):
        h, alpha, alpha_b = ctx.saved_tensors
        sig = torch.sigmoid(alpha_b * h)
        grad_h = grad_alpha = None
        if ctx.needs_input_grad[0]:
            # α_b σ'(α_b h) · grad, with torch's fused σ' kernel: grad·σ(1 − σ) in one pass.
            grad_h = torch.ops.aten.sigmoid_backward(grad * alpha_b, sig)
        if ctx.needs_input_grad[1]:
            # d/dα of σ(αh) is h σ'(αh); the flatter slope replaces α as in ∂/∂h (official
            # FPT_learnable_alpha uses h σ'(αh/3)).
            grad_alpha = (grad * h * _dsigmoid_from(sig)).sum().reshape(alpha.shape)
        return grad_h, grad_alpha, None, None, None


def spike(h, alpha, *, surrogate="official", heaviside=False, strict=False):
    """One fixed-point evaluation ``s = σ(α h)`` (or ``H(h)``) with the paper's surrogate.

    Parameters
    ----------
    h : Tensor, any shape, float32 | float64
        Membrane potential minus threshold, ``u − θ``.
    alpha : float or 0-d Tensor
        Forward sigmoid slope α_k > 0 (a tensor with grad makes α learnable).
    surrogate : {"official", "exact"}, default="official"
        Backward slope ``max(1, α/3)`` (official) or ``α`` (the true sigmoid derivative).
    heaviside : bool, default=False
        Forward ``H(h)`` instead of ``σ(αh)``; the backward is the same sigmoid surrogate.
    strict : bool, default=False
        With `heaviside`, fire on ``h > 0`` (snntorch) instead of ``h >= 0`` (spikingjelly).

    Returns
    -------
    Tensor, shape and dtype of `h`
    """
    alpha_t = torch.as_tensor(alpha, dtype=h.dtype, device=h.device)
    if isinstance(alpha, torch.Tensor):
        slope = torch.clamp(alpha_t / 3.0, min=1.0) if surrogate == "official" else alpha_t
        alpha_b = slope.detach()
    else:
        alpha_b = torch.as_tensor(backward_slope(float(alpha), surrogate), dtype=h.dtype)
        alpha_b = alpha_b.to(h.device)
    return _Spike.apply(h, alpha_t, alpha_b, heaviside, strict)


class _StraightThrough(torch.autograd.Function):
    """Forward the sample `b`, backward the identity to `s` (no extra pass over the data)."""

    @staticmethod
    def forward(ctx, s, b):
        return b

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def sample_spikes(s, sample="bernoulli", generator=None):
    """Binary output from firing probabilities, with a straight-through gradient.

    Parameters
    ----------
    s : Tensor, values in [0, 1]
    sample : {"bernoulli", "threshold", "none"}, default="bernoulli"
        Bernoulli draw (official, also at eval), ``1[s >= 0.5]``, or `s` itself.
    generator : torch.Generator, optional
        RNG of the Bernoulli draw (default: torch's global RNG; seed per rank).

    Returns
    -------
    Tensor, shape and dtype of `s`
        Forward the sample, backward the identity (as ``o = s + (b − s).detach()``).
    """
    if sample == "none":
        return s
    with torch.no_grad():
        if sample == "bernoulli":  # 1[u < s], u ~ U[0, 1): a Bernoulli(s) draw, vectorised
            u = torch.rand(s.shape, generator=generator, dtype=s.dtype, device=s.device)
            b = u.lt_(s)  # in place: 1.0 where u < s (one pass less than (u < s).to(dtype))
        else:
            b = (s >= 0.5).to(s.dtype)
    return _StraightThrough.apply(s, b)


class _SigmoidSurrogate:
    """Heaviside forward, ``α σ'(α h)`` backward: the BPTT baseline's spike function."""

    def __init__(self, alpha):
        self.alpha = float(alpha)

    def __call__(self, h):
        return spike(h, self.alpha, surrogate="exact", heaviside=True)

    def __repr__(self):
        return f"sigmoid_surrogate(alpha={self.alpha})"


def sigmoid_surrogate(alpha=4.0):
    """Heaviside spike with the sigmoid surrogate gradient ``α σ(αh)(1 − σ(αh))``.

    Parameters
    ----------
    alpha : float, default=4.0
        Surrogate slope (spikingjelly ``surrogate.Sigmoid`` default 4, the spec's BPTT baseline).

    Returns
    -------
    callable
        ``h -> H(h)`` (H(0) = 1) with that gradient; pass it to ``lif_sequential(surrogate=...)``.

    Raises
    ------
    ValueError, TypeError
        If `alpha` is not a positive number.
    """
    check_scalar(alpha, "alpha", low=0, inclusive="neither")
    return _SigmoidSurrogate(alpha)
