"""The client's local round: K corrected, clipped SGD steps under the cyclic learning rate.

Axis letters: ``k`` local step (0..K-1); tensors keep the model's own shapes.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from icml25_core import check_choice, check_scalar

from .control import ClientControl
from .schedule import _cyclic_lr

__all__ = ["LocalResult", "local_update", "trainable_names"]


@dataclass(frozen=True)
class LocalResult:
    """What a client returns after :func:`local_update`.

    Attributes
    ----------
    delta : dict of str to Tensor
        ``Delta_i = y_{i,K} - x_t`` for every floating-point ``state_dict`` entry (parameters and
        float buffers such as BatchNorm running statistics). Integer buffers are left out.
    new_control : dict of str to Tensor or None
        ``c_i+`` (trainable float parameters only); ``None`` without a control.
    control_delta : dict of str to Tensor or None
        ``delta_i = c_i+ - c`` (relative to the server control ``c``), the upload of FedMoSWA.
    local_control_delta : dict of str to Tensor or None
        ``c_i+ - c_i``, the upload of SCAFFOLD (Karimireddy et al. 2020, Alg. 1 line 13).
    num_examples : int
        Client weight ``n_i`` used by the server's ``"num_examples"`` weighting.
    lr_sum : float
        ``sum_k eta_k`` over the steps actually taken.
    loss : float
        Mean training loss over the local steps (at the point the gradient was taken).
    steps : int
        Local steps actually taken.
    """

    delta: dict
    new_control: dict | None
    control_delta: dict | None
    local_control_delta: dict | None
    num_examples: int
    lr_sum: float
    loss: float
    steps: int


def trainable_names(model: torch.nn.Module) -> list[str]:
    """Names of the trainable floating-point parameters of `model` (the keys of a control)."""
    return [n for n, p in model.named_parameters() if p.requires_grad and p.is_floating_point()]


def _batch_stream(batches) -> Iterator:
    """Yield batches, restarting a re-iterable (list, DataLoader) when it runs out; a one-shot
    iterator ends the round early instead."""
    one_shot = iter(batches) is batches
    seen_any = False
    while True:
        empty = True
        for batch in batches:
            empty = False
            seen_any = True
            yield batch
        if empty and not seen_any:
            raise ValueError("`batches` is empty")
        if one_shot or empty:
            return


def _check_batch(batch, k: int):
    if not (isinstance(batch, tuple | list) and len(batch) == 2):
        raise TypeError(f"`batches` item {k} must be a pair (inputs, targets), got {type(batch)}")
    x, y = batch
    for part, label in ((x, "inputs"), (y, "targets")):
        if not isinstance(part, torch.Tensor):
            raise TypeError(f"`batches` item {k} {label} must be a Tensor, got {type(part)}")
        if part.numel() == 0:
            raise ValueError(f"`batches` item {k} {label} is empty")
        if part.is_floating_point() and not torch.isfinite(part).all():
            raise ValueError(f"`batches` item {k} {label} holds NaN or infinity")
    if x.shape[0] != y.shape[0]:
        raise ValueError(
            f"`batches` item {k}: inputs and targets differ in length "
            f"({x.shape[0]} vs {y.shape[0]})"
        )
    return x, y


def _sam_optimizer(params, lr: float, weight_decay: float, sam_rho: float):
    from pytorch_optimizer import SAM

    return SAM(params, torch.optim.SGD, rho=sam_rho, lr=lr, weight_decay=weight_decay)


def local_update(
    model: torch.nn.Module,
    batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
    *,
    steps: int,
    eta: float,
    rho: float = 0.0,
    weight_decay: float = 1e-3,
    clip_norm: float | None = 10.0,
    loss_fn: Callable = F.cross_entropy,
    control: ClientControl | None = None,
    sam_rho: float | None = None,
    num_examples: int | None = None,
    swa: str = "last",
) -> LocalResult:
    r"""Run one client's local round from the global model ``x_t``; `model` is not modified.

    Each step ``k = 0..K-1`` (``y_0 = x_t``)::

        g_k     = clip(grad f_i(y_k; batch_k), clip_norm)  # global L2 norm of the raw gradient
        y_{k+1} = y_k - eta_k * (g_k + weight_decay * y_k + c - c_i)
        eta_k   = cyclic_lr(k, K, eta, rho)

    With a control, afterwards ``c_i+ = c_i - c + (x_t - y_K) / sum_k eta_k``. In symbols, with
    $\tau$ = `clip_norm`, $\lambda$ = `weight_decay` and $\xi_k$ the minibatch of step $k$
    ($c = c_i = 0$ without a control):

    $$
    \begin{aligned}
    \eta_k &= \Big(1 - \frac{k}{K}\Big)\,\eta + \frac{k}{K}\,\rho\,\eta,
    \qquad g_k = \mathrm{clip}_\tau\big(\nabla f_i(y_k;\, \xi_k)\big), \\
    y_{k+1} &= y_k - \eta_k\,\big(g_k + \lambda\, y_k + c - c_i\big),
    \qquad y_0 = x_t, \\
    c_i^{+} &= c_i - c + \frac{x_t - y_K}{\sum_{k=0}^{K-1} \eta_k},
    \qquad \Delta_i = y_K - x_t.
    \end{aligned}
    $$

    With `sam_rho` (FedSAM), ``grad f_i`` is taken at ``y_k + sam_rho * g / ||g||`` through
    ``pytorch_optimizer.SAM`` and applied at ``y_k``.

    With ``swa="average"`` the client returns classic SWA's average of the local iterates
    instead of the last one (Izmailov et al. 2018, Alg. 1, averaging every step of the cycle):
    $\Delta_i = \frac{1}{K'} \sum_{k=1}^{K'} y_k - x_t$ over the $K'$ steps taken, floating
    buffers (BatchNorm statistics) averaged alike. The paper's and official rule is the
    default ``"last"``: the cyclic rate ends the cycle at its low point and the server averages.

    Parameters
    ----------
    model : torch.nn.Module
        The global model ``x_t``; copied, never mutated. BatchNorm statistics update in the copy.
    batches : iterable of (Tensor, Tensor)
        Minibatches ``(inputs [B, ...], targets [B, ...])`` on any device (moved to the model's).
        A list or DataLoader is restarted when it runs out; a one-shot iterator ends the round
        early (``steps`` of the result tells how many were taken).
    steps : int
        Local steps ``K >= 1`` (official code: 50, its cap).
    eta : float
        Peak local learning rate ``> 0`` (the round's ``eta_t``; FedSWA uses 2x FedAvg's, official
        README).
    rho : float, default=0.0
        Cyclic-LR ratio in ``[0, 1]``; 1 = constant rate (FedAvg, SCAFFOLD, FedSAM).
    weight_decay : float, default=1e-3
        ``lambda >= 0``, added after clipping (official HEAD code order).
    clip_norm : float or None, default=10.0
        Max global L2 norm of the raw minibatch gradient; ``None`` disables clipping.
    loss_fn : callable, default=torch.nn.functional.cross_entropy
        ``loss_fn(model(inputs), targets) -> scalar Tensor``.
    control : ClientControl or None, default=None
        ``c`` and ``c_i`` (SCAFFOLD, FedMoSWA); ``None``: no correction (FedAvg, FedSWA, FedSAM).
    sam_rho : float or None, default=None
        SAM radius ``> 0`` (FedSAM; 0.05 in the official README); ``None``: plain gradient.
    num_examples : int or None, default=None
        The client's dataset size ``n_i`` for the server's weighting; default: the number of
        examples processed.
    swa : {"last", "average"}, default="last"
        ``"last"``: ``Delta_i = y_K - x_t`` (paper, official code); ``"average"``: the mean of
        the iterates ``y_1..y_K`` (classic SWA within the round; not with a `control`).

    Returns
    -------
    LocalResult
        ``delta``, ``new_control``, ``control_delta``, ``local_control_delta``,
        ``num_examples``, ``lr_sum``, ``loss``, ``steps``.

    Raises
    ------
    ValueError
        If ``steps < 1``, ``eta <= 0``, `rho` is outside ``[0, 1]``, ``weight_decay < 0``,
        ``clip_norm <= 0``, ``sam_rho <= 0``, `swa` is unknown or ``"average"`` with a
        `control`, `batches` is empty or holds NaN/inf or mismatched
        pairs, `model` holds NaN/inf, the model or `loss_fn` fails on a batch (wrong shape,
        dtype or label range; the original error is chained), `loss_fn` does not return a
        scalar, or the control keys are not the model's trainable parameters.
    FloatingPointError
        If training diverges (NaN or infinity in the loss or the update).
    TypeError
        If `model` is not a ``torch.nn.Module`` or a batch is not a pair of tensors.

    Notes
    -----
    Source: official code ``junkangLiu0/FedSWA`` HEAD f725be9 (``main_FedSWA.py``): cyclic LR,
    clip of the raw gradient to 10, then weight decay and the correction ``c - c_i`` are added.
    The control update is SCAFFOLD's option II (Karimireddy et al. 2020, Eq. (4)) with the
    normaliser ``sum_k eta_k`` of the steps actually taken; the May 2025 code divides by
    ``K*(1+rho)*eta/2``, which differs by ``eta*(1-rho)/2``. Unlike the HEAD SCAFFOLD baseline
    (whose correction goes through ``.item()`` and carries no gradient effect), the correction
    is applied to every step.

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Linear(3, 2)
    >>> data = [(torch.randn(8, 3), torch.randint(0, 2, (8,)))]
    >>> res = local_update(net, data, steps=4, eta=0.1)
    >>> sorted(res.delta), res.steps
    (['bias', 'weight'], 4)
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}")
    steps = check_scalar(steps, "steps", kind=int, low=1)
    eta = check_scalar(eta, "eta", low=0.0, high=math.inf, inclusive="neither")
    rho = check_scalar(rho, "rho", low=0.0, high=1.0)
    weight_decay = check_scalar(weight_decay, "weight_decay", low=0.0)
    if clip_norm is not None:
        clip_norm = check_scalar(clip_norm, "clip_norm", low=0.0, inclusive="neither")
    if sam_rho is not None:
        sam_rho = check_scalar(sam_rho, "sam_rho", low=0.0, inclusive="neither")
    if num_examples is not None:
        num_examples = check_scalar(num_examples, "num_examples", kind=int, low=1)
    if batches is None:
        raise ValueError("`batches` is empty")
    if not callable(loss_fn):
        raise TypeError(f"`loss_fn` must be callable, got {type(loss_fn).__name__}")
    if control is not None and not isinstance(control, ClientControl):
        raise TypeError(f"`control` must be a ClientControl, got {type(control).__name__}")
    check_choice(swa, "swa", ("last", "average"))
    if swa == "average" and control is not None:
        raise ValueError(
            "`swa`='average' cannot be used with a `control`: the control update is defined "
            "by the last iterate (SCAFFOLD option II)"
        )

    start = {k: v.detach().clone() for k, v in model.state_dict().items()}
    bad_start = [k for k, v in start.items() if v.is_floating_point() and not v.isfinite().all()]
    if bad_start:
        raise ValueError(f"`model` holds NaN or infinity in {bad_start}")
    local = copy.deepcopy(model)
    local.train()
    named = [
        (n, p) for n, p in local.named_parameters() if p.requires_grad and p.is_floating_point()
    ]
    names = [n for n, _ in named]
    params = [p for _, p in named]
    device = params[0].device if params else torch.device("cpu")
    correction = None
    if control is not None:
        if set(control.c_global) != set(names):
            raise ValueError(
                "`control` keys must be the model's trainable parameters; differing: "
                f"{sorted(set(control.c_global) ^ set(names))}"
            )
        diff = control.correction()
        correction = [diff[n].to(device=p.device, dtype=p.dtype) for n, p in named]
        bad = [n for n, p, c in zip(names, params, correction, strict=True) if c.shape != p.shape]
        if bad:
            raise ValueError(f"`control` shapes differ from the model's for: {bad}")
    sam = _sam_optimizer(params, eta, weight_decay, sam_rho) if sam_rho is not None else None

    lr_sum, loss_sum, seen, taken = 0.0, 0.0, 0, 0
    mean: dict[str, torch.Tensor] = {}  # swa="average": running mean of the iterates
    stream = _batch_stream(batches)
    for k in range(steps):
        batch = next(stream, None)
        if batch is None:
            break
        x, y = _check_batch(batch, k)
        x, y = x.to(device), y.to(device)
        lr = _cyclic_lr(k, steps, eta, rho)
        loss = _gradient(local, params, loss_fn, x, y)
        if sam is not None:
            for group in sam.param_groups:
                group["lr"] = lr
            sam.first_step(zero_grad=True)
            _gradient(local, params, loss_fn, x, y)
            if clip_norm is not None:
                torch.nn.utils.clip_grad_norm_(params, clip_norm)
            sam.second_step(zero_grad=False)
        else:
            if clip_norm is not None:
                torch.nn.utils.clip_grad_norm_(params, clip_norm)
            _corrected_step(params, lr, weight_decay, correction)
        lr_sum += lr
        loss_sum += float(loss)
        seen += int(x.shape[0])
        taken += 1
        if swa == "average":  # running mean of y_1..y_k (Izmailov et al. 2018, Alg. 1)
            current = local.state_dict()
            if taken == 1:
                mean = {n: v.detach().clone() for n, v in current.items() if v.is_floating_point()}
            else:
                for n, v in mean.items():
                    v.add_(current[n].detach() - v, alpha=1.0 / taken)

    end = local.state_dict() if swa == "last" or taken == 0 else {**local.state_dict(), **mean}
    delta = {k: (end[k].detach() - start[k]) for k in start if start[k].is_floating_point()}
    diverged = [k for k, v in delta.items() if not torch.isfinite(v).all()]
    if diverged or not math.isfinite(loss_sum):
        raise FloatingPointError(
            f"local training diverged (NaN or infinity in {diverged or 'the loss'} after "
            f"{taken} steps at peak rate eta={eta}); lower `eta` or set `clip_norm`"
        )
    new_control = control_delta = local_control_delta = None
    if control is not None:
        new_control, control_delta, local_control_delta = {}, {}, {}
        for n in names:
            c, ci = control.c_global[n], control.c_local[n]
            plus = ci - c - delta[n].to(ci) / lr_sum
            new_control[n] = plus
            control_delta[n] = plus - c
            local_control_delta[n] = plus - ci
    return LocalResult(
        delta=delta,
        new_control=new_control,
        control_delta=control_delta,
        local_control_delta=local_control_delta,
        num_examples=num_examples if num_examples is not None else seen,
        lr_sum=lr_sum,
        loss=loss_sum / taken if taken else math.nan,
        steps=taken,
    )


def _gradient(model, params, loss_fn, x, y) -> torch.Tensor:
    """Fill ``p.grad`` of every parameter with the minibatch gradient (zeros where unused)."""
    for p in params:
        p.grad = None
    try:
        loss = loss_fn(model(x), y)
    except (RuntimeError, IndexError, TypeError, ValueError) as err:
        raise ValueError(
            f"`model`/`loss_fn` failed on a batch of inputs {tuple(x.shape)} {x.dtype} and "
            f"targets {tuple(y.shape)} {y.dtype} (wrong shape, dtype or label range?): {err}"
        ) from err
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        shape = tuple(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__
        raise ValueError(f"`loss_fn` must return a scalar Tensor, got {shape}")
    loss.backward()
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    return loss.detach()


@torch.no_grad()
def _corrected_step(params, lr, weight_decay, correction) -> None:
    """``y <- y - lr * (g + weight_decay * y + (c - c_i))`` for all parameters at once."""
    grads = [p.grad for p in params]
    if weight_decay:
        torch._foreach_add_(grads, params, alpha=weight_decay)
    if correction is not None:
        torch._foreach_add_(grads, correction)
    torch._foreach_add_(params, grads, alpha=-lr)
