"""The FSL-SAGE ClientApp: ``query.probe``, ``train.fslsage`` and ``evaluate`` handlers.

Per-client state (client model, its Adam state, the aux model) lives in ``context.state``;
``partition-id`` / ``num-partitions`` come from the node config, hyper-parameters from the run
config (or the :class:`FlowerConfig` given to :func:`make_client_app`). The module belongs to
the extra ``[flower]`` (``optional-modules`` of the card): without flwr, importing it raises an
ImportError naming ``pip install 'fsl-sage[flower]'``.
"""

from __future__ import annotations

from icml25_core.extras import requires_extra

from ..roles import Client
from ..simulate import _aux_of
from ..simulate import evaluate as accuracy_of
from .config import FlowerConfig, build_split, load_partition
from .records import (
    batches_to_record,
    config_int,
    optimizer_from_record,
    optimizer_to_record,
    state_from_record,
    state_to_record,
)

with requires_extra("fsl-sage", "flower"):
    from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp

__all__ = ["app", "client_from_context", "make_client_app"]


def client_from_context(context: Context, cfg: FlowerConfig) -> Client:
    """Rebuild this node's :class:`Client` from the config and ``context.state``.

    Raises
    ------
    TypeError, ValueError
        If this partition's data do not fit the split, as :func:`fsl_sage.run` checks its
        partitions (:meth:`~fsl_sage.SplitSpec.check_data`; the message names the `data`
        reference and the partition id), or the aux model does not fit the cut
        (:meth:`~fsl_sage.SplitSpec.check_aux`). The ClientApp fails before training, so the
        ServerApp leaves it out of the round (``min_replies``) instead of stepping on bad
        labels.
    """
    pid = int(context.node_config["partition-id"])
    n = int(context.node_config["num-partitions"])
    split = build_split(cfg)
    source = f"data {cfg.data!r}" if cfg.data else f"dataset {cfg.dataset!r}"
    x, y = split.check_data(load_partition(cfg, pid, n), f"{source} (partition-id {pid})")
    aux = split.aux_factory() if cfg.algorithm().uses_aux else None
    if aux is not None:
        split.check_aux(aux)
    client = Client(
        pid, split.client, x, y, aux=aux, batch_size=cfg.batch_size,
        lr=cfg.lr, weight_decay=cfg.weight_decay, seed=cfg.seed, device=cfg.device or None,
    )  # fmt: skip
    state = context.state
    if "client-model" in state.array_records:
        client.model.load_state_dict(state_from_record(state.array_records["client-model"]))
    if "client-opt" in state.array_records:
        optimizer_from_record(client.optimizer, state.array_records["client-opt"])
    if "aux-opt" in state.array_records and client.aux_optimizer is not None:
        optimizer_from_record(client.aux_optimizer, state.array_records["aux-opt"])
    if "aux" in state.array_records and aux is not None:
        aux.load_state_dict(state_from_record(state.array_records["aux"]))
    return client


def _save(context: Context, client: Client) -> None:
    context.state["client-model"] = state_to_record(client.model.state_dict())
    context.state["client-opt"] = optimizer_to_record(client.optimizer)
    if client.aux is not None:
        context.state["aux"] = state_to_record(client.aux.state_dict())
    if client.aux_optimizer is not None:  # CSE-FSL trains the aux locally with Adam
        context.state["aux-opt"] = optimizer_to_record(client.aux_optimizer)


def _receive(message: Message, client: Client) -> int:
    content = message.content
    if "client-model" in content.array_records:
        client.model.load_state_dict(state_from_record(content.array_records["client-model"]))
    if "aux" in content.array_records:
        _aux_of(client).load_state_dict(state_from_record(content.array_records["aux"]))
    return config_int(content.config_records["config"], "round")


def _info(client: Client) -> ConfigRecord:
    return ConfigRecord({"partition-id": client.client_id, "num-examples": client.num_samples})


def make_client_app(config: FlowerConfig | None = None) -> ClientApp:
    """A ClientApp for ``config`` (``None``: defaults, updated by the run config).

    Handlers
    --------
    ``query.info``
        Replies this node's partition id (the ServerApp orders the nodes by it).
    ``query.probe``
        Loads the global client model, replies iteration 0's smashed batch of the round.
    ``train.fslsage``
        Loads the global model / aligned aux when sent, runs :meth:`Client.local_round`
        (FSL-SAGE) and replies the local model and the smashed batches for the lazy S-server.
    ``train.csefsl``
        Loads the global model and the averaged aux, runs CSE-FSL's local round and replies the
        local model, the local aux and the smashed batches.
    ``train.splitfed``
        One SplitFed iteration per message: applies the cut gradient of the previous iteration
        (:meth:`Client.splitfed_backward`, buffers and RNG restored from ``context.state``) and
        replies the next smashed batch, or, after the last, the local model.
    ``evaluate``
        Loads the final client and server models and replies the accuracy on local data.
    """
    app = ClientApp()

    def cfg_of(context: Context) -> FlowerConfig:
        return FlowerConfig.from_run_config(context.run_config, config)

    @app.query("info")
    def info(message: Message, context: Context) -> Message:
        pid = int(context.node_config["partition-id"])
        record = ConfigRecord({"partition-id": pid, "num-examples": 0})
        return Message(RecordDict({"info": record}), reply_to=message)

    @app.query("probe")
    def probe(message: Message, context: Context) -> Message:
        cfg = cfg_of(context)
        client = client_from_context(context, cfg)
        t = _receive(message, client)
        batch = client.probe(t)
        _save(context, client)
        content = RecordDict({"smashed": batches_to_record([batch]), "info": _info(client)})
        return Message(content, reply_to=message)

    def train(message: Message, context: Context, algorithm: str) -> Message:
        cfg = cfg_of(context)
        client = client_from_context(context, cfg)
        t = _receive(message, client)
        skip_first = bool(message.content.config_records["config"]["skip-first"])
        sent = client.local_round(t, algorithm, server_update_interval=cfg.q, skip_first=skip_first)
        _save(context, client)
        records: dict[str, ArrayRecord | MetricRecord | ConfigRecord] = {
            "client-model": state_to_record(client.model.state_dict()),
            "smashed": batches_to_record(sent),
            "info": _info(client),
        }
        if algorithm == "cse_fsl":
            records["aux"] = state_to_record(_aux_of(client).state_dict())
        return Message(RecordDict(records), reply_to=message)

    @app.train("fslsage")
    def train_fsl_sage(message: Message, context: Context) -> Message:
        return train(message, context, "fsl_sage")

    @app.train("csefsl")
    def train_cse_fsl(message: Message, context: Context) -> Message:
        return train(message, context, "cse_fsl")

    @app.train("splitfed")
    def train_splitfed(message: Message, context: Context) -> Message:
        cfg = cfg_of(context)
        client = client_from_context(context, cfg)
        t = _receive(message, client)
        iteration = config_int(message.content.config_records["config"], "iteration")
        if iteration > 0:
            grad = state_from_record(message.content.array_records["gradient"])["g"]
            arrays = context.state.array_records
            restored = {
                "buffers": state_from_record(arrays["splitfed-buffers"]),
                "rng": state_from_record(arrays["splitfed-rng"])["rng"],
            }
            client.splitfed_backward(t, iteration - 1, grad, restored)
        records: dict[str, ArrayRecord | MetricRecord | ConfigRecord] = {"info": _info(client)}
        if iteration < len(client.batches(t)):
            batch, saved = client.splitfed_forward(t, iteration)
            context.state["splitfed-buffers"] = state_to_record(saved["buffers"])
            context.state["splitfed-rng"] = state_to_record({"rng": saved["rng"]})
            records["smashed"] = batches_to_record([batch])
        else:
            records["client-model"] = state_to_record(client.model.state_dict())
        _save(context, client)
        return Message(RecordDict(records), reply_to=message)

    @app.evaluate()
    def evaluate(message: Message, context: Context) -> Message:
        cfg = cfg_of(context)
        client = client_from_context(context, cfg)
        _receive(message, client)
        split = build_split(cfg)
        split.server.load_state_dict(
            state_from_record(message.content.array_records["server-model"])
        )
        acc = accuracy_of(client.model, split.server, client.x, client.y)
        metrics = MetricRecord({"accuracy": acc, "num-examples": client.num_samples})
        return Message(RecordDict({"metrics": metrics, "info": _info(client)}), reply_to=message)

    return app


#: ClientApp for ``flwr run`` (hyper-parameters from the run config).
app = make_client_app()
