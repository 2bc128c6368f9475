"""Flower records of a client reply: ONE ArrayRecord with ``model/<name>`` (the update
``Delta_i``) and ``control/<name>`` (the control upload) keys, plus a MetricRecord; or, from a
stock Flower ClientApp, the trained weights themselves (``from_weights``)."""

from __future__ import annotations

import math

import torch

from icml25_core.extras import requires_extra

from ..local import LocalResult

with requires_extra("fedswa", "flower"):
    from flwr.app import ArrayRecord

__all__ = [
    "MODEL_PREFIX",
    "CONTROL_PREFIX",
    "pack_update",
    "unpack_update",
    "from_weights",
    "is_update",
    "to_state_dict",
]

MODEL_PREFIX = "model/"
CONTROL_PREFIX = "control/"


def to_state_dict(record: ArrayRecord) -> dict[str, torch.Tensor]:
    """``ArrayRecord`` -> ``{name: Tensor}`` (dtypes kept: int64 stays int64)."""
    return dict(record.to_torch_state_dict())


def pack_update(delta: dict, control_upload: dict | None) -> ArrayRecord:
    """One ArrayRecord holding ``model/<name>`` = `delta` and ``control/<name>`` = the upload.

    Parameters
    ----------
    delta : dict of str to Tensor
        ``Delta_i = y_{i,K} - x_t`` (float ``state_dict`` entries).
    control_upload : dict of str to Tensor or None
        ``c_i+ - c`` (FedMoSWA) or ``c_i+ - c_i`` (SCAFFOLD); ``None`` without controls.
    """
    arrays = {MODEL_PREFIX + k: v.detach().cpu().contiguous() for k, v in delta.items()}
    for k, v in (control_upload or {}).items():
        arrays[CONTROL_PREFIX + k] = v.detach().cpu().contiguous()
    return ArrayRecord(arrays)


def unpack_update(record: ArrayRecord, metrics, control_key: str) -> LocalResult:
    """Rebuild the :class:`~fedswa.local.LocalResult` the server needs from a reply.

    Parameters
    ----------
    record : ArrayRecord
        As written by :func:`pack_update`.
    metrics : MetricRecord
        With ``num-examples``, ``train-loss``, ``lr-sum`` and ``steps``.
    control_key : {"control_delta", "local_control_delta"}
        Which :class:`LocalResult` field the control upload fills.

    Raises
    ------
    ValueError
        If a key has neither prefix.
    """
    delta, control = {}, {}
    for key, value in to_state_dict(record).items():
        if key.startswith(MODEL_PREFIX):
            delta[key[len(MODEL_PREFIX) :]] = value
        elif key.startswith(CONTROL_PREFIX):
            control[key[len(CONTROL_PREFIX) :]] = value
        else:
            raise ValueError(
                f"reply key {key!r} has neither the 'model/' nor the 'control/' prefix"
            )
    uploads: dict[str, dict[str, torch.Tensor] | None] = {
        "control_delta": None,
        "local_control_delta": None,
    }
    if control:
        uploads[control_key] = control
    return LocalResult(
        delta=delta,
        new_control=None,
        num_examples=_num_examples(metrics),
        lr_sum=float(metrics["lr-sum"]),
        loss=float(metrics["train-loss"]),
        steps=int(metrics["steps"]),
        **uploads,
    )


def _num_examples(metrics) -> int:
    """A reply's ``num-examples``: a whole number >= 1 (it weights the client's update)."""
    value = metrics["num-examples"]
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value != int(value)
    ):
        raise ValueError(f"the reply's `num-examples` must be a whole number, got {value!r}")
    if value < 1:
        raise ValueError(f"the reply's `num-examples` must be >= 1, got {value!r}")
    return int(value)


def is_update(record: ArrayRecord) -> bool:
    """Whether `record` is in :func:`pack_update`'s format (else: plain trained weights)."""
    return any(key.startswith(MODEL_PREFIX) for key in record)


def from_weights(record: ArrayRecord, metrics, global_state: dict) -> LocalResult:
    """The :class:`~fedswa.local.LocalResult` of a stock Flower reply: trained weights ``y_i``
    and ``num-examples``; ``Delta_i = y_i - x_t`` for every floating entry of ``x_t``.

    Parameters
    ----------
    record : ArrayRecord
        The full ``state_dict`` the client trained (Flower's standard train reply).
    metrics : MetricRecord
        With ``num-examples`` (Flower's FedAvg weighting key); ``train-loss`` is used if present.
    global_state : dict of str to Tensor
        ``x_t``, the model this round sent.

    Raises
    ------
    ValueError
        If the keys or shapes differ from the global model's, or ``num-examples`` is missing.
    """
    weights = to_state_dict(record)
    if set(weights) != set(global_state):
        raise ValueError(
            "the reply's arrays are not the model's state_dict: missing "
            f"{sorted(set(global_state) - set(weights))}, unexpected "
            f"{sorted(set(weights) - set(global_state))}"
        )
    if "num-examples" not in metrics:
        raise ValueError("the reply's MetricRecord needs `num-examples` (the client's weight)")
    delta = {}
    for key, start in global_state.items():
        if not start.is_floating_point():
            continue
        if not weights[key].is_floating_point():
            raise ValueError(
                f"reply array {key!r} has dtype {weights[key].dtype}, the model {start.dtype}: "
                "send the trained weights as floating arrays"
            )
        if weights[key].shape != start.shape:
            raise ValueError(
                f"reply array {key!r} has shape {tuple(weights[key].shape)}, the model "
                f"{tuple(start.shape)}"
            )
        delta[key] = weights[key].to(start) - start
    return LocalResult(
        delta=delta,
        new_control=None,
        control_delta=None,
        local_control_delta=None,
        num_examples=_num_examples(metrics),
        lr_sum=float("nan"),  # not reported by a stock client; no control needs it
        loss=float(metrics.get("train-loss", float("nan"))),
        steps=0,
    )
