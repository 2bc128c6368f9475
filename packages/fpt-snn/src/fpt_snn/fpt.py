"""``fpt_lif``: fixed-point parallel training (FPT) of a multi-step LIF layer.

Axes: T time steps (axis 0), N neurons (all other axes, flattened inside).

Source: Feng, Gao, Du, Shi, Zhao, Wu, Miao, "Efficient Parallel Training Methods for Spiking
Neural Networks with Constant Time Complexity", ICML 2025 (arXiv 2506.12087), Sec. 4; official
``imagenet_train.py::FPT_adaptive_alpha`` (WanjinVon/FPT).
"""

from __future__ import annotations

import warnings

import torch

from icml25_core import check_choice

from ._layout import NeuronLayout
from ._validation import (
    check_alphas,
    check_convention,
    check_flag,
    check_input,
    check_K,
    check_reset,
    check_tau,
    check_threshold,
    check_threshold_fits,
    check_v_init,
)
from .kernels import (
    METHODS,
    fpt_chunked,
    fpt_dense,
    fpt_dense_hard,
    fpt_fused,
    resolve_method,
    run_triton,
)
from .kernels.fpt_fused import operators as fused_operators
from .lif import _drive, _final_state, decay_from_tau, lambda_matrix, reset_matrix
from .surrogate import backward_slope, sample_spikes

SPIKE_FNS = ("sigmoid", "heaviside")
SAMPLES = ("bernoulli", "threshold", "none")
SURROGATES = ("official", "exact")
OFFICIAL_ALPHAS = (2.0, 6.0, 12.0)
# The hard reset's operator M(s) is a [T, T, N] tensor per evaluation (``cumprod``, see
# kernels/fpt_dense.py); above this many bytes for one such tensor fpt_lif warns. Peak memory
# with gradients is about 14x that (measured, K = 3, float32, N = 4096: 3.6 GB at T = 128,
# 256 MiB per tensor; 0.9 GB at T = 64).
HARD_RESET_WARN_BYTES = 2**25  # 32 MiB


def default_alphas(K):
    """Forward slopes α_k for K evaluations: ``α_k = 2·min(3^k, 6)``.

    K = 3 gives the official (2, 6, 12) (``imagenet_train.py``: 2·(1, 3, 6)); other K follow the
    same rule (our extension, spec §2).

    Parameters
    ----------
    K : int
        Number of evaluations, >= 1.

    Returns
    -------
    tuple of K floats

    Raises
    ------
    ValueError, TypeError
        If `K` is not an int in [1, 10000].
    """
    K = check_K(K)
    # min(3^k, 6) == min(3^min(k, 2), 6): the cap is reached at k = 2, and 3.0**k itself
    # overflows a float from k = 647 on, while K >= T (the exact LIF) may well be that large.
    return tuple(2.0 * min(3.0 ** min(k, 2), 6.0) for k in range(K))


def _work_dtype(x):
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _warn_hard_reset_memory(T: int, N: int, dtype: torch.dtype) -> None:
    """Warn when the hard reset's [T, T, N] operator exceeds :data:`HARD_RESET_WARN_BYTES`."""
    size = T * T * N * torch.finfo(dtype).bits // 8
    if size <= HARD_RESET_WARN_BYTES:
        return
    warnings.warn(
        f"fpt_lif with reset='hard' builds a [T, T, N] = [{T}, {T}, {N}] tensor per evaluation "
        f"({size / 2**20:.0f} MiB each, about 14x that at peak with gradients; O(T²·N), "
        f"warned above {HARD_RESET_WARN_BYTES // 2**20} MiB). To train a hard-reset neuron "
        "(spikingjelly's default LIFNode) at this size use the exact LIF with BPTT, "
        "FPTLIF(..., sample='lif') or fpt_snn.use_exact_lif(model) (O(T·N) memory), or the "
        "soft reset (reset='soft', the official FPT neuron).",
        UserWarning,
        stacklevel=3,
    )


def fpt_lif(
    x,
    *,
    tau=2.0,
    v_threshold=1.0,
    K=3,
    alphas=None,
    spike_fn="sigmoid",
    sample="bernoulli",
    surrogate="official",
    convention="spikingjelly",
    method="auto",
    generator=None,
    reset="soft",
    v_reset=0.0,
    decay_input=False,
    v_init=None,
    return_state=False,
):
    r"""Spikes of a LIF layer by K parallel fixed-point evaluations over all T steps.

    ``C = Λx``; ``s⁰ = f_0(C − θ)``; ``s^k = f_k(C − θ A s^{k−1} − θ)`` for k = 1..K−1;
    output ``o = sample(s^{K−1})`` with a straight-through gradient. ``f_k = σ(α_k ·)`` (or H).
    Variants act on the drive ``x' = c·x`` (``c = 1/τ`` with `decay_input`) whose first step
    carries the initial membrane (``λ^t·V_0`` in ``C_t``); the hard reset iterates
    ``s^k = f_k(M(s^{k−1})x' − (θ − v_reset))`` with ``M(s)[t, j] = λ^{t−j}Π_{m=j}^{t−1}(1 − s_m)``
    (:mod:`fpt_snn.kernels.fpt_dense`; ours, exact at K >= T like the soft reset).

    $$
    C = \Lambda x, \qquad s^{0} = f_0(C - \theta), \qquad
    s^{k} = f_k\!\left(C - \theta A s^{k-1} - \theta\right), \quad k = 1, \dots, K - 1
    $$

    Parameters
    ----------
    x : Tensor, shape [T, ...], float32 | float64 | bfloat16 | float16
        Input current per step (already weighted), spikingjelly's multi-step layout.
    tau : float or Tensor, default=2.0
        Membrane time constant in steps, > 1 (official 2, λ = 1 − 1/τ = 0.5); a tensor with
        ``requires_grad`` makes τ learnable. A tensor broadcastable to one time step
        ``x.shape[1:]`` (trailing axes aligned) gives each neuron group its own τ (PLIF-style
        per-channel τ, Fang et al., ICCV 2021): [C] for [T, B, C] input, [C, 1, 1]
        (``tau.view(C, 1, 1)``) for [T, B, C, H, W]. It must cover every axis after the batch
        axis (``x.shape[2:]``) unless it holds one value: a [C] τ on [T, B, C, H, W] input
        would align with W, not C, and raises. Λ is then per neuron,
        ``Λ[t, j, n] = λ_n^{t−j}``, run as one T×T matrix per group (memory G·T², G = τ's
        entries). A learnable or per-neuron τ runs ``dense``/``chunked`` only.
    v_threshold : float or Tensor, default=1.0
        Threshold θ > 0 (official 1); a tensor broadcasts like `tau` (per neuron) and with
        ``requires_grad`` is learnable (``dense``/``chunked`` only).
    K : int, default=3
        Number of evaluations (1 initial + K−1 refinements; official 3), at most 10000. With
        ``spike_fn="heaviside"`` and K >= T the spikes are the LIF's in exact arithmetic (paper
        Sec. 4). In floating point the matrix form ``Λx − θAs`` rounds differently from the
        step-by-step recurrence, so a membrane that lands on the threshold within rounding
        (a tie: integer or quantised currents, e.g. x = [1, 1, 2] at τ = 5 reaches exactly θ
        = 1 at step 2 in the recurrence and 0.99999994 here) can fire differently, and the
        error propagates; generic real-valued currents give the LIF's spikes. Bit-exact LIF
        spikes come from :func:`fpt_snn.lif_sequential` (``FPTLIF(sample="lif")``,
        ``eval_sample="lif"``, :func:`fpt_snn.use_exact_lif`).
    alphas : sequence of K floats or Tensor, shape [K], optional
        Forward sigmoid slopes; default :func:`default_alphas` (official (2, 6, 12) at K = 3).
        A tensor with ``requires_grad`` makes them learnable.
    spike_fn : {"sigmoid", "heaviside"}, default="sigmoid"
        ``σ(α_k h)`` (official training path) or ``H(h)`` (exact spikes). The Heaviside
        backward is the sigmoid path's surrogate (slope ``max(1, α_k/3)``, or ``α_k`` with
        ``surrogate="exact"``), so `alphas` shape its gradient only, not its spikes.
    sample : {"bernoulli", "threshold", "none"}, default="bernoulli"
        Output: Bernoulli draw of ``s^{K−1}`` (official, also at eval: two calls differ unless
        `generator` is seeded), ``1[s >= 0.5]``, or the probabilities themselves.
        Straight-through gradient in every case.
    surrogate : {"official", "exact"}, default="official"
        Backward slope of each evaluation: ``max(1, α_k/3)`` (official) or ``α_k`` (the true
        derivative of the sigmoid path, for gradcheck).
    convention : {"spikingjelly", "snntorch"}, default="spikingjelly"
        Reset matrix ``A = Λ − I`` (fire on u >= θ) or ``A = (Λ − I)/λ`` (fire on u > θ).
    method : {"auto", "dense", "chunked", "fused", "triton"}, default="auto"
        Kernel: full T×T matmuls (the reference), 64-step blocks with carries, the fused CPU
        kernel (one autograd node over neuron tiles that stay in cache, block + low-rank
        operators from T = 64; :mod:`fpt_snn.kernels.fpt_fused`) or the fused Triton kernel.
        "auto": Triton on a CUDA GPU, else "fused" on the CPU (the fastest path measured at
        every benchmarked shape) where it applies, else "chunked" (T > 64) or "dense".
        ``reset="hard"`` runs dense only ("auto" picks it; the others raise) and, for K >= 2,
        builds a [T, T, N] tensor per evaluation: a ``UserWarning`` says so when one exceeds
        ``fpt_snn.fpt.HARD_RESET_WARN_BYTES`` (32 MiB; peak memory with gradients is about
        14x that). To train spikingjelly's default (hard-reset) neuron at such sizes use
        ``FPTLIF(sample="lif")`` or :func:`fpt_snn.use_exact_lif` (BPTT, O(T·N)). A per-neuron
        (non-0-d) `tau` or `v_threshold` runs dense or chunked ("fused"/"triton" raise), and
        so do a learnable τ, θ or α.
    generator : torch.Generator, optional
        RNG of the Bernoulli draw (default: torch's global RNG).
    reset : {"soft", "hard"}, default="soft"
        Subtract θ (official; spikingjelly ``v_reset=None``, snntorch ``"subtract"``) or set
        the membrane to `v_reset` (spikingjelly ``v_reset=float``, snntorch ``"zero"``).
    v_reset : float, default=0.0
        Hard-reset potential < `v_threshold`; 0 for the soft reset and for snntorch.
    decay_input : bool, default=False
        Scale the input by 1/τ (spikingjelly ``decay_input=True``, its default).
    v_init : Tensor, shape ``x.shape[1:]``, float, optional
        Membrane before step 1, as in :func:`fpt_snn.lif_sequential` (spikingjelly: post-reset
        V_0; snntorch: pre-reset mem); differentiable. Default: the libraries' initial state.
    return_state : bool, default=False
        Also return the membrane after step T (the LIF membrane driven by the output spikes,
        as :func:`fpt_snn.lif_sequential` returns it), to pass as `v_init` of the next chunk.
        With ``spike_fn="heaviside"`` and K >= T each chunk is the LIF (up to threshold ties,
        see `K`), so chunked calls equal one call on the whole sequence.

    Returns
    -------
    Tensor, shape and dtype of `x`
        Spikes (or probabilities with ``sample="none"``); half inputs are computed in float32.
    (Tensor, Tensor)
        With ``return_state=True``: that and the final membrane, shape ``x.shape[1:]``.

    Raises
    ------
    TypeError
        If `x` is not a float tensor.
    ValueError
        If `x` is 0-d, empty or non-finite; an entry of `tau` is <= 1 or non-finite; an entry
        of `v_threshold` is <= 0, non-finite or beyond the range of the compute dtype (float32
        for float32/half inputs); a tensor `tau`/`v_threshold` is empty, not float, on another
        device than `x` or does not broadcast to ``x.shape[1:]``; `K` < 1 or > 10000;
        `alphas` is not K positive values; a string option is unknown; `v_reset` is out of
        range (see :func:`fpt_snn.lif_sequential`); `v_init` has the wrong shape or device or
        is non-finite; ``method="chunked"|"fused"|"triton"`` with ``reset="hard"``; or
        ``method="fused"|"triton"`` with a per-neuron `tau` or `v_threshold`; a per-neuron
        `tau`/`v_threshold` with fewer axes than ``x.shape[2:]`` (and more than one value).
    RuntimeError
        If ``method="triton"`` cannot run here, or `tau`, `v_threshold` or `alphas` need a
        gradient with ``method="fused"|"triton"`` (message names the fallback).
    TypeError
        Also if `decay_input` or `return_state` is not a bool, or `v_init` not a float tensor.

    Notes
    -----
    Source: paper Sec. 4 and official ``FPT_adaptive_alpha``: K = 3, α = (2, 6, 12), Bernoulli
    output with identity gradient, backward slope ``max(1, α/3)``, gradients through every
    evaluation and the reset term. Λ is built and accumulated in float32 (or float64).

    Examples
    --------
    >>> import torch
    >>> x = torch.randn(16, 4, 10) + 0.6
    >>> fpt_lif(x, sample="threshold").shape
    torch.Size([16, 4, 10])
    """
    check_input(x)
    step_shape = x.shape[1:]
    tau = check_tau(tau, step_shape, device=x.device)
    theta = check_threshold(v_threshold, step_shape, device=x.device)
    K = check_K(K)
    alpha_values = check_alphas(alphas, K) or default_alphas(K)
    check_choice(spike_fn, "spike_fn", SPIKE_FNS)
    check_choice(sample, "sample", SAMPLES)
    check_choice(surrogate, "surrogate", SURROGATES)
    convention = check_convention(convention)
    check_choice(method, "method", METHODS)
    reset, v_reset = check_reset(reset, v_reset, theta, convention)
    decay_input = check_flag(decay_input, "decay_input")
    return_state = check_flag(return_state, "return_state")
    v_init = check_v_init(v_init, x)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"`generator` must be a torch.Generator, got {type(generator).__name__}")
    learn_alpha = isinstance(alphas, torch.Tensor) and alphas.requires_grad
    learn_tau = isinstance(tau, torch.Tensor) and tau.requires_grad
    learn_theta = isinstance(theta, torch.Tensor) and theta.requires_grad
    per_neuron = any([isinstance(p, torch.Tensor) and p.ndim > 0 for p in (tau, theta)])
    T = x.shape[0]
    kind = resolve_method(
        method, T, on_cuda=x.is_cuda, needs_param_grad=learn_alpha or learn_tau or learn_theta,
        hard_reset=reset == "hard", per_neuron=per_neuron,
    )  # fmt: skip
    work = _work_dtype(x)
    check_threshold_fits(theta, work)
    if kind == "dense" and reset == "hard" and K >= 2:
        _warn_hard_reset_memory(T, x.numel() // T, work)
    heaviside = spike_fn == "heaviside"
    strict = convention == "snntorch"
    alpha_arg = alphas.to(work) if learn_alpha else alpha_values
    # Neurons flattened to [T, N] with τ's groups contiguous (one Λ per group, _layout).
    layout = NeuronLayout(step_shape, tau)
    with torch.autocast(device_type=x.device.type, enabled=False):
        lam = decay_from_tau(tau)
        lam = lam.to(work) if isinstance(lam, torch.Tensor) else lam
        lam_n = layout.per_neuron(lam)  # float, [] or [N]
        theta = theta.to(work) if isinstance(theta, torch.Tensor) else theta
        theta_n = layout.per_neuron(theta)
        x2 = _drive(
            layout.flatten(x).to(work), lam_n, decay_input=decay_input,
            v_init=None if v_init is None else layout.flatten_step(v_init).to(work),
            theta=theta_n, reset=reset, v_reset=v_reset, convention=convention,
        )  # fmt: skip
        tau_g = layout.per_group(tau)  # one τ per group of the operators
        if kind == "triton":
            slopes = tuple(backward_slope(a, surrogate) for a in alpha_values)
            s = run_triton(
                x2, float(lam), float(theta), alpha_values, slopes,
                convention=convention, heaviside=heaviside, strict=strict,
            )  # fmt: skip
        elif kind == "fused":
            L, R = fused_operators(T, float(tau), convention, work, x.device)
            s = fpt_fused(
                x2, L, R, float(theta), alpha_values,
                heaviside=heaviside, strict=strict, surrogate=surrogate,
            )  # fmt: skip
        elif kind == "chunked":
            s = fpt_chunked(
                x2, layout.per_group(lam), theta_n, alpha_arg,
                convention=convention, heaviside=heaviside, strict=strict, surrogate=surrogate,
            )  # fmt: skip
        elif reset == "hard":
            L = lambda_matrix(T, tau_g, dtype=work, device=x.device)
            s = fpt_dense_hard(
                x2, L, theta_n - v_reset, alpha_arg,
                heaviside=heaviside, strict=strict, surrogate=surrogate,
            )  # fmt: skip
        else:
            L = lambda_matrix(T, tau_g, dtype=work, device=x.device)
            R = reset_matrix(T, tau_g, convention, dtype=work, device=x.device)
            s = fpt_dense(
                x2, L, R, -theta_n, theta_n, alpha_arg,
                heaviside=heaviside, strict=strict, surrogate=surrogate,
            )  # fmt: skip
        o = sample_spikes(s, sample, generator)
        if return_state:
            state = _final_state(x2, o, lam_n, theta_n, reset, v_reset, convention)
    out = layout.restore(o).to(x.dtype)
    if return_state:
        return out, layout.restore_step(state).to(x.dtype)
    return out
