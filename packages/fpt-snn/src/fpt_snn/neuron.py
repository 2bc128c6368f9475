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
from .surrogate import sample_spikes, sigmoid_surrogate

EVAL_SAMPLES = ("bernoulli", "threshold", "none", "lif")
TRAIN_SAMPLES = (*SAMPLES, "lif")  # "lif": exact-LIF fine-tuning (BPTT), see use_exact_lif
LIF_SURROGATE_SLOPE = 4.0  # spikingjelly Sigmoid default = official FPT slope max(1, 12/3)
_EPS32 = torch.finfo(torch.float32).eps


def _detached(value):
    """A tensor without its autograd graph (a float unchanged): the exact LIF of eval mode."""
    return value.detach() if isinstance(value, torch.Tensor) else value


def _tau_from_raw32(w: torch.Tensor) -> float:
    """Largest τ = 1/σ(w) as the float32 parameter computes it (inf once σ(w) underflows)."""
    return float((1.0 / torch.sigmoid(w.to(torch.float32))).max())


def _per_channel(value, name: str, learnable: bool, flag: str):
    """A real number as a float; a sequence or 1-D tensor of C numbers as a [C] float64 tensor.

    Raises
    ------
    TypeError
        If `value` is neither (a string, a bool, a 2-D tensor, a non-float tensor, ...).
    ValueError
        If the sequence is empty, or a tensor with ``requires_grad`` is passed without the
        layer's `flag` (the layer copies the values: the tensor itself would not be trained).
    """
    if isinstance(value, torch.Tensor):
        if value.requires_grad and not learnable:
            raise ValueError(
                f"`{name}` is a tensor with requires_grad=True, but FPTLIF copies its values "
                f"into a fixed buffer (your tensor would get no gradient): pass {flag}=True to "
                f"learn it (the layer then owns the parameter), or pass {name}.detach() to "
                "keep it fixed"
            )
        if value.ndim == 0:
            raise TypeError(f"`{name}` must be a float or C per-channel values, got a 0-d tensor")
        values = value.detach().cpu().to(torch.float64)
        if value.ndim != 1 or not value.is_floating_point():
            raise TypeError(
                f"`{name}` must be a float or a 1-D float tensor of C per-channel values, got "
                f"shape {tuple(value.shape)} dtype {value.dtype}"
            )
    elif isinstance(value, list | tuple):
        if any(isinstance(v, bool) or not isinstance(v, int | float) for v in value):
            raise TypeError(f"`{name}` must hold real numbers, got {value!r}")
        values = torch.tensor([float(v) for v in value], dtype=torch.float64)
    else:
        return value  # a scalar: checked by check_tau / check_threshold
    if values.numel() == 0:
        raise ValueError(f"`{name}` must hold at least one per-channel value, got {value!r}")
    return values


def _inverse_tau(w: torch.Tensor) -> torch.Tensor:
    """1/τ = sigmoid(w) (PLIF), kept in [tiny, 1 − eps] of w's dtype so that τ > 1 and finite.

    In float32 sigmoid(w) rounds to 1 from w ≈ 17 (τ = 1, λ = 0: rejected by every entry
    point) and 1/sigmoid(w) overflows below w ≈ −88; an optimizer step can reach either. The
    clamp leaves every other value unchanged (its gradient is 0 only at the bounds, where
    sigmoid's own derivative is below 1.2e-7).
    """
    info = torch.finfo(w.dtype)
    return torch.sigmoid(w).clamp(min=info.tiny, max=1.0 - info.eps)


# θ = softplus(w) + this floor: softplus underflows to 0 below w ≈ −104 in float32, and θ must
# stay a positive normal float32 (check_threshold_fits); the floor changes no other value.
THRESHOLD_FLOOR = torch.finfo(torch.float32).tiny


def _softplus_inverse(theta: torch.Tensor) -> torch.Tensor:
    """w with softplus(w) = θ > 0: ``w = θ + log(−expm1(−θ))`` (stable for small and large θ)."""
    return theta + torch.log(-torch.expm1(-theta))


class FPTLIF(nn.Module):
    """Multi-step LIF neurons whose T steps run as K parallel evaluations.

    Parameters
    ----------
    T : int
        Number of time steps the layer is built for (>= 1).
    tau : float or sequence of C floats or Tensor, shape [C], default=2.0
        Membrane time constant in steps, > 1 (official 2). C values give one τ per channel
        (PLIF-style; Fang et al., "Incorporating Learnable Membrane Time Constant to Enhance
        Learning of Spiking Neural Networks", ICCV 2021), along axis `channel_dim` of the input.
    v_threshold : float or sequence of C floats or Tensor, shape [C], default=1.0
        Threshold θ > 0 (official 1); C values give one θ per channel (the same C as `tau`
        when both are per channel).
    K : int, default=3
        Evaluations (official 3); see :func:`fpt_snn.fpt_lif`.
    alphas : sequence of K floats, optional
        Forward slopes; default (2, 6, 12) at K = 3 (official), else ``2·min(3^k, 6)``.
    sample : {"bernoulli", "threshold", "none", "lif"}, default="bernoulli"
        Output in training mode (official: Bernoulli with identity gradient). ``"lif"`` trains
        the exact sequential LIF by BPTT instead (:func:`fpt_snn.lif_sequential` with
        `lif_surrogate`; gradients reach a learnable τ and θ): the exact-LIF fine-tuning of
        :func:`use_exact_lif`, which closes the gap between FPT training and LIF deployment.
    eval_sample : {"bernoulli", "threshold", "none", "lif"}, default="bernoulli"
        Output in eval mode (after ``.eval()``): a Bernoulli draw of ``s^{K−1}`` (official,
        **stochastic**: two eval calls on the same input differ), the deterministic
        ``1[s >= 0.5]``, the deterministic probabilities ``s^{K−1}`` themselves, or the exact
        sequential LIF (:func:`fpt_snn.lif_sequential`, deterministic) for deployment.
    learnable_tau : bool, default=False
        Learn τ through ``1/τ = sigmoid(w)`` (init w = −ln(τ − 1)), PLIF's parametrisation
        (Fang et al., ICCV 2021, Eq. 5; spikingjelly ``ParametricLIFNode``); one w per channel
        when `tau` has C values, else one for the layer. sigmoid(w) is clamped to
        ``[tiny, 1 − eps]`` of w's dtype, which keeps τ > 1 and finite in float32 whatever the
        optimizer does to w (sigmoid rounds to 1 from w ≈ 17); an initial `tau` so close to 1
        that its float32 parametrisation is already clamped (τ − 1 < 6e-8) raises.
    learnable_threshold : bool, default=False
        Learn θ through ``θ = softplus(w) + tiny = ln(1 + e^w) + tiny`` (init
        ``w = θ + ln(1 − e^{−θ})``; tiny = float32's smallest normal, 1.2e-38, keeps θ > 0
        where softplus underflows, below w ≈ −104, and changes no other value, so the gradient
        never vanishes at a bound); one w per channel when `v_threshold` has C values. With
        ``reset="hard"`` the learned θ must stay above `v_reset`: a forward where it has
        drifted to ``θ <= v_reset`` raises ``RuntimeError`` naming the learned value.
        Learnable thresholds as in LTMD (Wang et al., "LTMD: Learning Improvement of Spiking
        Neural Networks with Learnable Thresholding Neurons and Moderate Dropout", NeurIPS
        2022); softplus for positivity as in Dugas et al., "Incorporating Second-Order
        Functional Knowledge for Better Option Pricing", NeurIPS 2000. The gradient reaches
        w through the threshold of every evaluation (``h = C − θ − θAs``) and, with
        ``reset="soft"``, through the subtracted θ.
    learnable_lambda : bool, default=False
        Learn a T×T decay W (init Λ) and a per-step bias (init −θ), official seq-CIFAR option:
        ``h^k = tril(W)(x − θ s^{k−1}) + θ s^{k−1} + b``; W is masked lower-triangular in every
        forward (causal). spikingjelly convention only, with one scalar, fixed τ and θ; runs
        the dense kernel (`method` must be "auto" or "dense").
    learnable_alpha : bool, default=False
        Learn one positive scale c on the slope schedule (``α_k = c · alphas_k``, init c = 1).
    convention : {"spikingjelly", "snntorch"}, default="spikingjelly"
    time_dim : int, default=0
        Axis of time in the input (0: spikingjelly [T, N, ...]; 1: batch-first [N, T, ...]).
    channel_dim : int, default=2
        Axis of the input (counted with its time axis) that holds the C channels of a
        per-channel `tau` / `v_threshold`: 2 for spikingjelly's [T, B, C] and [T, B, C, H, W]
        and for batch-first [B, T, C, ...]; use -1 for channels-last. Unused with scalars.
    method : {"auto", "dense", "chunked", "fused", "triton"}, default="auto"
        Kernel, as in :func:`fpt_snn.fpt_lif` (``reset="hard"`` runs dense only; a
        per-channel or learnable τ or θ runs dense or chunked, "fused"/"triton" raise).
    reset : {"soft", "hard"}, default="soft"
        Subtract θ (official; spikingjelly ``v_reset=None``) or set to `v_reset`
        (spikingjelly ``LIFNode``'s default, snntorch ``"zero"``); see :func:`fpt_snn.fpt_lif`.
    v_reset : float, default=0.0
        Hard-reset potential < `v_threshold` (0 for the soft reset and for snntorch).
    decay_input : bool, default=False
        Scale the input by 1/τ (spikingjelly ``LIFNode``'s default ``decay_input=True``).
        spikingjelly's default neuron is ``FPTLIF(T, reset="hard", decay_input=True)``.
    lif_surrogate : callable, optional
        Spike function of the exact-LIF training path (``sample="lif"``): Heaviside forward,
        surrogate backward. Default ``sigmoid_surrogate(4.0)``: spikingjelly's
        ``surrogate.Sigmoid()`` default slope, the spec's BPTT baseline, and the official FPT
        backward slope of the last evaluation at K = 3 (``max(1, 12/3) = 4``).

    Raises
    ------
    ValueError, TypeError
        On out-of-range numbers (every entry of a per-channel `tau` > 1 and `v_threshold`
        > 0, finite; also a `v_threshold`, or a learnable `tau`, beyond float32's range), a
        `tau` / `v_threshold` that is not a float or 1-D C values (TypeError), a tensor
        `tau` / `v_threshold` with ``requires_grad`` without ``learnable_tau`` /
        ``learnable_threshold`` (it would not be trained), a `tau` that is 1 in float32
        (fixed per channel, or learnable through sigmoid), per-channel
        `tau` and `v_threshold` of different C, unknown options, ``learnable_lambda`` with
        the snntorch convention, with ``learnable_tau`` or ``learnable_threshold``, with a
        per-channel `tau` or `v_threshold`, with ``eval_sample="lif"``, with the hard reset
        or `decay_input`, or with a `method` other than "auto" or "dense"; a `v_reset` out of
        range (see :func:`fpt_snn.lif_sequential`); ``method="chunked"|"triton"`` with the
        hard reset; ``method="triton"`` with a per-channel or learnable τ or θ.

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
    >>> plif = FPTLIF(T=8, tau=[2.0, 3.0, 4.0, 5.0, 6.0], learnable_tau=True,
    ...               learnable_threshold=True)  # one τ per channel (axis 2), learnable θ
    >>> plif(torch.randn(8, 2, 5)).shape
    torch.Size([8, 2, 5])
    """

    alpha_base: torch.Tensor  # registered buffer: the K slopes before the learnable scale
    tau_channels: torch.Tensor | None  # non-persistent buffer: a fixed per-channel τ
    threshold_channels: torch.Tensor | None  # non-persistent buffer: a fixed per-channel θ

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
        learnable_threshold=False,
        channel_dim=2,
        lif_surrogate=None,
    ):
        super().__init__()
        self.T = check_T(T)
        tau = check_tau(_per_channel(tau, "tau", learnable_tau is True, "learnable_tau"))
        theta = check_threshold(
            _per_channel(
                v_threshold, "v_threshold", learnable_threshold is True, "learnable_threshold"
            )
        )
        if isinstance(tau, torch.Tensor) and not bool((tau.float() > 1).all()):
            raise ValueError(
                "`tau` must be > 1 in float32 (the layer's buffers are float32), got "
                f"{tau.tolist()}, which rounds to {tau.float().tolist()}"
            )
        check_threshold_fits(theta, torch.float32)  # parameters/buffers are float32
        sizes = {name: v.numel() for name, v in (("tau", tau), ("v_threshold", theta))
                 if isinstance(v, torch.Tensor)}  # fmt: skip
        if len(set(sizes.values())) > 1:
            raise ValueError(
                f"`tau` and `v_threshold` must have the same number of channels, got {sizes}"
            )
        check_scalar(channel_dim, "channel_dim", kind=int)
        self.channel_dim = int(channel_dim)
        self.K = check_K(K)
        base = check_alphas(alphas, self.K) or default_alphas(self.K)
        self.sample = check_choice(sample, "sample", TRAIN_SAMPLES)
        if lif_surrogate is not None and not callable(lif_surrogate):
            raise TypeError(
                f"`lif_surrogate` must be callable or None, got {type(lif_surrogate).__name__}"
            )
        self.lif_surrogate = lif_surrogate or sigmoid_surrogate(LIF_SURROGATE_SLOPE)
        self.eval_sample = check_choice(eval_sample, "eval_sample", EVAL_SAMPLES)
        self.convention = check_convention(convention)
        check_scalar(time_dim, "time_dim", kind=int)
        self.time_dim = int(time_dim)
        self.method = check_choice(method, "method", METHODS)
        self.reset_mode, self.v_reset = check_reset(reset, v_reset, theta, self.convention)
        self.decay_input = check_flag(decay_input, "decay_input")
        if self.reset_mode == "hard" and method in ("chunked", "fused", "triton"):
            raise ValueError(
                f"`method`={method!r} cannot run reset='hard' (dense only); use 'auto' or 'dense'"
            )
        flags = ("learnable_tau", "learnable_lambda", "learnable_alpha", "learnable_threshold")
        for flag in flags:
            if not isinstance(locals()[flag], bool):
                raise TypeError(f"`{flag}` must be a bool, got {type(locals()[flag]).__name__}")
        if learnable_lambda and (
            learnable_tau or learnable_threshold or sizes or convention != "spikingjelly"
            or reset != "soft" or decay_input
        ):  # fmt: skip
            raise ValueError(
                "`learnable_lambda` needs convention='spikingjelly', reset='soft', "
                "decay_input=False, learnable_tau=False, learnable_threshold=False and a "
                "scalar tau and v_threshold"
            )
        if sizes and method in ("triton", "fused"):
            raise ValueError(
                f"`method`={method!r} takes one scalar tau and v_threshold: use 'auto', "
                "'chunked' or 'dense' with a per-channel tau or v_threshold"
            )
        if learnable_lambda and eval_sample == "lif":
            raise ValueError("`eval_sample`='lif' needs a scalar tau, not learnable_lambda")
        if learnable_lambda and sample == "lif":
            raise ValueError("`sample`='lif' needs a scalar tau, not learnable_lambda")
        if learnable_lambda and method not in ("auto", "dense"):
            raise ValueError(
                f"`method`={method!r} cannot run learnable_lambda (a learned T×T decay has no "
                "chunked or Triton kernel); use method='auto' or 'dense'"
            )
        tau_t = torch.as_tensor(tau, dtype=torch.float64)
        tau_w = -torch.log(tau_t - 1.0)  # PLIF: 1/τ = sigmoid(w), w = −ln(τ − 1)
        if learnable_tau and not math.isfinite(_tau_from_raw32(tau_w)):
            raise ValueError(
                f"`tau` must be small enough that 1/tau is representable in float32 with "
                f"learnable_tau=True (1/tau = sigmoid(w), w float32), got {tau}"
            )
        if learnable_tau and float(torch.sigmoid(tau_w.float()).max()) > 1.0 - _EPS32:
            raise ValueError(
                f"`tau` is too close to 1 for learnable_tau=True: 1/tau = sigmoid(w) with w = "
                f"-ln(tau - 1) rounds to 1 in float32 (tau = 1, no leak), got {tau}; use "
                "tau >= 1 + 1e-7, or learnable_tau=False"
            )
        self.learnable_lambda = learnable_lambda
        self.learnable_tau = learnable_tau
        self.learnable_alpha = learnable_alpha
        self.learnable_threshold = learnable_threshold
        self.register_buffer("alpha_base", torch.tensor(base), persistent=False)
        # Fixed values: floats, or non-persistent float32 buffers of C values (they follow
        # .to()/.double() and stay out of checkpoints, which hold only learnables).
        self._tau = tau if isinstance(tau, float) else tuple(tau.tolist())
        self._theta = theta if isinstance(theta, float) else tuple(theta.tolist())
        self.register_buffer(
            "tau_channels", None if isinstance(tau, float) else tau.float(), persistent=False
        )
        self.register_buffer(
            "threshold_channels",
            None if isinstance(theta, float) else theta.float(),
            persistent=False,
        )
        self.tau_raw = nn.Parameter(tau_w.float()) if learnable_tau else None
        theta_w = _softplus_inverse(torch.as_tensor(theta, dtype=torch.float64))
        self.threshold_raw = nn.Parameter(theta_w.float()) if learnable_threshold else None
        self.log_alpha_scale = nn.Parameter(torch.zeros(())) if learnable_alpha else None
        if learnable_lambda:
            self.weight = nn.Parameter(lambda_matrix(self.T, tau))
            self.bias = nn.Parameter(torch.full((self.T,), -self.v_threshold))

    @property
    def tau(self):
        """τ: a float, or a tensor of shape [] or [C] (differentiable when learnable)."""
        if self.tau_raw is not None:
            return 1.0 / _inverse_tau(self.tau_raw)
        return self._tau if self.tau_channels is None else self.tau_channels

    @property
    def v_threshold(self):
        """θ: a float, or a tensor of shape [] or [C] (differentiable when learnable)."""
        if self.threshold_raw is not None:
            return torch.nn.functional.softplus(self.threshold_raw) + THRESHOLD_FLOOR
        return self._theta if self.threshold_channels is None else self.threshold_channels

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
            f"T={self.T}, tau={self._tau}, v_threshold={self._theta}, K={self.K}, "
            f"sample={self.sample!r}, eval_sample={self.eval_sample!r}, "
            f"convention={self.convention!r}, time_dim={self.time_dim}"
        )
        if self.reset_mode == "hard":
            text += f", reset='hard', v_reset={self.v_reset}"
        text += ", decay_input=True" if self.decay_input else ""
        if self.tau_channels is not None or self.threshold_channels is not None:
            text += f", channel_dim={self.channel_dim}"
        flags = ("learnable_tau", "learnable_lambda", "learnable_alpha", "learnable_threshold")
        text += "".join(f", {flag}=True" for flag in flags if getattr(self, flag))
        return text + (f", method={self.method!r}" if self.method != "auto" else "")

    def forward(self, x, v_init=None, return_state=False):
        """Spikes for input currents `x`.

        Parameters
        ----------
        x : Tensor, float32 | float64 | bfloat16 | float16
            Shape with ``x.shape[time_dim] == T``; any length where the exact LIF runs
            (``sample="lif"`` in training, ``eval_sample="lif"`` in eval mode), e.g. the
            shorter last chunk of a stream.
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
            ``eval_sample="none"`` in eval mode), contiguous (``.view`` works). In eval mode
            with the default ``eval_sample="bernoulli"`` the spikes are random: two calls
            differ.
        (Tensor, Tensor)
            With ``return_state=True``: the spikes and the final membrane.

        Raises
        ------
        TypeError, ValueError
            If `x` is not a float tensor, is empty or non-finite, or its time axis is not T;
            if `v_init` is not a float tensor of that shape on x's device, or
            `return_state` is not a bool; `v_init`/`return_state` with ``learnable_lambda``;
            with a per-channel τ or θ, if `channel_dim` is not an axis of `x` other than its
            time axis or ``x.shape[channel_dim]`` is not C.
        RuntimeError
            With ``learnable_threshold`` and ``reset="hard"``, if the learned θ has drifted to
            ``v_reset`` or below (the message gives its value and what to do).
        """
        mode = self.sample if self.training else self.eval_sample
        check_input(x, time_dim=self.time_dim, T=None if mode == "lif" else self.T)
        v_init = check_v_init(v_init, x, time_dim=self.time_dim)
        return_state = check_flag(return_state, "return_state")
        xt = x.movedim(self.time_dim, 0)
        tau, theta = self._per_neuron(self.tau, x), self._per_neuron(self.v_threshold, x)
        if self.threshold_raw is not None and self.reset_mode == "hard":
            self._check_learned_threshold(theta)
        variant = {
            "v_threshold": theta, "convention": self.convention,
            "reset": self.reset_mode, "v_reset": self.v_reset, "decay_input": self.decay_input,
            "v_init": v_init, "return_state": return_state,
        }  # fmt: skip
        if mode == "lif" and self.training:  # exact-LIF fine-tuning: BPTT with a surrogate
            result = lif_sequential(xt, tau=tau, surrogate=self.lif_surrogate, **variant)
        elif mode == "lif":
            detached = {**variant, "v_threshold": _detached(theta)}
            result = lif_sequential(xt, tau=_detached(tau), **detached)
        elif self.learnable_lambda:
            if v_init is not None or return_state:
                raise ValueError("`v_init`/`return_state` are not available with learnable_lambda")
            result = self._learned_decay(xt, mode)
        else:
            alphas = self.alphas()
            result = fpt_lif(
                xt, tau=tau, K=self.K,
                alphas=alphas if alphas.requires_grad else tuple(alphas.tolist()),
                sample=mode, method=self.method, **variant,
            )  # fmt: skip
        # Laid out like a fresh tensor of x's shape (batch-first input: movedim is a view).
        if return_state:
            return result[0].movedim(0, self.time_dim).contiguous(), result[1]
        return result.movedim(0, self.time_dim).contiguous()

    def _check_learned_threshold(self, theta):
        """The learned θ must stay above `v_reset` under the hard reset (it may drift there)."""
        lowest = float(theta.detach().min())
        if lowest > self.v_reset:
            return
        raise RuntimeError(
            f"the learned threshold (learnable_threshold=True) drifted to v_threshold = "
            f"{lowest:.6g} <= v_reset = {self.v_reset:g} during training; the hard reset needs "
            "v_threshold > v_reset (the neuron would fire at rest). Lower the learning rate "
            "or v_reset, or keep it above after each step, e.g. `with torch.no_grad(): "
            "layer.threshold_raw.clamp_(min=w)` with softplus(w) > v_reset"
        )

    def _per_neuron(self, value, x):
        """A [C] τ or θ reshaped to broadcast over one time step of ``x.movedim(time_dim, 0)``.

        Scalars (floats, 0-d tensors) pass unchanged. The C values go on `channel_dim` of `x`
        (its own layout); dropping the time axis leaves a shape broadcastable to
        ``x.shape`` without time, as :func:`fpt_snn.fpt_lif` takes it.
        """
        if not isinstance(value, torch.Tensor) or value.ndim == 0:
            return value
        ndim = x.ndim
        if not -ndim <= self.channel_dim < ndim or self.channel_dim % ndim == self.time_dim % ndim:
            raise ValueError(
                f"`channel_dim`={self.channel_dim} must index a non-time axis of the input "
                f"(shape {tuple(x.shape)}, time_dim={self.time_dim})"
            )
        channels = value.shape[0]
        if x.shape[self.channel_dim] != channels:
            raise ValueError(
                f"`channel_dim`={self.channel_dim}: the input has {x.shape[self.channel_dim]} "
                f"channels there (shape {tuple(x.shape)}), the layer's tau/v_threshold {channels}"
            )
        shape = [1] * ndim
        shape[self.channel_dim] = channels
        return value.to(x.device).reshape(shape).movedim(self.time_dim, 0)[0]

    def _learned_decay(self, xt, mode):
        """Dense FPT with the learned, causally masked decay (official seq-CIFAR option)."""
        work = torch.float64 if xt.dtype == torch.float64 else torch.float32
        with torch.autocast(device_type=xt.device.type, enabled=False):
            W = torch.tril(self.weight).to(work)
            eye = torch.eye(self.T, dtype=work, device=xt.device)
            s = fpt_dense(
                xt.reshape(self.T, -1).to(work), W, W - eye, self.bias.to(work)[:, None],
                self.v_threshold, self.alphas().to(work),
            )  # fmt: skip
            o = sample_spikes(s, mode)
        return o.reshape(xt.shape).to(xt.dtype)


def use_exact_lif(model, *, train=True, eval=True):
    """Switch every :class:`FPTLIF` in `model` to the exact sequential LIF (deployment gap).

    FPT trains the network its K soft evaluations define, not the LIF it deploys: in the
    reproduction, weights trained with K = 3 lost about 15 points when run on the exact LIF
    (claim F3 of the README's reproduction table). The
    fix chosen here is to fine-tune the last epochs on the deployed model itself: after this
    call, training mode runs :func:`fpt_snn.lif_sequential` with a surrogate gradient (BPTT,
    each layer's `lif_surrogate`) and eval mode the exact LIF, with the same parameters and
    optimizer. This is the hybrid schedule of Rathi, Srinivasan, Panda and Roy, "Enabling Deep
    Spiking Neural Networks with Hybrid Conversion and Spike Timing Dependent
    Backpropagation" (ICLR 2020): a cheap proxy trains most epochs, a few epochs of exact
    spike-based BPTT adapt the weights to the deployed dynamics; as quantisation-aware
    fine-tuning does for integer inference (Jacob et al., CVPR 2018). A K schedule was not
    chosen: the sigmoid iterates are not spikes at any K, and only Heaviside FPT with K >= T
    is the exact LIF, at O(K·T²) per neuron against BPTT's O(T).

    Parameters
    ----------
    model : torch.nn.Module
        A network holding one or more :class:`FPTLIF` layers (or one itself).
    train : bool, default=True
        Set each layer's training output ``sample="lif"`` (exact-LIF BPTT).
    eval : bool, default=True
        Set each layer's ``eval_sample="lif"`` (deterministic exact-LIF inference).

    Returns
    -------
    list of FPTLIF
        The layers switched. Their previous ``sample`` / ``eval_sample`` are not kept: set
        them back by hand (e.g. ``layer.sample = "bernoulli"``) to resume FPT training.

    Raises
    ------
    TypeError
        If `model` is not an ``nn.Module`` or `train` / `eval` are not bools.
    ValueError
        If `model` holds no :class:`FPTLIF`, or one with ``learnable_lambda`` (a learned T×T
        decay has no sequential LIF).

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> net = nn.Sequential(nn.Linear(4, 8), FPTLIF(T=6), nn.Linear(8, 2))
    >>> [layer.sample for layer in use_exact_lif(net)]  # before the last epochs
    ['lif']
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}")
    train, eval_ = check_flag(train, "train"), check_flag(eval, "eval")
    layers = [m for m in model.modules() if isinstance(m, FPTLIF)]
    if not layers:
        raise ValueError("`model` holds no FPTLIF layer to switch to the exact LIF")
    if any(layer.learnable_lambda for layer in layers):
        raise ValueError(
            "`model` has an FPTLIF with learnable_lambda: a learned T×T decay has no exact "
            "sequential LIF to fine-tune"
        )
    for layer in layers:
        if train:
            layer.sample = "lif"
        if eval_:
            layer.eval_sample = "lif"
    return layers
