"""Conversions between torch objects and Flower records (Flower 1.42 Message API).

The module belongs to the extra ``[flower]`` (``optional-modules`` of the card): without flwr,
importing it raises an ImportError naming ``pip install 'fsl-sage[flower]'``.
"""

from __future__ import annotations

import numpy as np
import torch

from icml25_core.extras import requires_extra

from ..roles import SmashedBatch

with requires_extra("fsl-sage", "flower"):
    from flwr.app import Array, ArrayRecord

__all__ = [
    "config_float",
    "config_int",
    "batches_from_record",
    "batches_to_record",
    "optimizer_from_record",
    "optimizer_to_record",
    "record_nbytes",
    "state_from_record",
    "state_to_record",
]


def config_int(record, key: str) -> int:
    """``record[key]`` of a ``ConfigRecord`` (a Flower config value) as an int.

    Raises
    ------
    TypeError
        If the value is not a number or a numeric string (a list, bytes or bool).
    """
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(f"config value {key!r} must be a number, got {type(value).__name__}")
    return int(value)


def config_float(record, key: str) -> float:
    """``record[key]`` of a ``ConfigRecord`` as a float (TypeError as :func:`config_int`)."""
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(f"config value {key!r} must be a number, got {type(value).__name__}")
    return float(value)


def _array(t: torch.Tensor) -> Array:
    return Array(np.ascontiguousarray(t.detach().cpu().numpy()))


def _tensor(a: Array) -> torch.Tensor:
    return torch.from_numpy(np.array(a.numpy(), copy=True))


def state_to_record(state: dict[str, torch.Tensor]) -> ArrayRecord:
    """A ``state_dict`` as an ArrayRecord (bit-exact)."""
    return ArrayRecord({k: _array(v) for k, v in state.items()})


def state_from_record(record: ArrayRecord) -> dict[str, torch.Tensor]:
    """Inverse of :func:`state_to_record`."""
    return {k: _tensor(v) for k, v in record.items()}


def record_nbytes(record: ArrayRecord) -> int:
    """Bytes of the arrays in ``record`` (element count x item size)."""
    return sum(int(np.prod(a.shape)) * np.dtype(a.dtype).itemsize for a in record.values())


def batches_to_record(batches: list[SmashedBatch]) -> ArrayRecord:
    """Smashed batches as ``z.<iteration>`` / ``y.<iteration>`` arrays of one ArrayRecord, so
    each ``z`` stays paired with its labels (spec pitfalls: message order)."""
    rec = {}
    for b in batches:
        rec[f"z.{b.iteration}"] = _array(b.z)
        rec[f"y.{b.iteration}"] = _array(b.y)
    return ArrayRecord(rec)


def batches_from_record(record: ArrayRecord, client_id: int) -> list[SmashedBatch]:
    """Inverse of :func:`batches_to_record`, in iteration order."""
    its = sorted(int(k.split(".")[1]) for k in record if k.startswith("z."))
    return [
        SmashedBatch(client_id, j, _tensor(record[f"z.{j}"]), _tensor(record[f"y.{j}"]))
        for j in its
    ]


def optimizer_to_record(opt: torch.optim.Optimizer) -> ArrayRecord:
    """The per-parameter state of ``opt`` (Adam: ``step``, ``exp_avg``, ``exp_avg_sq``)."""
    rec = {}
    for idx, entries in opt.state_dict()["state"].items():
        for name, value in entries.items():
            rec[f"{idx}.{name}"] = _array(torch.as_tensor(value))
    return ArrayRecord(rec)


def optimizer_from_record(opt: torch.optim.Optimizer, record: ArrayRecord) -> None:
    """Load what :func:`optimizer_to_record` stored into ``opt`` (same parameters, same
    hyper-parameters)."""
    state: dict[int, dict[str, torch.Tensor]] = {}
    for key, value in record.items():
        idx, name = key.split(".", 1)
        state.setdefault(int(idx), {})[name] = _tensor(value)
    opt.load_state_dict({"state": state, "param_groups": opt.state_dict()["param_groups"]})
