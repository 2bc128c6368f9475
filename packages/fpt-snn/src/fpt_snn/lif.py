"""The LIF neuron: exact sequential simulation, its matrix form, and the reset variants.

Axes: T time steps (first axis, spikingjelly's multi-step layout), N neurons (all other axes).

Source: Feng et al., ICML 2025 (arXiv 2506.12087), Sec. 3 (LIF dynamics and their unrolled
matrix form); spikingjelly ``LIFNode`` (charge ``H_t = λV_{t−1} + c·X_t + (1−λ)·v_reset``,
``c = 1/τ`` with ``decay_input`` else 1, soft reset ``V_t = H_t − θS_t``, hard reset
``V_t = (1−S_t)H_t + S_t·v_reset``; ``spikingjelly/_ops/lif/reference.py``) and snntorch
``Leaky`` (``reset_mechanism="subtract"|"zero"``, reset one step delayed) for the conventions.

Every variant is a leaky integrator of a *drive* (:func:`_drive`): the input scaled by c, with
the initial state folded into the first step (``u_1 = λ·V_0 + c·x_1``, so ``x'_1 = c·x_1 + b``).
"""

from __future__ import annotations

import math

import torch

from icml25_core import check_scalar

from ._validation import (
    check_convention,
    check_flag,
    check_input,
    check_reset,
    check_T,
    check_tau,
    check_threshold,
    check_v_init,
)


def decay_from_tau(tau):
    """Per-step membrane decay λ = 1 − 1/τ.

    Parameters
    ----------
    tau : float or Tensor, any shape, float
        Membrane time constant in time steps, > 1 (official default 2, i.e. λ = 0.5); a tensor
        holds one τ per neuron group (per-channel τ).

    Returns
    -------
    float or Tensor
        λ in (0, 1), same type and shape as `tau` (differentiable in a tensor τ).

    Raises
    ------
    ValueError, TypeError
        If `tau` is not a real number or float tensor with every entry finite and > 1.

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
    tau : float or Tensor, shape P, default=2.0
        Membrane time constant (λ = 1 − 1/τ); a tensor keeps Λ differentiable in τ, and a
        tensor of shape P (e.g. [G], one τ per neuron group) gives one Λ per entry.
    dtype : torch.dtype, default=torch.float32
        Built in float32 or float64 (λ^k underflows in float16; spec §9).
    device : torch.device, optional

    Returns
    -------
    Tensor, shape [*P, T, T] ([T, T] for a float or 0-d τ)
        Lower-triangular, ones on the diagonal: ``Λ[..., t, j] = λ^(t−j)`` per entry of τ.

    Raises
    ------
    ValueError, TypeError
        If `T` < 1 or an entry of `tau` is <= 1 or non-finite.

    Notes
    -----
    Source: paper Sec. 3, unrolled LIF ``u = Λx − θAs`` (spec §2); per-neuron λ as in PLIF
    (Fang et al., "Incorporating Learnable Membrane Time Constant to Enhance Learning of Spiking
    Neural Networks", ICCV 2021), where every neuron group has its own τ.
    """
    T = check_T(T)
    lam = _lam_tensor(tau, dtype, device)[..., None, None]
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
    tau : float or Tensor, shape P, default=2.0
        As in :func:`lambda_matrix` (one A per entry of a tensor τ).
    convention : {"spikingjelly", "snntorch"}, default="spikingjelly"
    dtype, device : as in :func:`lambda_matrix`.

    Returns
    -------
    Tensor, shape [*P, T, T] ([T, T] for a float or 0-d τ)
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
    eye = torch.eye(lam_mat.shape[-1], dtype=dtype, device=device)
    reset = lam_mat - eye
    if convention == "snntorch":
        reset = reset / _lam_tensor(tau, dtype, device)[..., None, None]
    return reset


def _powers_from_end(lam, T, like, shift=0):
    """``λ^(T−1−shift−j)`` for j = 0..T−1: shape [T, 1] for one λ, [T, N] for λ per neuron."""
    exps = torch.arange(T - 1 - shift, -1 - shift, -1, device=like.device, dtype=like.dtype)
    return torch.pow(lam, exps.clamp(min=0)[:, None])


def _fires(u, theta, convention):
    """spikingjelly fires on u >= θ (H(0) = 1), snntorch on u > θ."""
    return (u > theta) if convention == "snntorch" else (u >= theta)


def _initial_carry(v_init, lam, theta, reset, v_reset, convention):
    """What the state before step 1 adds to step 1's membrane (``u_1 = b + c·x_1``).

    spikingjelly stores the post-reset membrane V_0: soft ``b = λV_0``, hard
    ``b = λ(V_0 − v_reset)`` (in the shifted variable ``w = V − v_reset``). snntorch stores the
    pre-reset membrane ``u_0`` and resets one step late with ``r = 1[u_0 > θ]``: subtract
    ``b = λu_0 − θr``, zero ``b = λ(1 − r)u_0`` (snntorch ``Leaky._base_sub``/``_base_zero``).
    """
    if convention == "spikingjelly":
        return lam * (v_init - v_reset) if reset == "hard" else lam * v_init
    pending = _fires(v_init, theta, convention).to(v_init.dtype)
    if reset == "hard":
        return lam * (1 - pending) * v_init
    return lam * v_init - theta * pending


def _drive(x, lam, *, decay_input, v_init, theta, reset, v_reset, convention):
    """The input the leaky integral sees, [T, N]: ``c·x`` with the initial carry at step 1.

    ``c = 1 − λ = 1/τ`` with `decay_input` (spikingjelly ``decay_input=True``), else 1. The
    initial membrane enters as ``Λ[t, 0]·b = λ^(t−1)·b``, i.e. the term ``λ^t·V_0`` of
    ``C_t`` in the spikingjelly soft convention (``u_1 = λ(V_0 − θs_0) + x_1``, ``s_0 = 0``).
    """
    drive = (1 - lam) * x if decay_input else x
    if v_init is None:
        return drive
    b = _initial_carry(v_init, lam, theta, reset, v_reset, convention)
    return torch.cat([drive[:1] + b, drive[1:]])


def _hard_keep_weights(spikes, lam):
    """Weights ``λ^(T−1−j) Π_{m=j}^{T−2}(1 − s_m)`` of the last row of the hard-reset operator."""
    T = spikes.shape[0]
    keep = torch.cat([1 - spikes[:-1], torch.ones_like(spikes[:1])])
    return torch.flip(torch.cumprod(torch.flip(keep, (0,)), 0), (0,)) * _powers_from_end(
        lam, T, spikes
    )


def _final_state(drive, spikes, lam, theta, reset, v_reset, convention):
    """The membrane after the last step, given the drive and the emitted spikes ([T, N] each).

    What each library stores between calls (and what ``v_init`` takes back):
    spikingjelly the post-reset V_T: soft ``V_T = Σ_j λ^(T−1−j)(x'_j − θ s_j)`` (= Λ row T of
    ``x' − θs``, since ``A + I = Λ``), hard ``V_T = v_reset + (1 − s_T) h_T`` with
    ``h_T = Σ_j λ^(T−1−j) Π_{m=j}^{T−2}(1 − s_m) x'_j``; snntorch the pre-reset ``u_T``:
    subtract ``u_T = Σ_j λ^(T−1−j) x'_j − θ Σ_{j<T−1} λ^(T−2−j) s_j``, zero ``u_T = h_T``.
    """
    T = drive.shape[0]
    if reset == "hard":
        h_last = (_hard_keep_weights(spikes, lam) * drive).sum(0)
        if convention == "snntorch":
            return h_last
        return v_reset + (1 - spikes[-1]) * h_last
    weights = _powers_from_end(lam, T, drive)
    if convention == "spikingjelly":
        return (weights * (drive - theta * spikes)).sum(0)
    u_last = (weights * drive).sum(0)
    if T == 1:
        return u_last
    return u_last - theta * (_powers_from_end(lam, T - 1, drive) * spikes[:-1]).sum(0)


def lif_sequential(
    x,
    *,
    tau=2.0,
    v_threshold=1.0,
    convention="spikingjelly",
    surrogate=None,
    reset="soft",
    v_reset=0.0,
    decay_input=False,
    v_init=None,
    return_state=False,
):
    r"""Exact LIF stepped over time (the reference and the BPTT baseline), any reset variant.

    spikingjelly (``LIFNode``): charge ``H_t = λV_{t−1} + c·x_t + (1−λ)·v_reset`` (soft:
    no v_reset term), fire ``s_t = 1[H_t >= θ]``, soft reset ``V_t = H_t − θs_t`` or hard
    reset ``V_t = (1 − s_t)H_t + s_t·v_reset``; ``V_0 = v_reset`` (hard) or 0.
    snntorch (``Leaky``): ``r_t = 1[u_{t−1} > θ]``; subtract ``u_t = λu_{t−1} + c·x_t − θr_t``,
    zero ``u_t = λ(1 − r_t)u_{t−1} + c·x_t``; ``s_t = 1[u_t > θ]``, ``u_0 = 0``.
    ``c = 1/τ`` with `decay_input`, else 1; λ = 1 − 1/τ.

    Parameters
    ----------
    x : Tensor, shape [T, ...], float16 | bfloat16 | float32 | float64
        Input current per step (already weighted), in units of the threshold's scale.
    tau : float or Tensor, default=2.0
        Membrane time constant in steps (official default 2, λ = 0.5). A tensor broadcastable
        to one time step ``x.shape[1:]`` (trailing axes aligned, NumPy rule) gives each neuron
        its own τ: shape [C] for [T, B, C] input, [C, 1, 1] for [T, B, C, H, W] (per-channel
        τ as in PLIF, Fang et al., ICCV 2021); a 0-d tensor is one τ. It must cover every
        axis after the batch axis (``x.shape[2:]``) unless it holds one value: a [C] τ on
        [T, B, C, H, W] input would align with W, not C, and raises.
    v_threshold : float or Tensor, default=1.0
        Firing threshold θ > 0 (official default 1); a tensor broadcasts like `tau`.
    convention : {"spikingjelly", "snntorch"}, default="spikingjelly"
    surrogate : callable, optional
        ``surrogate(u − θ) -> spikes``, e.g. :func:`fpt_snn.sigmoid_surrogate`; it must give the
        Heaviside spike forward and a surrogate gradient backward. ``None``: hard threshold, no
        gradient through the spikes.
    reset : {"soft", "hard"}, default="soft"
        Subtract θ (spikingjelly ``v_reset=None``, snntorch ``"subtract"``; the official FPT
        neuron) or set to `v_reset` (spikingjelly ``v_reset=float``, snntorch ``"zero"``).
    v_reset : float, default=0.0
        Reset potential of the hard reset, < `v_threshold`; must be 0 for the soft reset and in
        the snntorch convention.
    decay_input : bool, default=False
        Scale the input by 1/τ (spikingjelly ``decay_input=True``, its default); False is the
        official FPT neuron and snntorch.
    v_init : Tensor, shape ``x.shape[1:]``, float, optional
        Membrane before step 1: spikingjelly's post-reset ``V_0`` (its ``node.v``), snntorch's
        pre-reset ``mem`` (its reset ``1[mem > θ]`` is applied at step 1). Default: the
        libraries' initial state (``v_reset`` for the spikingjelly hard reset, else 0).
    return_state : bool, default=False
        Also return the membrane after step T in the same convention, to feed as `v_init` of
        the next chunk: chunked calls then equal one call on the whole sequence.

    Returns
    -------
    Tensor, shape of `x`, dtype of `x`
        Spikes in {0, 1} (unless `surrogate` returns otherwise). Half inputs are stepped in
        float32.
    (Tensor, Tensor)
        With ``return_state=True``: the spikes and the final membrane, shape ``x.shape[1:]``,
        dtype of `x`.

    Raises
    ------
    TypeError
        If `x` is not a float tensor, `v_init` not a float tensor, or `decay_input` /
        `return_state` not bools.
    ValueError
        If `x` is 0-d, empty or non-finite; an entry of `tau` is <= 1 or non-finite, or of
        `v_threshold` <= 0 or non-finite; a tensor `tau`/`v_threshold` is empty, not float,
        on another device than `x`, does not broadcast to ``x.shape[1:]`` or has fewer axes
        than ``x.shape[2:]`` (and more than one value); `convention` or
        `reset` is unknown; `v_reset` is out of range (see ``reset``); or `v_init` has the
        wrong shape or device or is non-finite.

    Notes
    -----
    Source: spikingjelly 2.0 ``LIFNode(tau, decay_input, v_threshold, v_reset)`` (charge,
    fire and reset of ``spikingjelly/_ops/lif/reference.py``; ``v_reset=None`` is the soft
    reset of the official FPT code) and snntorch 1.0 ``Leaky(beta=λ, reset_mechanism=
    "subtract"|"zero")`` with its default ``reset_delay=True``.
    """
    check_input(x)
    tau = check_tau(tau, x.shape[1:], device=x.device)
    theta = check_threshold(v_threshold, x.shape[1:], device=x.device)
    convention = check_convention(convention)
    reset, v_reset = check_reset(reset, v_reset, theta, convention)
    decay_input = check_flag(decay_input, "decay_input")
    return_state = check_flag(return_state, "return_state")
    v_init = check_v_init(v_init, x)
    if surrogate is not None and not callable(surrogate):
        raise TypeError(f"`surrogate` must be callable or None, got {type(surrogate).__name__}")
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    xs = x.to(work)
    lam = decay_from_tau(tau)
    if isinstance(lam, torch.Tensor):  # per-neuron τ broadcasts against each step's [...]
        lam = lam.to(work)
    if isinstance(theta, torch.Tensor):
        theta = theta.to(work)
    drive = (1 - lam) * xs if decay_input else xs
    hard = reset == "hard"
    if v_init is not None:
        v = v_init.to(work)
    else:
        v = torch.full_like(xs[0], v_reset if hard and convention == "spikingjelly" else 0.0)
    s = _fires(v, theta, convention).to(work)  # snntorch's pending reset (unused by spikingjelly)
    out = []
    for t in range(xs.shape[0]):
        if convention == "spikingjelly":  # v: the post-reset V_{t-1}
            u = lam * (v - v_reset) + v_reset + drive[t] if hard else lam * v + drive[t]
        else:  # v: the pre-reset u_{t-1}, s its (delayed) reset
            u = lam * (1 - s) * v + drive[t] if hard else lam * v + drive[t] - theta * s
        s = _fires(u, theta, convention).to(work) if surrogate is None else surrogate(u - theta)
        if convention == "spikingjelly":
            v = (1 - s) * u + s * v_reset if hard else u - theta * s
        else:
            v = u
        out.append(s)
    spikes = torch.stack(out).to(x.dtype)
    if return_state:
        return spikes, v.to(x.dtype)
    return spikes
