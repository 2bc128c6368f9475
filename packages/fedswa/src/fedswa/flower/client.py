"""The Flower ClientApp: :func:`fedswa.local_update` with ``c_i`` kept in ``context.state``."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import torch
import torch.nn.functional as F

from icml25_core import check_device
from icml25_core.extras import requires_extra

from ..control import ClientControl, zeros_like_params
from ..local import local_update
from ..metrics import accuracy
from ..simulate import ShuffledBatches, _check_model_fn, _check_pair, _new_model, client_seed
from .records import pack_update, to_state_dict

with requires_extra("fedswa", "flower"):
    from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp

__all__ = ["make_client_app", "STATE_KEY"]

STATE_KEY = "fedswa-c-local"


def _partition(context: Context) -> tuple[int, int]:
    try:
        return int(context.node_config["partition-id"]), int(context.node_config["num-partitions"])
    except KeyError as err:
        raise ValueError(
            "the SuperNode's node config needs `partition-id` and `num-partitions`, e.g. "
            '--node-config "partition-id=0 num-partitions=2"'
        ) from err


def _arrays(record: object) -> ArrayRecord:
    """A record the strategy sent as an ArrayRecord (``RecordDict[...]`` is typed as any record)."""
    return cast(ArrayRecord, record)


def _scalar(cfg: ConfigRecord, key: str) -> int | float | str:
    """A scalar entry of the strategy's ConfigRecord (it writes no lists or bytes)."""
    return cast(int | float | str, cfg[key])


def _on_device(model: torch.nn.Module, device) -> torch.nn.Module:
    return model.to(check_device(device, module=model, available=True))


def make_client_app(
    model_fn: Callable[[], torch.nn.Module],
    data_fn: Callable[[int, int], tuple[torch.Tensor, torch.Tensor]],
    *,
    loss_fn: Callable = F.cross_entropy,
    device: str | torch.device | None = None,
) -> ClientApp:
    """A ClientApp running one local round per ``train`` message.

    Parameters
    ----------
    model_fn : callable
        ``model_fn() -> nn.Module`` with the server model's architecture (weights are replaced).
    data_fn : callable
        ``data_fn(partition_id, num_partitions) -> (x [n_i, ...], y [n_i])``: this client's data.
    loss_fn : callable, default=torch.nn.functional.cross_entropy
    device : str or torch.device, optional
        Where the node trains and evaluates (default: the device of ``model_fn()``'s
        parameters); replies go back as CPU arrays. Only its name is checked here; whether
        the node's torch can use it (CUDA present) is checked on the node, when it trains.

    Returns
    -------
    flwr.clientapp.ClientApp
        ``train``: reads ``arrays`` (``x_t``), ``control`` (``c``) and ``config`` (see
        :class:`~fedswa.flower.FedAvgSWA`), runs :func:`~fedswa.local.local_update` on
        :class:`~fedswa.simulate.ShuffledBatches` seeded by
        :func:`~fedswa.simulate.client_seed`, stores ``c_i+`` in ``context.state`` and replies
        with ONE ArrayRecord (``model/<name>``, ``control/<name>``) and a MetricRecord
        (``num-examples``, ``train-loss``, ``lr-sum``, ``steps``, ``partition-id``,
        ``control-norm``). ``evaluate``: loss and accuracy of ``x_t`` on the client's data.

    Raises
    ------
    TypeError
        If `model_fn` is not a callable returning a fresh ``nn.Module`` (an ``nn.Module``
        instance is refused, as by :func:`~fedswa.run_federated`), or `data_fn` or `loss_fn`
        is not callable.
    ValueError
        If `device` does not name a torch device or is ``"meta"``.

    Notes
    -----
    The node config must hold ``partition-id`` and ``num-partitions`` (the simulation engine
    sets them; SuperNodes take ``--node-config``). On the node, a `model_fn` that does not
    return an ``nn.Module``, a `data_fn` that does not return an ``(x, y)`` pair of tensors of
    one non-zero length, or a `device` the node cannot use fails the ClientApp with a
    ``TypeError`` / ``ValueError`` naming them.
    """
    _check_model_fn(model_fn)
    for name, fn in (("data_fn", data_fn), ("loss_fn", loss_fn)):
        if not callable(fn):
            raise TypeError(f"`{name}` must be callable, got {type(fn).__name__}")
    check_device(device)  # the name; availability on the node
    app = ClientApp()

    def client_data(context: Context) -> tuple[int, torch.Tensor, torch.Tensor]:
        pid, num = _partition(context)
        x, y = _check_pair(data_fn(pid, num), f"data_fn({pid}, {num})")
        return pid, x, y

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        pid, x, y = client_data(context)
        cfg = cast(ConfigRecord, msg.content["config"])
        model = _on_device(_new_model(model_fn), device)
        model.load_state_dict(to_state_dict(_arrays(msg.content["arrays"])))
        control, kind = None, str(cfg["control-kind"])
        if kind != "none":
            zeros = zeros_like_params(model)  # on the model's device
            c = to_state_dict(_arrays(msg.content["control"])) if "control" in msg.content else {}
            ci = (
                to_state_dict(_arrays(context.state[STATE_KEY]))
                if STATE_KEY in context.state
                else {}
            )
            c, ci = ({k: v.to(zeros[k]) for k, v in d.items()} for d in (c, ci))
            control = ClientControl(c or zeros, ci or {k: v.clone() for k, v in zeros.items()})
        t = int(_scalar(cfg, "server-round")) - 1
        clip, sam = float(_scalar(cfg, "clip-norm")), float(_scalar(cfg, "sam-rho"))
        seed = client_seed(int(_scalar(cfg, "seed")), t, pid)
        res = local_update(
            model,
            ShuffledBatches(x, y, int(_scalar(cfg, "batch-size")), seed),
            steps=int(_scalar(cfg, "local-steps")),
            eta=float(_scalar(cfg, "eta")),
            rho=float(_scalar(cfg, "rho")),
            weight_decay=float(_scalar(cfg, "weight-decay")),
            clip_norm=clip if clip > 0 else None,
            sam_rho=sam if sam > 0 else None,
            loss_fn=loss_fn,
            control=control,
            num_examples=len(x),
            swa=str(cfg.get("swa", "last")),
        )
        upload, norm = None, 0.0
        if control is not None:
            assert res.new_control is not None  # local_update ran with a control
            context.state[STATE_KEY] = ArrayRecord({k: v.cpu() for k, v in res.new_control.items()})
            upload = res.local_control_delta if kind == "local" else res.control_delta
            norm = float(sum(v.square().sum() for v in res.new_control.values()) ** 0.5)
        metrics = MetricRecord(
            {
                "num-examples": res.num_examples,
                "train-loss": res.loss,
                "lr-sum": res.lr_sum,
                "steps": res.steps,
                "partition-id": pid,
                "control-norm": norm,
            }
        )
        content = RecordDict({"update": pack_update(res.delta, upload), "metrics": metrics})
        return Message(content=content, reply_to=msg)

    @app.evaluate()
    def evaluate(msg: Message, context: Context) -> Message:
        _, x, y = client_data(context)
        model = _on_device(_new_model(model_fn), device)
        model.load_state_dict(to_state_dict(_arrays(msg.content["arrays"])))
        model.eval()
        where = check_device(None, module=model)
        x, y = x.to(where), y.to(where)
        with torch.no_grad():
            loss = float(loss_fn(model(x), y))
        metrics = MetricRecord(
            {"num-examples": len(x), "loss": loss, "accuracy": accuracy(model, x, y)}
        )
        return Message(content=RecordDict({"metrics": metrics}), reply_to=msg)

    return app
