"""``FPTLIF``: a drop-in multi-step LIF layer trained by fixed-point parallel iterations.

Axes: T time steps (axis ``time_dim``), N neurons (all other axes).

At eval the default output is still a Bernoulli draw (official), so two eval calls differ;
``eval_sample="threshold"``, ``"none"`` or ``"lif"`` are deterministic (see :meth:`FPTLIF.eval`).

Source: Feng et al., ICML 2025, Sec. 4; official ``imagenet_train.py::FPT_adaptive_alpha``
(fixed τ) and the seq-CIFAR ``FPT_learnable_alpha`` (learnable T×T decay and α) of WanjinVon/FPT.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from icml25_core import check_choice, check_scalar

from ._validation import (
    check_alphas,
    check_convention,
    check_flag,
    check_input,
    check_K,
    check_reset,
    check_T,
    check_tau,
    check_threshold,
    check_threshold_fits,
    check_v_init,
)
from .fpt import SAMPLES, default_alphas, fpt_lif
from .kernels import METHODS, fpt_dense
from .lif import lambda_matrix, lif_sequential
from .surrogate import sample_spikes

EVAL_SAMPLES = ("bernoulli", "threshold", "none", "lif")


def _tau_from_raw32(w: float) -> float:
    """τ = 1/σ(w) as the float32 parameter computes it (inf once σ(w) underflows)."""
    return float(1.0 / torch.sigmoid(torch.tensor(w, dtype=torch.float32)))


class FPTLIF(nn.Module):
    """Multi-step LIF neurons whose T steps run as K parallel evaluations.

    Parameters
    ----------
    T : int
        Number of time steps the layer is built for (>= 1).
    tau : float, default=2.0
        Membrane time constant in steps, > 1 (official 2).
    v_threshold : float, default=1.0
        Threshold θ > 0 (official 1).
    K : int, default=3
        Evaluations (official 3); see :func:`fpt_snn.fpt_lif`.
    alphas : sequence of K floats, optional
        Forward slopes; default (2, 6, 12) at K = 3 (official), else ``2·min(3^k, 6)``.
    sample : {"bernoulli", "threshold", "none"}, default="bernoulli"
        Output in training mode (official: Bernoulli with identity gradient).
    eval_sample : {"bernoulli", "threshold", "none", "lif"}, default="bernoulli"
        Output in eval mode (after ``.eval()``): a Bernoulli draw of ``s^{K−1}`` (official,
        **stochastic**: two eval calls on the same input differ), the deterministic
        ``1[s >= 0.5]``, the deterministic probabilities ``s^{K−1}`` themselves, or the exact
        sequential LIF (:func:`fpt_snn.lif_sequential`, deterministic) for deployment.
    learnable_tau : bool, default=False
        Learn τ through ``1/τ = sigmoid(w)`` (keeps τ > 1; init w = −ln(τ − 1)).
    learnable_lambda : bool, default=False
        Learn a T×T decay W (init Λ) and a per-step bias (init −θ), official seq-CIFAR option:
        ``h^k = tril(W)(x − θ s^{k−1}) + θ s^{k−1} + b``; W is masked lower-triangular in every
        forward (causal). spikingjelly convention only; runs the dense kernel (`method` must
        be "auto" or "dense").
    learnable_alpha : bool, default=False
        Learn one positive scale c on the slope schedule (``α_k = c · alphas_k``, init c = 1).
    convention : {"spikingjelly", "snntorch"}, default="spikingjelly"
    time_dim : int, default=0
        Axis of time in the input (0: spikingjelly [T, N, ...]; 1: batch-first [N, T, ...]).
    method : {"auto", "dense", "chunked", "triton"}, default="auto"
        Kernel, as in :func:`fpt_snn.fpt_lif` (``reset="hard"`` runs dense only).
    reset : {"soft", "hard"}, default="soft"
        Subtract θ (official; spikingjelly ``v_reset=None``) or set to `v_reset`
        (spikingjelly ``LIFNode``'s default, snntorch ``"zero"``); see :func:`fpt_snn.fpt_lif`.
    v_reset : float, default=0.0
        Hard-reset potential < `v_threshold` (0 for the soft reset and for snntorch).
    decay_input : bool, default=False
        Scale the input by 1/τ (spikingjelly ``LIFNode``'s default ``decay_input=True``).
        spikingjelly's default neuron is ``FPTLIF(T, reset="hard", decay_input=True)``.

    Raises
    ------
    ValueError, TypeError
        On out-of-range numbers (also a `v_threshold`, or a learnable `tau`, beyond float32's
        range), unknown options, ``learnable_lambda`` with the snntorch convention, with
        ``learnable_tau``, with ``eval_sample="lif"``, with the hard reset or `decay_input`,
        or with a `method` other than "auto" or "dense"; a `v_reset` out of range (see
        :func:`fpt_snn.lif_sequential`); ``method="chunked"|"triton"`` with the hard reset.

    Notes
    -----
    Eval determinism: with the default ``eval_sample="bernoulli"`` (the official code samples
    at eval too) ``layer.eval()`` still draws random spikes, so two eval calls on the same
    input differ; use ``eval_sample="threshold"`` or ``"none"`` (deterministic FPT output) or
    ``"lif"`` (the exact LIF) for reproducible evaluation.

    Stateless across calls: ``reset()`` is a no-op (spikingjelly's ``functional.reset_net``
    works); for streaming, pass the state yourself: ``forward(x, v_init=v,
    return_state=True)`` returns the final membrane to feed to the next chunk. Λ is rebuilt
    from τ and T in each forward, so a checkpoint holds only learnables.
    Bernoulli draws use torch's global RNG: seed each rank.

    Examples
    --------
    >>> import torch
    >>> layer = FPTLIF(T=8)
    >>> layer(torch.randn(8, 2, 5)).shape
    torch.Size([8, 2, 5])
    """

    alpha_base: torch.Tensor  # registered buffer: the K slopes before the learnable scale

    def __init__(
        self,
        T,
        tau=2.0,
        v_threshold=1.0,
        K=3,
        alphas=None,
        sample="bernoulli",
        eval_sample="bernoulli",
        learnable_tau=False,
        learnable_lambda=False,
        learnable_alpha=False,
        convention="spikingjelly",
        time_dim=0,
        method="auto",
        reset="soft",
        v_reset=0.0,
        decay_input=False,
    ):
        super().__init__()
        self.T = check_T(T)
        tau = check_tau(tau)
        if isinstance(tau, torch.Tensor):
            raise TypeError("`tau` must be a float; use learnable_tau=True to learn it")
        self.v_threshold = check_threshold(v_threshold)
        check_threshold_fits(self.v_threshold, torch.float32)  # parameters/buffers are float32
        self.K = check_K(K)
        base = check_alphas(alphas, self.K) or default_alphas(self.K)
        self.sample = check_choice(sample, "sample", SAMPLES)
        self.eval_sample = check_choice(eval_sample, "eval_sample", EVAL_SAMPLES)
        self.convention = check_convention(convention)
        check_scalar(time_dim, "time_dim", kind=int)
        self.time_dim = int(time_dim)
        self.method = check_choice(method, "method", METHODS)
        self.reset_mode, self.v_reset = check_reset(
            reset, v_reset, self.v_threshold, self.convention
        )
        self.decay_input = check_flag(decay_input, "decay_input")
        if self.reset_mode == "hard" and method in ("chunked", "triton"):
            raise ValueError(
                f"`method`={method!r} cannot run reset='hard' (dense only); use 'auto' or 'dense'"
            )
        for flag in ("learnable_tau", "learnable_lambda", "learnable_alpha"):
            if not isinstance(locals()[flag], bool):
                raise TypeError(f"`{flag}` must be a bool, got {type(locals()[flag]).__name__}")
        if learnable_lambda and (
            learnable_tau or convention != "spikingjelly" or reset != "soft" or decay_input
        ):
            raise ValueError(
                "`learnable_lambda` needs convention='spikingjelly', reset='soft', "
                "decay_input=False and learnable_tau=False"
            )
        if learnable_lambda and eval_sample == "lif":
            raise ValueError("`eval_sample`='lif' needs a scalar tau, not learnable_lambda")
        if learnable_lambda and method not in ("auto", "dense"):
            raise ValueError(
                f"`method`={method!r} cannot run learnable_lambda (a learned T×T decay has no "
                "chunked or Triton kernel); use method='auto' or 'dense'"
            )
        if learnable_tau and not math.isfinite(_tau_from_raw32(-math.log(tau - 1.0))):
            raise ValueError(
                f"`tau` must be small enough that 1/tau is representable in float32 with "
                f"learnable_tau=True (1/tau = sigmoid(w), w float32), got {tau}"
            )
        self.learnable_lambda = learnable_lambda
        self.learnable_tau = learnable_tau
        self.learnable_alpha = learnable_alpha
        self.register_buffer("alpha_base", torch.tensor(base), persistent=False)
        self._tau = tau
        self.tau_raw = nn.Parameter(torch.tensor(-math.log(tau - 1.0))) if learnable_tau else None
        self.log_alpha_scale = nn.Parameter(torch.zeros(())) if learnable_alpha else None
        if learnable_lambda:
            self.weight = nn.Parameter(lambda_matrix(self.T, tau))
            self.bias = nn.Parameter(torch.full((self.T,), -self.v_threshold))

    @property
    def tau(self):
        """τ: a float, or a 0-d tensor (differentiable) when learnable."""
        if self.tau_raw is None:
            return self._tau
        return 1.0 / torch.sigmoid(self.tau_raw)

    def alphas(self):
        """The K forward slopes in use (a tensor; differentiable when learnable)."""
        if self.log_alpha_scale is None:
            return self.alpha_base
        return torch.exp(self.log_alpha_scale) * self.alpha_base

    def eval(self):
        """Switch to eval mode, where the output follows `eval_sample` (returns ``self``).

        The default ``eval_sample="bernoulli"`` keeps the official Bernoulli draw at eval, so
        two eval calls on the same input give different spikes. For deterministic evaluation
        build the layer with ``eval_sample="threshold"`` (``1[s >= 0.5]``), ``"none"`` (the
        probabilities ``s^{K−1}``) or ``"lif"`` (the exact sequential LIF), or pass a seeded
        ``generator`` to :func:`fpt_snn.fpt_lif`.

        Returns
        -------
        FPTLIF
            ``self``, as :meth:`torch.nn.Module.eval`.
        """
        return super().eval()

    def reset(self):
        """No state to reset (FPT is stateless across calls); kept for spikingjelly's API."""

    def extra_repr(self):
        text = (
            f"T={self.T}, tau={self._tau}, v_threshold={self.v_threshold}, K={self.K}, "
            f"sample={self.sample!r}, eval_sample={self.eval_sample!r}, "
            f"convention={self.convention!r}, time_dim={self.time_dim}"
        )
        if self.reset_mode == "hard":
            text += f", reset='hard', v_reset={self.v_reset}"
        text += ", decay_input=True" if self.decay_input else ""
        flags = ("learnable_tau", "learnable_lambda", "learnable_alpha")
        text += "".join(f", {flag}=True" for flag in flags if getattr(self, flag))
        return text + (f", method={self.method!r}" if self.method != "auto" else "")

    def forward(self, x, v_init=None, return_state=False):
        """Spikes for input currents `x`.

        Parameters
        ----------
        x : Tensor, float32 | float64 | bfloat16 | float16
            Shape with ``x.shape[time_dim] == T``.
        v_init : Tensor, optional
            Membrane before the first step, shaped like `x` without its time axis (as in
            :func:`fpt_snn.lif_sequential`); default: the resting state.
        return_state : bool, default=False
            Also return the final membrane (shape of `v_init`), to pass as `v_init` of the
            next chunk of a long sequence (exact at K >= T with the Heaviside/``"lif"`` path).

        Returns
        -------
        Tensor, shape and dtype of `x`
            Spikes in {0, 1} (probabilities with ``sample="none"`` in training or
            ``eval_sample="none"`` in eval mode). In eval mode with the default
            ``eval_sample="bernoulli"`` the spikes are random: two calls differ.
        (Tensor, Tensor)
            With ``return_state=True``: the spikes and the final membrane.

        Raises
        ------
        TypeError, ValueError
            If `x` is not a float tensor, is empty or non-finite, or its time axis is not T;
            if `v_init` is not a float tensor of that shape on x's device, or
            `return_state` is not a bool; `v_init`/`return_state` with ``learnable_lambda``.
        """
        check_input(x, time_dim=self.time_dim, T=self.T)
        v_init = check_v_init(v_init, x, time_dim=self.time_dim)
        return_state = check_flag(return_state, "return_state")
        xt = x.movedim(self.time_dim, 0)
        mode = self.sample if self.training else self.eval_sample
        variant = {
            "v_threshold": self.v_threshold, "convention": self.convention,
            "reset": self.reset_mode, "v_reset": self.v_reset, "decay_input": self.decay_input,
            "v_init": v_init, "return_state": return_state,
        }  # fmt: skip
        if mode == "lif":
            tau = float(torch.as_tensor(self.tau).detach())
            result = lif_sequential(xt, tau=tau, **variant)
        elif self.learnable_lambda:
            if v_init is not None or return_state:
                raise ValueError("`v_init`/`return_state` are not available with learnable_lambda")
            result = self._learned_decay(xt, mode)
        else:
            alphas = self.alphas()
            result = fpt_lif(
                xt, tau=self.tau, K=self.K,
                alphas=alphas if alphas.requires_grad else tuple(alphas.tolist()),
                sample=mode, method=self.method, **variant,
            )  # fmt: skip
        if return_state:
            return result[0].movedim(0, self.time_dim), result[1]
        return result.movedim(0, self.time_dim)

    def _learned_decay(self, xt, mode):
        """Dense FPT with the learned, causally masked decay (official seq-CIFAR option)."""
        work = torch.float64 if xt.dtype == torch.float64 else torch.float32
        with torch.autocast(device_type=xt.device.type, enabled=False):
            W = torch.tril(self.weight).to(work)
            eye = torch.eye(self.T, dtype=work, device=xt.device)
            s = fpt_dense(
                xt.reshape(self.T, -1).to(work), W, W - eye, self.bias.to(work),
                self.v_threshold, self.alphas().to(work),
            )  # fmt: skip
            o = sample_spikes(s, mode)
        return o.reshape(xt.shape).to(xt.dtype)
