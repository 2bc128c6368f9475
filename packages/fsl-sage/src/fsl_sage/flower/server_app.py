"""The FSL-SAGE ServerApp: S-server and F-server behind one ``@app.main()`` loop.

Protocol per round ``t`` (the "round" schedule of :mod:`fsl_sage.simulate`), over the clients
sampled for the round (``fraction_train``):

1. FSL-SAGE alignment round (``t % l == 0``): ``query.probe`` with the global client model;
   each reply's iteration-0 smashed batch is consumed by the S-server (client order), which then
   aligns that client's aux model;
2. ``train.<algorithm>`` with the global client model (unless sent in the probe) and the
   aligned aux (FSL-SAGE) or the averaged aux (CSE-FSL); replies carry the local client model
   (and aux, CSE-FSL) and the smashed batches, consumed by the lazy S-server in client order;
3. the F-server averages the client models (and CSE-FSL's aux models) with weights ``n_i / n``.

A ClientApp that fails or does not answer is left out of the round with a warning, as long as
``min_replies`` answered. After the last round, ``evaluate`` sends the final client and server
models for accuracy on each client's data. Bytes are counted from the arrays sent
(:class:`fsl_sage.CommMeter`).

The module belongs to the extra ``[flower]`` (``optional-modules`` of the card): without flwr,
importing it raises an ImportError naming ``pip install 'fsl-sage[flower]'``.
"""

from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Callable
from logging import WARNING
from pathlib import Path

import numpy as np
import torch

from icml25_core.extras import requires_extra

from ..comm import CommMeter
from ..roles import FServer, SServer
from ..simulate import align_client
from ..simulate import evaluate as accuracy_of
from .config import FlowerConfig, build_split, load_test
from .records import (
    batches_from_record,
    config_float,
    config_int,
    record_nbytes,
    state_from_record,
    state_to_record,
)

with requires_extra("fsl-sage", "flower"):
    from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
    from flwr.common.logger import log
    from flwr.serverapp import Grid, ServerApp

__all__ = ["app", "make_server_app"]


def _wait_for_nodes(grid: Grid, count: int, timeout: float = 120.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        nodes = sorted(grid.get_node_ids())
        if len(nodes) >= count:
            return nodes[:count]
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(nodes)} of {count} SuperNodes connected")
        time.sleep(0.5)


def _exchange(grid: Grid, messages: list[Message], min_replies: int) -> list[Message]:
    """Send, wait, and keep the successful replies in client order; failed or missing ones are
    logged and left out.

    Raises
    ------
    RuntimeError
        If fewer than `min_replies` (or, with fewer messages, all of them) succeeded.
    """
    replies = list(grid.send_and_receive(messages))
    ok = [r for r in replies if not r.has_error()]
    for reply in replies:
        if reply.has_error():
            log(WARNING, "fsl-sage: a ClientApp failed and is left out: %s", reply.error.reason)
    if len(replies) < len(messages):
        log(WARNING, "fsl-sage: %d ClientApp replies missing", len(messages) - len(replies))
    if len(ok) < min(min_replies, len(messages)):
        raise RuntimeError(
            f"only {len(ok)} of {len(messages)} ClientApps answered, fewer than `min_replies` = "
            f"{min_replies}"
        )
    return sorted(ok, key=lambda r: config_int(r.content.config_records["info"], "partition-id"))


def _by_partition(grid: Grid, nodes: list[int]) -> list[int]:
    """The nodes ordered by their partition id (``query.info``), so that client order, and so
    SplitFed's sequence and the sampling, do not depend on Flower's random node ids."""
    msgs = [Message(RecordDict({}), node, "query.info", group_id="info") for node in nodes]
    ordered = [r.metadata.src_node_id for r in _exchange(grid, msgs, 1)]  # by partition id
    return ordered + [n for n in nodes if n not in ordered]  # a failed node keeps its place last


def _sample(nodes: list[int], cfg: FlowerConfig, t: int) -> list[int]:
    """``ceil(fraction_train * N)`` nodes of round `t`, drawn from ``(seed, t)``."""
    k = max(1, math.ceil(cfg.fraction_train * len(nodes)))
    if k >= len(nodes):
        return list(nodes)
    picked = np.random.default_rng([cfg.seed, t]).choice(len(nodes), k, replace=False)
    return [nodes[i] for i in sorted(picked)]


def _consume(server: SServer, meter: CommMeter, reply: Message, t: int) -> list:
    pid = config_int(reply.content.config_records["info"], "partition-id")
    smashed = reply.content.array_records["smashed"]
    for key, arr in smashed.items():
        kind = "smashed" if key.startswith("z.") else "labels"
        meter.add(kind, "up", int(arr.numpy().nbytes))
    return batches_from_record(smashed, pid)


def _record(t, split, global_state, server, test, meter, aligned) -> dict:
    """The history entry of round `t` (accuracy of the global client + server model)."""
    accuracy = None
    if test is not None:
        split.client.load_state_dict(global_state)
        accuracy = accuracy_of(split.client, server.model, *test)
    return {
        "round": t,
        "accuracy": accuracy,
        "official_bytes": meter.official_total(),
        "total_bytes": meter.total(),
        "align": aligned,
    }


def _splitfed_round(grid, nodes, model_rec, server, replicas, meter, t, min_replies):
    """SplitFed over Flower: the clients in turn, one ``train.splitfed`` message per local
    iteration (it carries the cut gradient of the previous iteration and asks for the next
    smashed batch); the last one returns the client model. A client that fails is left out.

    Returns
    -------
    (states, weights, partition ids) of the clients that finished the round.
    """
    states, weights, pids = [], [], []
    for node in nodes:
        iteration, grad = 0, None
        while True:
            records: dict[str, ArrayRecord | MetricRecord | ConfigRecord] = {
                "config": ConfigRecord({"round": t, "iteration": iteration})
            }
            if iteration == 0:
                records["client-model"] = model_rec
                meter.add("client_model", "down", record_nbytes(model_rec))
            if grad is not None:
                records["gradient"] = state_to_record({"g": grad})
            msg = Message(RecordDict(records), node, "train.splitfed", group_id=str(t))
            replies = _exchange(grid, [msg], 0)
            if not replies:
                break  # failed: left out of the round
            reply = replies[0]
            info = reply.content.config_records["info"]
            pid = config_int(info, "partition-id")
            if "smashed" in reply.content.array_records:
                (batch,) = _consume(server, meter, reply, t)
                target = replicas[pid] if replicas else server
                grad = target.split_step(batch, t)
                meter.add("gradients", "down", 4 * grad.numel())
                iteration += 1
                continue
            rec = reply.content.array_records["client-model"]
            meter.add("client_model", "up", record_nbytes(rec))
            states.append(state_from_record(rec))
            weights.append(config_float(info, "num-examples"))
            pids.append(pid)
            break
    if len(states) < min(min_replies, len(nodes)):
        raise RuntimeError(
            f"only {len(states)} of {len(nodes)} ClientApps finished the SplitFed round, fewer "
            f"than `min_replies` = {min_replies}"
        )
    return states, weights, pids


def make_server_app(
    config: FlowerConfig | None = None, on_finish: Callable[[dict], None] | None = None
) -> ServerApp:
    """A ServerApp running FSL-SAGE for ``config`` (``None``: defaults + the run config).

    Parameters
    ----------
    config : FlowerConfig, optional
    on_finish : callable, optional
        Called with ``{"history", "bytes", "official_bytes", "client_model", "server_model",
        "aux", "client_metrics"}`` after the run (states as ``state_dict``s).
    """
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        cfg = FlowerConfig.from_run_config(context.run_config, config)
        alg = cfg.algorithm()
        split = build_split(cfg)
        torch.manual_seed(cfg.seed)  # aux initialisation as in fsl_sage.Simulation
        server_aux = [split.aux_factory() for _ in range(cfg.num_clients)]
        split.check_aux(server_aux[0])
        # CSE-FSL: one shared aux, the average of the initial ones (as fsl_sage.Simulation)
        shared_aux = FServer.aggregate(
            [a.state_dict() for a in server_aux], [1.0] * len(server_aux)
        )
        server = SServer(
            split.server, lr=cfg.lr, weight_decay=cfg.weight_decay, buffer_size=cfg.buffer_size,
            device=cfg.device or None,
        )  # fmt: skip
        for aux in server_aux:  # aligned where the server model and its buffers are
            aux.to(server.device)
        # SplitFed-v1 keeps one server replica per client, averaged each round
        replicas = [
            SServer(
                copy.deepcopy(split.server),
                lr=cfg.lr,
                weight_decay=cfg.weight_decay,
                device=server.device,
            )
            for _ in range(cfg.num_clients if alg.name == "splitfed_v1" else 0)
        ]
        test = load_test(cfg)
        if test is not None:
            source = f"test_data {cfg.test_data!r}" if cfg.test_data else f"dataset {cfg.dataset!r}"
            split.check_data(test, f"{source} (test)")
        meter, history = CommMeter(), []
        nodes = _by_partition(grid, _wait_for_nodes(grid, cfg.num_clients))
        global_state = {k: v.clone() for k, v in split.client.state_dict().items()}
        node_of: dict[int, int] = {}
        for t in range(cfg.rounds):
            aligning = alg.is_align_round(t)
            model_rec = state_to_record(global_state)
            sampled = _sample(nodes, cfg, t)
            aligned, probed = [], set()
            if alg.name.startswith("splitfed"):
                states, weights, pids = _splitfed_round(
                    grid, sampled, model_rec, server, replicas, meter, t, cfg.min_replies
                )
                global_state = FServer.aggregate(states, weights)
                if replicas:  # every replica starts the next round from their average
                    avg = FServer.aggregate([replicas[p].model.state_dict() for p in pids], weights)
                    for replica in [*replicas, server]:
                        replica.model.load_state_dict(copy.deepcopy(avg))
                history.append(_record(t, split, global_state, server, test, meter, []))
                continue
            if aligning:
                msgs = []
                for node in sampled:
                    content = RecordDict(
                        {"client-model": model_rec, "config": ConfigRecord({"round": t})}
                    )
                    meter.add("client_model", "down", record_nbytes(model_rec))
                    msgs.append(Message(content, node, "query.probe", group_id=str(t)))
                for reply in _exchange(grid, msgs, cfg.min_replies):
                    node_of[config_int(reply.content.config_records["info"], "partition-id")] = (
                        reply.metadata.src_node_id
                    )
                    probed.add(reply.metadata.src_node_id)
                    for batch in _consume(server, meter, reply, t):
                        server.step(batch, t)
                        aligned.append(
                            align_client(
                                server,
                                batch.client_id,
                                server_aux[batch.client_id],
                                alg,
                                split,
                                t,
                                cfg.seed,
                            )
                        )
            msgs = []
            for node in sampled:
                records: dict[str, ArrayRecord | MetricRecord | ConfigRecord] = {
                    "config": ConfigRecord({"round": t, "skip-first": node in probed})
                }
                if node in probed:  # the probe carried the global model; send the aligned aux
                    pid = next(p for p, n in node_of.items() if n == node)
                    aux_rec = state_to_record(server_aux[pid].state_dict())
                    records["aux"] = aux_rec
                    meter.add("aux_model", "down", record_nbytes(aux_rec))
                else:
                    records["client-model"] = model_rec
                    meter.add("client_model", "down", record_nbytes(model_rec))
                if alg.name == "cse_fsl":
                    aux_rec = state_to_record(shared_aux)
                    records["aux"] = aux_rec
                    meter.add("aux_model", "down", record_nbytes(aux_rec))
                kind = "train." + alg.name.replace("_", "")
                msgs.append(Message(RecordDict(records), node, kind, group_id=str(t)))
            replies = _exchange(grid, msgs, cfg.min_replies)
            states, weights, auxes = [], [], []
            for reply in replies:
                info = reply.content.config_records["info"]
                node_of[config_int(info, "partition-id")] = reply.metadata.src_node_id
                rec = reply.content.array_records["client-model"]
                meter.add("client_model", "up", record_nbytes(rec))
                states.append(state_from_record(rec))
                weights.append(config_float(info, "num-examples"))
                if alg.name == "cse_fsl":
                    aux_rec = reply.content.array_records["aux"]
                    meter.add("aux_model", "up", record_nbytes(aux_rec))
                    auxes.append(state_from_record(aux_rec))
            for reply in replies:  # the lazy S-server, in client order
                for batch in _consume(server, meter, reply, t):
                    server.step(batch, t)
            global_state = FServer.aggregate(states, weights)
            if auxes:
                shared_aux = FServer.aggregate(auxes, weights)
            history.append(_record(t, split, global_state, server, test, meter, aligned))
        metrics = []
        final = RecordDict(
            {
                "client-model": state_to_record(global_state),
                "server-model": state_to_record(server.model.state_dict()),
                "config": ConfigRecord({"round": cfg.rounds}),
            }
        )
        msgs = [Message(final, node, "evaluate", group_id="final") for node in nodes]
        for reply in _exchange(grid, msgs, cfg.min_replies):
            metrics.append(dict(reply.content.metric_records["metrics"]))
        if cfg.result_path:
            summary = {
                "history": history,
                "bytes": meter.as_dict(),
                "official_bytes": meter.official_total(),
                "client_metrics": metrics,
            }
            Path(cfg.result_path).write_text(json.dumps(summary), encoding="utf-8")
        if on_finish is not None:
            on_finish(
                {
                    "history": history,
                    "bytes": meter.as_dict(),
                    "official_bytes": meter.official_total(),
                    "client_model": global_state,
                    "server_model": server.model.state_dict(),
                    "aux": [a.state_dict() for a in server_aux],
                    "client_metrics": metrics,
                }
            )

    return app


#: ServerApp for ``flwr run`` (hyper-parameters from the run config).
app = make_server_app()
