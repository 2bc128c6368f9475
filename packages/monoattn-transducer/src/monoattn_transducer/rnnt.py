"""RNN-T loss and alignment posterior by forward-backward over the Transducer lattice.

The loss has the signature of ``torchaudio.functional.rnnt_loss`` (plus ``normalize`` and
``backend``), so SpeechBrain, ESPnet or icefall recipes can swap it in. Computation is fp32 for
fp16/bf16/fp32 inputs (fp64 stays fp64); the backward is analytic: the loss saves the logits'
log-normaliser and the lattice (``O(B T U)``), never the ``[B, T, U+1, V]`` log-probabilities.

Source: Graves, "Sequence Transduction with Recurrent Neural Networks", 2012, Sec. 2; the
posterior is the official ``Transducer_w_posterior`` of ictnlp/MonoAttn-Transducer.
"""

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from icml25_core import check_choice, check_scalar, check_tensor

from .kernels import run_lattice

__all__ = [
    "Lattice",
    "RNNTLoss",
    "emission_posterior",
    "normalization_counts",
    "rnnt_lattice",
    "rnnt_loss",
]

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_INTS = (torch.int32, torch.int64)


@dataclass
class Lattice:
    """Result of :func:`rnnt_lattice`.

    Attributes
    ----------
    log_z : torch.Tensor, ``[B]``
        ``log p(y | x)`` per sample.
    alpha, beta : torch.Tensor, ``[B, T, U+1]``
        Forward and backward log-variables, ``-inf`` outside each sample's lattice.
    """

    log_z: torch.Tensor
    alpha: torch.Tensor
    beta: torch.Tensor


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _check_lengths(
    logit_lengths: Any, target_lengths: Any, B: int, T: int, U: int
) -> tuple[torch.Tensor, torch.Tensor]:
    for name, x, hi in (("logit_lengths", logit_lengths, T), ("target_lengths", target_lengths, U)):
        check_tensor(x, name, ndim=1, shape=(B,), dtype=_INTS, allow_empty=False)
        if int(x.min()) < (1 if name == "logit_lengths" else 0):
            low = "1" if name == "logit_lengths" else "0"
            raise ValueError(f"`{name}` must be >= {low}, got min {int(x.min())}")
        if int(x.max()) > hi:
            raise ValueError(f"`{name}` must be <= {hi} (the tensor's size), got {int(x.max())}")
    return logit_lengths.to(torch.int64), target_lengths.to(torch.int64)


def _resolve_blank(blank: Any, V: int) -> int:
    check_scalar(blank, "blank", kind=int, low=-1, high=V - 1)
    return V - 1 if blank == -1 else int(blank)


def _check_targets(targets: Any, target_lengths: torch.Tensor, B: int, V: int, blank: int):
    check_tensor(targets, "targets", ndim=2, dtype=_INTS, allow_empty=True)
    if targets.shape[0] != B:
        raise ValueError(f"`targets` must have batch size {B}, got shape {tuple(targets.shape)}")
    U = targets.shape[1]
    if U == 0:
        return targets.to(torch.int64)
    valid = torch.arange(U, device=targets.device)[None, :] < target_lengths[:, None]
    t = targets.to(torch.int64)
    bad = valid & ((t < 0) | (t >= V))
    if bool(bad.any()):
        raise ValueError(f"`targets` holds a label outside [0, {V}) within target_lengths")
    if bool((valid & (t == blank)).any()):
        raise ValueError(f"`targets` holds the blank label {blank} within target_lengths")
    return t.masked_fill(~valid, 0 if blank != 0 else min(1, V - 1))


def _check_logits(logits: Any, targets: Any) -> tuple[int, int, int, int]:
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"`logits` must be a torch.Tensor, got {type(logits).__name__}")
    if logits.dtype not in _FLOATS:
        raise TypeError(
            f"`logits` must be float16, bfloat16, float32 or float64, got {logits.dtype}"
        )
    check_tensor(logits, "logits", ndim=4, allow_empty=True)
    B, T, W, V = logits.shape
    if B == 0:
        raise ValueError("`logits` is an empty batch (B = 0)")
    if T == 0 or V < 2:
        raise ValueError(f"`logits` needs T >= 1 and V >= 2, got shape {tuple(logits.shape)}")
    if isinstance(targets, torch.Tensor) and targets.ndim == 2 and targets.shape[1] + 1 != W:
        raise ValueError(
            f"`logits` must have U+1 = {targets.shape[1] + 1} on dim 2 (targets [B, U]), got {W}"
        )
    check_tensor(logits, "logits", finite=True)
    return B, T, W - 1, V


class _RNNTFunction(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        logits: torch.Tensor,
        targets: torch.Tensor,
        t_len: torch.Tensor,
        u_len: torch.Tensor,
        blank: int,
        fused: bool,
        backend: str,
        scale: torch.Tensor,
        clamp: float,
    ) -> torch.Tensor:
        cd = _compute_dtype(logits.dtype)
        x = logits.to(cd)
        B, T, W, _V = x.shape
        U = W - 1
        if fused:
            lse = torch.logsumexp(x, dim=-1)  # [B, T, U+1]
        else:
            lse = torch.zeros(x.shape[:3], dtype=cd, device=x.device)
        blank_lp = x[..., blank] - lse
        if U > 0:
            idx = targets[:, None, :, None].expand(B, T, U, 1)
            emit_lp = x[:, :, :U].gather(3, idx).squeeze(3) - lse[:, :, :U]
        else:
            emit_lp = x.new_zeros((B, T, 0))
        log_z, _, _, p_blank, p_emit = run_lattice(blank_lp, emit_lp, t_len, u_len, backend)
        ctx.save_for_backward(logits, lse, p_blank, p_emit, targets, scale)
        ctx.blank, ctx.fused, ctx.clamp = blank, fused, clamp
        return -log_z * scale

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor):
        logits, lse, p_blank, p_emit, targets, scale = ctx.saved_tensors
        cd = lse.dtype
        B, T, W, V = logits.shape
        U = W - 1
        g = (grad_out.to(cd) * scale)[:, None, None]  # d loss_b = -d log Z_b
        grad = torch.zeros((B, T, W, V), dtype=cd, device=logits.device)
        if ctx.fused:
            occupancy = p_blank.clone()
            occupancy[:, :, :U] += p_emit
            soft = torch.exp(logits.to(cd) - lse[..., None])
            grad += soft * occupancy[..., None]
        grad[..., ctx.blank] -= p_blank
        if U > 0:
            idx = targets[:, None, :, None].expand(B, T, U, 1)
            grad[:, :, :U].scatter_add_(3, idx, -p_emit[..., None])
        grad = grad * g[..., None]
        if ctx.clamp > 0:
            grad = grad.clamp(-ctx.clamp, ctx.clamp)
        return grad.to(logits.dtype), None, None, None, None, None, None, None, None


def normalization_counts(
    logit_lengths: torch.Tensor, target_lengths: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Frame, token and utterance counts of a batch, for normalising a ``reduction="sum"`` loss.

    Under DDP, all-reduce the summed loss and these counts, then divide: the result equals the
    single-process normalised loss of the joint batch (spec section 7).

    Parameters
    ----------
    logit_lengths, target_lengths : torch.Tensor, int ``[B]``

    Returns
    -------
    dict of str to torch.Tensor
        ``frames`` (sum of ``T_b``), ``tokens`` (sum of ``U_b``), ``utterances`` (``B``), int64
        scalars on the lengths' device.

    Raises
    ------
    ValueError, TypeError
        On non-integer, non-1-D or negative lengths, or lengths of different sizes.
    """
    for name, x in (("logit_lengths", logit_lengths), ("target_lengths", target_lengths)):
        check_tensor(x, name, ndim=1, dtype=_INTS)
        if int(x.min()) < 0:
            raise ValueError(f"`{name}` must be >= 0")
    if target_lengths.shape != logit_lengths.shape:
        raise ValueError(
            f"`target_lengths` must have the shape of `logit_lengths` {tuple(logit_lengths.shape)}"
            f" (one entry per utterance), got {tuple(target_lengths.shape)}"
        )
    return {
        "frames": logit_lengths.to(torch.int64).sum(),
        "tokens": target_lengths.to(torch.int64).sum(),
        "utterances": torch.tensor(logit_lengths.shape[0], device=logit_lengths.device),
    }


def rnnt_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    logit_lengths: torch.Tensor,
    target_lengths: torch.Tensor,
    blank: int = 0,
    clamp: float = -1,
    reduction: str = "mean",
    fused_log_softmax: bool = True,
    *,
    normalize: str = "none",
    backend: str = "auto",
) -> torch.Tensor:
    r"""RNN-T negative log-likelihood, ``-log p(y | x)``, with analytic gradient.

    .. math::

        -\log p(y\mid x) = -\bigl(\alpha(T_b-1,U_b) + \varnothing(T_b-1,U_b)\bigr)

    $$\alpha(t,u)=\log\bigl(e^{\alpha(t-1,u)+\varnothing(t-1,u)}+e^{\alpha(t,u-1)+y(t,u-1)}\bigr)$$

    (Graves 2012, Sec. 2, eqs. 16-17), where ``∅(t,u)`` and ``y(t,u)`` are the log-probabilities
    of blank and of label ``y_{u+1}`` from the joint output at ``(t, u)``.

    Parameters
    ----------
    logits : torch.Tensor, float16/bfloat16/float32/float64 ``[B, T, U+1, V]``
        Joint network output (``fused_log_softmax=True``) or log-probabilities (``False``).
    targets : torch.Tensor, int32/int64 ``[B, U]``
        Labels; entries beyond ``target_lengths`` are padding and ignored.
    logit_lengths : torch.Tensor, int32/int64 ``[B]``
        Frames per sample, ``1 <= T_b <= T``.
    target_lengths : torch.Tensor, int32/int64 ``[B]``
        Labels per sample, ``0 <= U_b <= U`` (0: an empty target, all-blank paths).
    blank : int, default=0
        Blank index in ``[0, V)``; ``-1`` means ``V - 1`` (torchaudio's default).
    clamp : float, default=-1
        Clamp the logits' gradient to ``[-clamp, clamp]`` when ``> 0`` (torchaudio's option).
    reduction : {"mean", "sum", "none"}, default="mean"
        ``mean`` averages over the batch (as torchaudio), ``sum`` adds, ``none`` gives ``[B]``.
    fused_log_softmax : bool, default=True
        Apply log-softmax over V inside (saving only its normaliser). ``False``: `logits` must
        already be log-probabilities (logsumexp over V within 1e-3 of 0).
    normalize : {"none", "frames", "tokens"}, keyword-only, default="none"
        Divide each sample's loss by ``T_b`` (the official code's value) or ``max(U_b, 1)``
        before the reduction; the gradient is scaled alike (the official code back-propagates
        the unnormalised loss: spec section 9).
    backend : {"auto", "torch", "triton"}, keyword-only, default="auto"
        Lattice kernel; ``auto`` is Triton on CUDA tensors when triton imports, else torch.

    Returns
    -------
    torch.Tensor
        float32 (float64 for float64 logits): a scalar, or ``[B]`` for ``reduction="none"``.

    Raises
    ------
    TypeError
        For non-tensor inputs, unsupported dtypes (logits not float; targets/lengths not int).
    ValueError
        For wrong ndim/shape, lengths out of range, labels outside ``[0, V)`` or equal to
        `blank` within `target_lengths`, NaN/inf logits, an empty batch, unknown `reduction`,
        `normalize` or `backend`, or unnormalised log-probs with ``fused_log_softmax=False``.

    Examples
    --------
    >>> import torch
    >>> logits = torch.randn(2, 5, 3, 4, requires_grad=True)
    >>> targets = torch.tensor([[1, 2], [3, 0]])
    >>> loss = rnnt_loss(logits, targets, torch.tensor([5, 4]), torch.tensor([2, 1]))
    >>> loss.backward()
    """
    check_choice(reduction, "reduction", ("mean", "sum", "none"))
    check_choice(normalize, "normalize", ("none", "frames", "tokens"))
    check_choice(backend, "backend", ("auto", "torch", "triton"))
    check_scalar(clamp, "clamp")
    if not isinstance(fused_log_softmax, bool):
        raise TypeError("`fused_log_softmax` must be a bool")
    B, T, U, V = _check_logits(logits, targets)
    blank = _resolve_blank(blank, V)
    t_len, u_len = _check_lengths(logit_lengths, target_lengths, B, T, U)
    tg = _check_targets(targets, u_len, B, V, blank)
    if not fused_log_softmax:
        lse = torch.logsumexp(logits.detach().to(_compute_dtype(logits.dtype)), -1)
        if float((lse.abs()).max()) > 1e-3:
            raise ValueError(
                "`logits` must be log-probabilities when fused_log_softmax=False "
                "(logsumexp over V within 1e-3 of 0)"
            )
    cd = _compute_dtype(logits.dtype)
    if normalize == "frames":
        scale = 1.0 / t_len.to(cd)
    elif normalize == "tokens":
        scale = 1.0 / u_len.clamp(min=1).to(cd)
    else:
        scale = torch.ones(B, dtype=cd, device=logits.device)
    per = _RNNTFunction.apply(
        logits, tg, t_len, u_len, blank, fused_log_softmax, backend, scale, float(clamp)
    )
    assert isinstance(per, torch.Tensor)
    if reduction == "none":
        return per
    return per.sum() if reduction == "sum" else per.mean()


class RNNTLoss(nn.Module):
    """Module form of :func:`rnnt_loss` (as ``torchaudio.transforms.RNNTLoss``).

    Parameters
    ----------
    blank, clamp, reduction, fused_log_softmax, normalize, backend
        As :func:`rnnt_loss`, fixed at construction.

    Raises
    ------
    ValueError
        For an unknown `reduction`, `normalize` or `backend`.
    """

    def __init__(
        self,
        blank: int = 0,
        clamp: float = -1,
        reduction: str = "mean",
        fused_log_softmax: bool = True,
        *,
        normalize: str = "none",
        backend: str = "auto",
    ) -> None:
        super().__init__()
        check_choice(reduction, "reduction", ("mean", "sum", "none"))
        check_choice(normalize, "normalize", ("none", "frames", "tokens"))
        check_choice(backend, "backend", ("auto", "torch", "triton"))
        self.blank, self.clamp, self.reduction = blank, clamp, reduction
        self.fused_log_softmax, self.normalize, self.backend = fused_log_softmax, normalize, backend

    def forward(
        self,
        logits: torch.Tensor,
        targets: torch.Tensor,
        logit_lengths: torch.Tensor,
        target_lengths: torch.Tensor,
    ) -> torch.Tensor:
        """The loss of :func:`rnnt_loss` with this module's settings; same shapes and errors."""
        return rnnt_loss(
            logits,
            targets,
            logit_lengths,
            target_lengths,
            self.blank,
            self.clamp,
            self.reduction,
            self.fused_log_softmax,
            normalize=self.normalize,
            backend=self.backend,
        )


def rnnt_lattice(
    blank_lp: torch.Tensor,
    emit_lp: torch.Tensor,
    logit_lengths: torch.Tensor,
    target_lengths: torch.Tensor,
    *,
    backend: str = "auto",
) -> Lattice:
    r"""Forward and backward variables of the lattice from the two edge log-probabilities.

    $$\beta(t,u)=\log\bigl(e^{\beta(t+1,u)+\varnothing(t,u)}+e^{\beta(t,u+1)+y(t,u)}\bigr),
    \quad \beta(T_b-1,U_b)=\varnothing(T_b-1,U_b),\quad \beta(0,0)=\log Z$$

    (Graves 2012, Sec. 2; spec section 2). No gradient flows through it (use :func:`rnnt_loss`).

    Parameters
    ----------
    blank_lp : torch.Tensor, float ``[B, T, U+1]``
        ``∅(t, u) = log p(blank | t, u)``.
    emit_lp : torch.Tensor, float ``[B, T, U]``
        ``y(t, u) = log p(y_{u+1} | t, u)``.
    logit_lengths, target_lengths : torch.Tensor, int ``[B]``
        ``1 <= T_b <= T``, ``0 <= U_b <= U``.
    backend : {"auto", "torch", "triton"}, default="auto"

    Returns
    -------
    Lattice
        ``log_z [B]``, ``alpha, beta [B, T, U+1]`` in fp32 (fp64 for fp64 input).

    Raises
    ------
    TypeError, ValueError
        For wrong shapes/dtypes, NaN, lengths out of range or an empty batch.
    """
    check_choice(backend, "backend", ("auto", "torch", "triton"))
    check_tensor(blank_lp, "blank_lp", ndim=3, dtype=_FLOATS, finite=False)
    B, T, W = blank_lp.shape
    if B == 0 or T == 0 or W == 0:
        raise ValueError(f"`blank_lp` must be non-empty [B, T, U+1], got {tuple(blank_lp.shape)}")
    check_tensor(emit_lp, "emit_lp", ndim=3, shape=(B, T, W - 1), dtype=_FLOATS, allow_empty=True,
                 finite=False)  # fmt: skip
    for name, x in (("blank_lp", blank_lp), ("emit_lp", emit_lp)):
        if bool(torch.isnan(x).any()) or bool((x == float("inf")).any()):
            raise ValueError(f"`{name}` contains NaN or +inf")
    t_len, u_len = _check_lengths(logit_lengths, target_lengths, B, T, W - 1)
    cd = _compute_dtype(blank_lp.dtype)
    with torch.no_grad():
        log_z, alpha, beta, _, _ = run_lattice(
            blank_lp.detach().to(cd), emit_lp.detach().to(cd), t_len, u_len, backend
        )
    return Lattice(log_z, alpha, beta)


def emission_posterior(
    logits: torch.Tensor,
    targets: torch.Tensor,
    logit_lengths: torch.Tensor,
    target_lengths: torch.Tensor,
    *,
    blank: int = 0,
    backend: str = "auto",
) -> torch.Tensor:
    r"""Alignment posterior ``P(τ_u = t | x, y)``: the frame at which label ``y_u`` is emitted.

    $$P(\tau_u=t)=\exp\bigl(\alpha(t,u-1)+y(t,u-1)+\beta(t,u)-\log Z\bigr)$$

    for ``u = 1..U`` (official ``Transducer_w_posterior``; spec section 2). It equals
    ``∂ log Z / ∂ y(t, u-1)`` and each valid column sums to 1 over ``t``.

    Parameters
    ----------
    logits, targets, logit_lengths, target_lengths, blank
        As :func:`rnnt_loss` (fused log-softmax).
    backend : {"auto", "torch", "triton"}, keyword-only, default="auto"

    Returns
    -------
    torch.Tensor, float32 (float64 for float64 logits) ``[B, T, U]``
        No gradient; exactly 0 outside ``t < T_b, u < U_b``.

    Raises
    ------
    TypeError, ValueError
        As :func:`rnnt_loss`.
    """
    check_choice(backend, "backend", ("auto", "torch", "triton"))
    B, T, U, V = _check_logits(logits, targets)
    blank = _resolve_blank(blank, V)
    t_len, u_len = _check_lengths(logit_lengths, target_lengths, B, T, U)
    tg = _check_targets(targets, u_len, B, V, blank)
    with torch.no_grad():
        x = logits.detach().to(_compute_dtype(logits.dtype))
        lse = torch.logsumexp(x, -1)
        blank_lp = x[..., blank] - lse
        if U > 0:
            idx = tg[:, None, :, None].expand(B, T, U, 1)
            emit_lp = x[:, :, :U].gather(3, idx).squeeze(3) - lse[:, :, :U]
        else:
            emit_lp = x.new_zeros((B, T, 0))
        _, _, _, _, p_emit = run_lattice(blank_lp, emit_lp, t_len, u_len, backend)
    return p_emit
