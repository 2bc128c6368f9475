"""The server's round: weighted averaging of the client updates and of the control variates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from icml25_core import check_choice, check_scalar

from .local import LocalResult

__all__ = ["ServerState", "server_step", "client_weights"]


@dataclass(frozen=True)
class ServerState:
    """The global state between rounds.

    Attributes
    ----------
    model_state : dict of str to Tensor
        ``x_t`` as a ``state_dict`` (parameters and buffers, integer buffers included).
    control : dict of str to Tensor or None
        Server control ``c`` over the trainable float parameters; ``None`` for algorithms
        without controls.
    round : int
        Rounds aggregated so far (0 before the first).
    """

    model_state: dict
    control: dict | None = None
    round: int = 0

    def __post_init__(self):
        for name, value in (("model_state", self.model_state), ("control", self.control)):
            if value is None and name == "control":
                continue
            if not isinstance(value, Mapping) or not all(
                isinstance(t, torch.Tensor) for t in value.values()
            ):
                raise TypeError(f"`{name}` must be a mapping of str to Tensor, got {type(value)}")
        if isinstance(self.round, bool) or not isinstance(self.round, int) or self.round < 0:
            raise ValueError(f"`round` must be an int >= 0, got {self.round!r}")


def _ordered(results) -> list[tuple[object, LocalResult]]:
    if isinstance(results, Mapping):
        try:
            items = sorted(results.items())
        except TypeError:  # ids of mixed types: any fixed order will do
            items = sorted(results.items(), key=lambda kv: repr(kv[0]))
    elif isinstance(results, Sequence) and not isinstance(results, str | bytes):
        items = list(enumerate(results))
    else:
        raise TypeError(
            f"`results` must be a sequence or a mapping of LocalResult, got {type(results)}"
        )
    if not items:
        raise ValueError("`results` is empty")
    for cid, res in items:
        if not isinstance(res, LocalResult):
            raise TypeError(f"`results` of client {cid!r} must be a LocalResult, got {type(res)}")
    return items


def client_weights(results, weights: str = "num_examples") -> list[float]:
    """Aggregation weights ``w_i`` (summing to 1), in the order :func:`server_step` uses.

    Parameters
    ----------
    results : sequence of LocalResult or mapping of client id to LocalResult
        A mapping is ordered by client id, so the order clients finish in never
        changes the sums.
    weights : {"num_examples", "uniform"}, default="num_examples"
        ``n_i / sum_j n_j`` (FedAvg, McMahan et al. 2017) or ``1/|S|``.

    Returns
    -------
    list of float
    """
    check_choice(weights, "weights", ("num_examples", "uniform"))
    items = _ordered(results)
    if weights == "uniform":
        return [1.0 / len(items)] * len(items)
    total = sum(res.num_examples for _, res in items)
    return [res.num_examples / total for _, res in items]


def _check_updates(items, name: str, reference: Mapping[str, torch.Tensor]) -> None:
    """Each client's `name` upload has the reference's keys and shapes (values: see
    :func:`_weighted_sum`)."""
    keys = set(reference)
    for cid, res in items:
        update = getattr(res, name)
        if update is None:
            raise ValueError(f"`results` of client {cid!r} has no {name}")
        if set(update) != keys:
            raise ValueError(
                f"`results` of client {cid!r}: {name} keys differ from the global state: "
                f"{sorted(set(update) ^ keys)}"
            )
        bad = [k for k in keys if update[k].shape != reference[k].shape]
        if bad:
            raise ValueError(f"`results` of client {cid!r}: {name} shapes differ for keys: {bad}")


def _weighted_sum(items, name: str, keys, w: list[float]) -> dict[str, torch.Tensor]:
    """``sum_i w_i u_i`` key by key, accumulated in place (one read of each client tensor).

    A non-finite upload makes its key's sum non-finite (NaN and +-inf propagate through
    ``acc + w u`` for every ``w >= 0``, as ``0 * inf`` is NaN), so only the sums are checked;
    when one is not finite, the clients are scanned for that key to name the culprit.
    """
    keys = list(keys)
    first = getattr(items[0][1], name)
    out = [first[k] * w[0] for k in keys]
    for (_, res), wi in zip(items[1:], w[1:], strict=True):
        update = getattr(res, name)
        torch._foreach_add_(out, [update[k] for k in keys], alpha=wi)
    for k, acc in zip(keys, out, strict=True):
        if torch.isfinite(acc).all():
            continue
        for cid, res in items:
            if not torch.isfinite(getattr(res, name)[k]).all():
                raise FloatingPointError(
                    f"client {cid!r} sent a non-finite {name} for {k!r} (NaN or infinity); "
                    "lower the learning rate or check its data"
                )
        raise FloatingPointError(
            f"the weighted sum of the clients' {name} for {k!r} overflowed (every upload is "
            "finite); lower the learning rate"
        )
    return dict(zip(keys, out, strict=True))


def server_step(
    state: ServerState,
    results,
    *,
    alpha: float = 1.0,
    gamma: float | None = None,
    weights: str = "num_examples",
    warm_start: bool = True,
    participation: float | None = None,
    control_key: str = "control_delta",
) -> ServerState:
    """Aggregate one round: ``x_{t+1} = x_t + alpha * sum_i w_i Delta_i`` and the control.

    Control (when `gamma` is given): the first round with `warm_start` sets
    ``c = sum_i w_i delta_i``; otherwise ``c <- c + gamma * p * sum_i w_i delta_i`` with
    ``p = participation`` (``|S|/N`` for SCAFFOLD, 1 when ``None``).

    Parameters
    ----------
    state : ServerState
        ``x_t``, ``c`` and the round counter.
    results : sequence of LocalResult or mapping of client id to LocalResult
        This round's client results (a mapping is ordered by client id).
    alpha : float, default=1.0
        Server step in ``(0, 1]``; 1 = plain weighted average (official HEAD ``--lg 1.0``);
        ``< 1`` = the EMA of the May 2025 code (0.01 there, 0.1 in its README).
    gamma : float or None, default=None
        Control momentum in ``(0, 1]`` (FedMoSWA 0.4, official HEAD); ``None``: no control.
    weights : {"num_examples", "uniform"}, default="num_examples"
        ``w_i``, the same for the model and the control.
    warm_start : bool, default=True
        First-round ``c = sum_i w_i delta_i`` (both official code versions); SCAFFOLD: False.
    participation : float or None, default=None
        ``|S|/N`` in ``(0, 1]`` scaling the control step (SCAFFOLD, Karimireddy et al. 2020,
        Alg. 1 line 17).
    control_key : {"control_delta", "local_control_delta"}, default="control_delta"
        Which upload is averaged: ``c_i+ - c`` (FedMoSWA) or ``c_i+ - c_i`` (SCAFFOLD).

    Returns
    -------
    ServerState
        New state with ``round + 1``. Float entries are updated; integer buffers (e.g.
        BatchNorm ``num_batches_tracked``) keep their previous global value and dtype.

    Raises
    ------
    ValueError
        If `alpha`, `gamma` or `participation` is outside ``(0, 1]``, `results` is empty, the
        global state holds NaN or infinity, or a result's keys or shapes differ from the global
        state (the keys are listed).
    FloatingPointError
        If a client sent NaN or infinity (the message names the client).

    Notes
    -----
    Source: official code ``junkangLiu0/FedSWA`` (HEAD f725be9 ``main_FedSWA.py`` skips
    non-float keys; May 2025 ``main.py`` EMA and control warm start); SCAFFOLD server rule
    (Karimireddy et al. 2020, Alg. 1 lines 16-17).
    """
    if not isinstance(state, ServerState):
        raise TypeError(f"`state` must be a ServerState, got {type(state).__name__}")
    alpha = check_scalar(alpha, "alpha", low=0.0, high=1.0, inclusive="right")
    if gamma is not None:
        gamma = check_scalar(gamma, "gamma", low=0.0, high=1.0, inclusive="right")
    if participation is not None:
        participation = check_scalar(
            participation, "participation", low=0.0, high=1.0, inclusive="right"
        )
    check_choice(control_key, "control_key", ("control_delta", "local_control_delta"))
    items = _ordered(results)
    w = client_weights(results, weights)

    float_ref = {k: v for k, v in state.model_state.items() if v.is_floating_point()}
    bad_state = [k for k, v in float_ref.items() if not torch.isfinite(v).all()]
    if bad_state:
        raise ValueError(f"`state.model_state` holds NaN or infinity in {bad_state}")
    _check_updates(items, "delta", float_ref)
    mean_delta = _weighted_sum(items, "delta", list(float_ref), w)
    model_state = {}
    for k, v in state.model_state.items():
        if k in mean_delta:
            model_state[k] = v + (mean_delta[k] if alpha == 1.0 else alpha * mean_delta[k]).to(v)
        else:
            model_state[k] = v.clone()

    control = state.control
    if gamma is not None:
        if control is None:
            raise ValueError("`state.control` is None; an algorithm with `gamma` needs a control")
        _check_updates(items, control_key, control)
        mean_c = _weighted_sum(items, control_key, list(control), w)
        if warm_start and state.round == 0:
            control = {k: mean_c[k].to(control[k]) for k in control}
        else:
            step = gamma * (1.0 if participation is None else participation)
            control = {k: control[k] + (step * mean_c[k]).to(control[k]) for k in control}
    return ServerState(model_state=model_state, control=control, round=state.round + 1)
