"""The LIF neuron with soft reset: exact sequential simulation and its matrix form.

Axes: T time steps (first axis, spikingjelly's multi-step layout), N neurons (all other axes).

Source: Feng et al., ICML 2025 (arXiv 2506.12087), Sec. 3 (LIF dynamics and their unrolled
matrix form); spikingjelly ``LIFNode(decay_input=False, v_reset=None)`` and snntorch ``Leaky(
reset_mechanism="subtract")`` for the two reset conventions.
"""

from __future__ import annotations

import math

import torch

from icml25_core import check_scalar

from ._validation import check_convention, check_input, check_T, check_tau, check_threshold


def decay_from_tau(tau):
    """Per-step membrane decay λ = 1 − 1/τ.

    Parameters
    ----------
    tau : float or 0-d Tensor
        Membrane time constant in time steps, > 1 (official default 2, i.e. λ = 0.5).

    Returns
    -------
    float or 0-d Tensor
        λ in (0, 1), same type as `tau` (differentiable in a tensor τ).

    Raises
    ------
    ValueError, TypeError
        If `tau` is not a real number > 1.

    Notes
    -----
    Source: spikingjelly ``LIFNode`` charge ``v ← v − v/τ + x`` (decay_input=False, soft reset),
    the neuron of the official FPT code (WanjinVon/FPT).
    """
    tau = check_tau(tau)
    return 1.0 - 1.0 / tau


def stateleaky_beta(lam):
    """snntorch ``StateLeaky`` β whose decay matches λ: β = 1 + ln λ.

    ``StateLeaky`` decays by ``exp(−(1 − β))`` per step, so ``exp(−(1 − β)) = λ`` gives
    β = 1 + ln λ (spec §2; snntorch 1.0 ``StateLeaky``).

    Parameters
    ----------
    lam : float
        Per-step decay λ in (0, 1).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If `lam` is not in (0, 1).
    """
    check_scalar(lam, "lam", low=0, high=1, inclusive="neither")
    return 1.0 + math.log(lam)


def _lam_tensor(tau, dtype, device):
    lam = decay_from_tau(tau)
    if isinstance(lam, torch.Tensor):
        return lam.to(dtype=dtype, device=device)
    return torch.tensor(lam, dtype=dtype, device=device)


def lambda_matrix(T, tau=2.0, *, dtype=torch.float32, device=None):
    """The decay matrix Λ[t, j] = λ^(t−j) for j ≤ t, else 0.

    Parameters
    ----------
    T : int
        Number of time steps, >= 1.
    tau : float or 0-d Tensor, default=2.0
        Membrane time constant (λ = 1 − 1/τ); a tensor keeps Λ differentiable in τ.
    dtype : torch.dtype, default=torch.float32
        Built in float32 or float64 (λ^k underflows in float16; spec §9).
    device : torch.device, optional

    Returns
    -------
    Tensor, shape [T, T]
        Lower-triangular, ones on the diagonal.

    Raises
    ------
    ValueError, TypeError
        If `T` < 1 or `tau` <= 1.

    Notes
    -----
    Source: paper Sec. 3, unrolled LIF ``u = Λx − θAs`` (spec §2).
    """
    T = check_T(T)
    lam = _lam_tensor(tau, dtype, device)
    t = torch.arange(T, device=device)
    diff = (t[:, None] - t[None, :]).to(dtype)
    mask = diff >= 0
    powers = torch.pow(lam, torch.where(mask, diff, torch.zeros_like(diff)))
    return torch.where(mask, powers, torch.zeros_like(powers))


def reset_matrix(T, tau=2.0, convention="spikingjelly", *, dtype=torch.float32, device=None):
    """The reset matrix A of ``u = Λx − θAs``: strictly lower-triangular.

    spikingjelly (``u_t = λ(u_{t−1} − θs_{t−1}) + x_t``): A = Λ − I, A[t, j] = λ^(t−j), j < t.
    snntorch (``u_t = λu_{t−1} + x_t − θs_{t−1}``): A = (Λ − I)/λ, A[t, j] = λ^(t−1−j), j < t.

    Parameters
    ----------
    T : int
        Number of time steps, >= 1.
    tau : float or 0-d Tensor, default=2.0
    convention : {"spikingjelly", "snntorch"}, default="spikingjelly"
    dtype, device : as in :func:`lambda_matrix`.

    Returns
    -------
    Tensor, shape [T, T]
        Nilpotent (A^T = 0), which makes the fixed-point iteration exact after T evaluations.

    Raises
    ------
    ValueError, TypeError
        On `T` < 1, `tau` <= 1 or an unknown `convention`.

    Notes
    -----
    Source: paper Sec. 3-4 (spec §2).
    """
    convention = check_convention(convention)
    lam_mat = lambda_matrix(T, tau, dtype=dtype, device=device)
    eye = torch.eye(lam_mat.shape[0], dtype=dtype, device=device)
    reset = lam_mat - eye
    if convention == "snntorch":
        reset = reset / _lam_tensor(tau, dtype, device)
    return reset


def lif_sequential(
    x,
    *,
    tau=2.0,
    v_threshold=1.0,
    convention="spikingjelly",
    surrogate=None,
):
    """Exact LIF with soft reset, stepped over time (the reference and the BPTT baseline).

    spikingjelly: ``u_t = λ(u_{t−1} − θs_{t−1}) + x_t``, ``s_t = H(u_t − θ)`` with H(0) = 1.
    snntorch: ``u_t = λu_{t−1} + x_t − θs_{t−1}``, ``s_t = 1[u_t > θ]``. ``u_0 = 0``.

    Parameters
    ----------
    x : Tensor, shape [T, ...], float16 | bfloat16 | float32 | float64
        Input current per step (already weighted), in units of the threshold's scale.
    tau : float or 0-d Tensor, default=2.0
        Membrane time constant in steps (official default 2, λ = 0.5).
    v_threshold : float, default=1.0
        Firing threshold θ > 0 (official default 1).
    convention : {"spikingjelly", "snntorch"}, default="spikingjelly"
    surrogate : callable, optional
        ``surrogate(u − θ) -> spikes``, e.g. :func:`fpt_snn.sigmoid_surrogate`; it must give the
        Heaviside spike forward and a surrogate gradient backward. ``None``: hard threshold, no
        gradient through the spikes.

    Returns
    -------
    Tensor, shape of `x`, dtype of `x`
        Spikes in {0, 1} (unless `surrogate` returns otherwise). Half inputs are stepped in
        float32.

    Raises
    ------
    TypeError
        If `x` is not a float tensor.
    ValueError
        If `x` is 0-d, empty or non-finite, `tau` <= 1, `v_threshold` <= 0, or `convention`
        is unknown.

    Notes
    -----
    Source: spikingjelly ``LIFNode(tau, decay_input=False, v_reset=None)`` (the neuron of the
    official FPT code) and snntorch ``Leaky(beta=λ, reset_mechanism="subtract")``.
    """
    check_input(x)
    tau = check_tau(tau)
    theta = check_threshold(v_threshold)
    convention = check_convention(convention)
    if surrogate is not None and not callable(surrogate):
        raise TypeError(f"`surrogate` must be callable or None, got {type(surrogate).__name__}")
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    xs = x.to(work)
    lam = decay_from_tau(tau)
    if isinstance(lam, torch.Tensor):
        lam = lam.to(work)
    u = torch.zeros_like(xs[0])
    s = torch.zeros_like(xs[0])
    out = []
    for t in range(xs.shape[0]):
        if convention == "spikingjelly":
            u = lam * (u - theta * s) + xs[t]
        else:
            u = lam * u + xs[t] - theta * s
        if surrogate is not None:
            s = surrogate(u - theta)
        elif convention == "spikingjelly":
            s = (u >= theta).to(work)
        else:
            s = (u > theta).to(work)
        out.append(s)
    return torch.stack(out).to(x.dtype)
