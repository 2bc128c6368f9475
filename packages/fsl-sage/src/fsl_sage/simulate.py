"""Plain-Python simulation of one algorithm over all its rounds (no Flower needed).

Two schedules of FSL-SAGE / CSE-FSL (spec Sec. 3, ``simulate.run``):

* ``"sequential"``: the official interleaving (``srijith1996/FSL-SAGE``, ``src/algos``): client
  after client, the S-server steps as soon as a smashed batch arrives, alignment right after
  iteration 0's server step.
* ``"round"``: the message protocol used on Flower: at alignment rounds a probe fetches each
  client's iteration-0 smashed batch first (counted as that upload); the S-server steps, buffers
  and aligns, then the clients train; the other smashed batches come back with the replies and the
  lazy S-server consumes them in client order.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from icml25_core import (
    ResultStore,
    check_choice,
    check_device,
    check_scalar,
    check_tensor,
    progress,
)

from .algorithms import Algorithm
from .align import nmse
from .aux import GradScalarAux, check_labels
from .buffer import AlignmentBuffer
from .comm import CommMeter, module_nbytes
from .models import SplitSpec
from .roles import Client, FServer, SmashedBatch, SServer

__all__ = ["History", "Simulation", "align_client", "evaluate", "run"]


@dataclass
class History:
    """Per-round records of a run.

    Attributes
    ----------
    records : list of dict
        One per round: ``round``, ``accuracy`` (test, in [0, 1], or None), ``official_bytes``
        and ``total_bytes`` (cumulative, in bytes), ``bytes`` (cumulative, by
        ``kind/direction``), ``align`` (list of ``{client, nmse_before, nmse_after,
        nmse_random}``, the last the NMSE of a freshly initialised aux on the same buffer).
    accuracy : list of (float or None)
        ``records[t]["accuracy"]`` per round (property).
    official_bytes : list of int
        ``records[t]["official_bytes"]`` per round (property): cumulative bytes without labels.
    """

    records: list[dict] = field(default_factory=list)

    @property
    def accuracy(self) -> list[float | None]:
        """Test accuracy after each round, a fraction in ``[0, 1]`` (``None`` for a round run
        without test data), in round order."""
        return [r["accuracy"] for r in self.records]

    @property
    def official_bytes(self) -> list[int]:
        """Cumulative bytes communicated up to the end of each round, as the official code
        counts them (every kind but ``labels``), in round order."""
        return [r["official_bytes"] for r in self.records]

    def bytes_to_accuracy(self, target: float) -> float:
        """Official bytes when test accuracy first reaches ``target`` (``inf`` if never).

        Raises
        ------
        TypeError, ValueError
            If `target` is not a number in ``[0, 1]`` (accuracy is a fraction, not percent).
        """
        check_scalar(target, "target", low=0.0, high=1.0)
        for r in self.records:
            if r["accuracy"] is not None and r["accuracy"] >= target:
                return float(r["official_bytes"])
        return float("inf")


def evaluate(client: nn.Module, server: nn.Module, x, y, batch_size: int = 1000) -> float:
    """Top-1 accuracy of ``server(client(x))`` in eval mode (fraction in [0, 1]).

    Parameters
    ----------
    client, server : nn.Module
    x : Tensor, shape [N, *X], float32
    y : Tensor, shape [N], int64
    batch_size : int, default=1000

    Raises
    ------
    TypeError, ValueError
        For bad `x` / `y` (dtype, NaN, empty, length mismatch, a shape the models cannot take,
        labels outside the server's classes) or `batch_size` < 1.
    """
    check_tensor(x, "x", dtype=(torch.float32, torch.float64))
    check_labels(y, "y", x.shape[0], None)
    check_scalar(batch_size, "batch_size", kind=int, low=1)
    for name, module in (("client", client), ("server", server)):
        if not isinstance(module, nn.Module):
            raise TypeError(f"`{name}` must be an nn.Module, got {type(module).__name__}")
    was = client.training, server.training
    client.eval(), server.eval()
    at_client, at_server = check_device(None, module=client), check_device(None, module=server)
    correct = 0
    try:
        with torch.no_grad():
            for start in range(0, x.shape[0], batch_size):
                try:
                    z = client(x[start : start + batch_size].to(at_client))
                    out = server(z.to(at_server)).cpu()
                except (RuntimeError, TypeError, ValueError, IndexError) as err:
                    raise ValueError(
                        f"`x` of per-sample shape {tuple(x.shape[1:])} does not fit "
                        f"`server(client(x))`: {err}"
                    ) from err
                if out.ndim != 2:
                    raise ValueError(f"`server` must return [N, C] scores, got {tuple(out.shape)}")
                if start == 0 and int(y.max()) >= out.shape[1]:
                    raise ValueError(
                        f"`y` must hold labels in [0, {out.shape[1]}) (the server's classes), "
                        f"got max {int(y.max())}"
                    )
                correct += int((out.argmax(1) == y[start : start + batch_size]).sum())
    finally:
        client.train(was[0]), server.train(was[1])
    return correct / x.shape[0]


def align_client(
    server: SServer, i: int, aux, algorithm: Algorithm, split: SplitSpec, round: int, seed: int
) -> dict:
    """The S-server's alignment of client ``i``'s aux at ``round`` (shared by the simulation and
    the Flower ServerApp): seeded shuffles, and the NMSE of a fresh aux as the reference.

    Returns
    -------
    dict
        ``{client, nmse_before, nmse_after, nmse_random}``.
    """
    gen = torch.Generator().manual_seed(seed * 7919 + round * 101 + i)
    stats = server.align(
        i, aux, epochs=algorithm.align_epochs, batch_size=algorithm.align_batch_size,
        lr=algorithm.align_lr, official_scale=algorithm.official_scale, generator=gen,
    )  # fmt: skip
    with torch.random.fork_rng():  # a fresh aux as the reference, without touching the RNG
        torch.manual_seed(seed * 31 + round * 7 + i)
        fresh = split.aux_factory().to(server.device)
    z, y, g_star = server.buffers[i].targets(server.model)
    return {
        "client": i,
        "nmse_before": stats.nmse_before,
        "nmse_after": stats.nmse_after,
        "nmse_random": nmse(fresh, z, y, g_star),
    }


def _aux_of(client: Client) -> GradScalarAux:
    """The client's auxiliary model, which its algorithm (FSL-SAGE, CSE-FSL) gave it."""
    assert client.aux is not None  # the algorithm built the client with one
    return client.aux


class Simulation:
    """All roles of one run, advanced one round at a time.

    Parameters
    ----------
    split : SplitSpec
        Its client model is copied to every client; its server model is the S-server's (copied).
    partitions : list of (Tensor [n_i, *X] float32, Tensor [n_i] int64)
        Each client's training data.
    algorithm : Algorithm
        From :mod:`fsl_sage.algorithms`.
    schedule : {"sequential", "round"}, default="sequential"
    batch_size : int, default=128
    lr : float, default=1e-3
    weight_decay : float, default=1e-4
    seed : int, default=200
        Official seed; seeds aux initialisation, batch orders and alignment shuffles.
    test : (Tensor, Tensor), optional
        Test data for the per-round accuracy.
    device : str or torch.device, optional
        Where every client model, aux and server model trains (DECISIONS 13); default the
        device of ``split.client``. Data stay where they are; batches move.

    Raises
    ------
    ValueError, TypeError
        For bad partitions or test data (not (x, y) pairs, empty list, dtype, NaN, a per-sample
        shape the client cannot take, labels outside ``[0, C)``: :meth:`SplitSpec.check_data`),
        a server or aux model that does not return ``[N, C]`` log-probabilities
        (:meth:`SplitSpec.check_aux`), an unknown schedule, ``schedule="round"`` with SplitFed
        (which needs the server every iteration), or a `device` this torch cannot use
        (``"cuda"`` without CUDA, ``"meta"``).
    """

    def __init__(
        self,
        split: SplitSpec,
        partitions,
        algorithm: Algorithm,
        *,
        schedule: str = "sequential",
        batch_size: int = 128,
        lr: float = 1e-3,
        weight_decay: float = 1e-4,
        seed: int = 200,
        test=None,
        device: str | torch.device | None = None,
    ):
        if not isinstance(split, SplitSpec):
            raise TypeError(f"`split` must be a SplitSpec, got {type(split).__name__}")
        if not isinstance(algorithm, Algorithm):
            raise TypeError(f"`algorithm` must be an Algorithm, got {type(algorithm).__name__}")
        check_choice(schedule, "schedule", ("sequential", "round"))
        if schedule == "round" and algorithm.name.startswith("splitfed"):
            raise ValueError("`schedule` 'round' needs no per-iteration server: not for SplitFed")
        if not isinstance(partitions, list | tuple) or not partitions:
            raise ValueError("`partitions` must be a non-empty list of (x, y) pairs")
        for i, pair in enumerate(partitions):
            split.check_data(pair, f"partitions[{i}]")
        if test is not None:
            split.check_data(test, "test")
        check_scalar(seed, "seed", kind=int, low=0)
        self.split, self.algorithm, self.schedule, self.test = split, algorithm, schedule, test
        self.seed, self.round = seed, 0
        self.device = check_device(device, module=split.client, available=True)
        name = algorithm.name
        self.clients = []
        with torch.random.fork_rng():  # aux inits drawn from `seed`, the caller's RNG untouched
            torch.manual_seed(seed)
            auxes = [split.aux_factory() if algorithm.uses_aux else None for _ in partitions]
        if auxes[0] is not None:
            split.check_aux(auxes[0])
        for i, ((x, y), aux) in enumerate(zip(partitions, auxes, strict=True)):
            model = copy.deepcopy(split.client)
            if name == "fedavg":
                model = nn.Sequential(model, copy.deepcopy(split.server))
            self.clients.append(
                Client(
                    i,
                    model,
                    x,
                    y,
                    aux=aux,
                    batch_size=batch_size,
                    lr=lr,
                    weight_decay=weight_decay,
                    seed=seed,
                    device=self.device,
                )
            )
        if name == "cse_fsl":  # CSE-FSL starts from one shared (averaged) aux
            FServer.average_modules([_aux_of(c) for c in self.clients], [1.0] * len(self.clients))
        n_servers = len(partitions) if name == "splitfed_v1" else 1
        self.servers = [
            SServer(
                copy.deepcopy(split.server),
                lr=lr,
                weight_decay=weight_decay,
                buffer_size=algorithm.buffer_size,
                device=self.device,
            )
            for _ in range(n_servers)
        ]
        # the S-server's copies of the aux models (aligned there, then sent down)
        self.server_aux = (
            [copy.deepcopy(_aux_of(c)) for c in self.clients] if name == "fsl_sage" else []
        )
        self.meter = CommMeter()
        self.history = History()

    # -------------------------------------------------------------- helpers
    @property
    def server(self) -> SServer:
        """The S-server (``servers[0]``): the only one, except under SplitFed-v1, which keeps
        one replica per client and averages them each round."""
        return self.servers[0]

    def _weights(self) -> list[float]:
        return [float(c.num_samples) for c in self.clients]

    def _upload(self, batch: SmashedBatch) -> None:
        self.meter.add("smashed", "up", batch.nbytes)
        self.meter.add("labels", "up", batch.label_nbytes)

    def _align(self, i: int, t: int) -> dict:
        record = align_client(
            self.server, i, self.server_aux[i], self.algorithm, self.split, t, self.seed
        )
        _aux_of(self.clients[i]).load_state_dict(self.server_aux[i].state_dict())
        self.meter.add("aux_model", "down", module_nbytes(self.server_aux[i]))
        return record

    # -------------------------------------------------------------- one round
    def _aux_round(self, t: int) -> list[dict]:
        alg, q = self.algorithm, self.algorithm.server_update_interval
        aligning, aligned = alg.is_align_round(t), []
        if self.schedule == "sequential":
            for i, client in enumerate(self.clients):

                def exchange(batch, i=i):
                    self._upload(batch)
                    self.server.step(batch, t)
                    if aligning and batch.iteration == 0:
                        aligned.append(self._align(i, t))

                client.local_round(t, alg.name, server_update_interval=q, exchange=exchange)
            return aligned
        if aligning:
            for i, client in enumerate(self.clients):
                batch = client.probe(t)
                self._upload(batch)
                self.server.step(batch, t)
                aligned.append(self._align(i, t))
        replies = [
            c.local_round(t, alg.name, server_update_interval=q, skip_first=aligning)
            for c in self.clients
        ]
        for sent in replies:
            for batch in sent:
                self._upload(batch)
                self.server.step(batch, t)
        return aligned

    def _splitfed_round(self, t: int) -> None:
        for i, client in enumerate(self.clients):
            server = self.servers[i] if self.algorithm.name == "splitfed_v1" else self.server

            def exchange(batch, server=server):
                self._upload(batch)
                grad = server.split_step(batch, t)
                self.meter.add("gradients", "down", 4 * grad.numel())
                return grad

            client.local_round(t, "splitfed", exchange=exchange)
        if self.algorithm.name == "splitfed_v1":
            FServer.average_modules([s.model for s in self.servers], self._weights())

    def run_round(self) -> dict:
        """Advance one round; returns (and records) its history entry."""
        t, name = self.round, self.algorithm.name
        aligned = []
        if name in ("fsl_sage", "cse_fsl"):
            aligned = self._aux_round(t)
        elif name.startswith("splitfed"):
            self._splitfed_round(t)
        else:
            for c in self.clients:
                c.local_round(t, "fedavg")
        models = [c.model for c in self.clients]
        size = module_nbytes(models[0])  # FedAvg: the whole model, |theta_c + theta_s|
        FServer.average_modules(models, self._weights())
        for _ in self.clients:
            self.meter.add("client_model", "up", size)
            self.meter.add("client_model", "down", size)
        if name == "cse_fsl":
            FServer.average_modules([_aux_of(c) for c in self.clients], self._weights())
            for c in self.clients:
                self.meter.add("aux_model", "up", module_nbytes(_aux_of(c)))
                self.meter.add("aux_model", "down", module_nbytes(_aux_of(c)))
        record = {
            "round": t,
            "accuracy": self.accuracy() if self.test is not None else None,
            "official_bytes": self.meter.official_total(),
            "total_bytes": self.meter.total(),
            "bytes": self.meter.as_dict(),
            "align": aligned,
        }
        self.history.records.append(record)
        self.round += 1
        return record

    def accuracy(self) -> float:
        """Test accuracy of the averaged model (client 0's copy after averaging)."""
        model = self.clients[0].model
        assert self.test is not None  # run_round evaluates only with test data
        if self.algorithm.name == "fedavg":
            assert isinstance(model, nn.Sequential)  # FedAvg trains the whole (client, server)
            return evaluate(model[0], model[1], *self.test)
        return evaluate(model, self.server.model, *self.test)

    # -------------------------------------------------------------- checkpoints
    def state_dict(self) -> dict:
        """Everything needed to resume: models, optimisers, aux models, buffers, bytes, history."""
        return {
            "round": self.round,
            "clients": [
                {
                    "model": c.model.state_dict(),
                    "opt": c.optimizer.state_dict(),
                    "aux": None if c.aux is None else c.aux.state_dict(),
                    "aux_opt": None if c.aux_optimizer is None else c.aux_optimizer.state_dict(),
                }
                for c in self.clients
            ],
            "servers": [
                {
                    "model": s.model.state_dict(),
                    "opt": s.optimizer.state_dict(),
                    "buffers": {k: b.state_dict() for k, b in s.buffers.items()},
                }
                for s in self.servers
            ],
            "server_aux": [a.state_dict() for a in self.server_aux],
            "meter": self.meter.as_dict(),
            "history": self.history.records,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.round = state["round"]
        for c, s in zip(self.clients, state["clients"], strict=True):
            c.model.load_state_dict(s["model"])
            c.optimizer.load_state_dict(s["opt"])
            if c.aux is not None and c.aux_optimizer is not None:
                c.aux.load_state_dict(s["aux"])
                c.aux_optimizer.load_state_dict(s["aux_opt"])
        for srv, s in zip(self.servers, state["servers"], strict=True):
            srv.model.load_state_dict(s["model"])
            srv.optimizer.load_state_dict(s["opt"])
            srv.buffers = {}
            for k, b in s["buffers"].items():
                srv.buffers[k] = AlignmentBuffer(b["max_size"])
                srv.buffers[k].load_state_dict(b)
        for a, s in zip(self.server_aux, state["server_aux"], strict=True):
            a.load_state_dict(s)
        self.meter = CommMeter.from_dict(state["meter"])
        self.history = History(list(state["history"]))


def _checkpoint_folder(checkpoint) -> Path:
    if not isinstance(checkpoint, str | os.PathLike):
        raise TypeError(f"`checkpoint` must be a str or path, got {type(checkpoint).__name__}")
    folder = Path(checkpoint)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"`checkpoint` {str(folder)!r} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(f"`checkpoint` folder {str(folder)!r} cannot be created: {err}") from err
    return folder


def run(
    split: SplitSpec,
    partitions,
    algorithm: Algorithm,
    *,
    rounds: int,
    schedule: str = "sequential",
    batch_size: int = 128,
    lr: float = 1e-3,
    weight_decay: float = 1e-4,
    seed: int = 200,
    test=None,
    max_bytes: int | None = None,
    checkpoint=None,
    show_progress: bool = True,
    device: str | torch.device | None = None,
) -> History:
    """Train ``split`` with ``algorithm`` for ``rounds`` rounds; return the per-round history.

    Parameters
    ----------
    split, partitions, algorithm, schedule, batch_size, lr, weight_decay, seed, test, device
        As :class:`Simulation` (official defaults: batch 128, Adam 1e-3, wd 1e-4, seed 200).
    rounds : int
        Number of communication rounds (official 200), one local epoch each.
    max_bytes : int, optional
        Bytes. No new round starts once the official bytes have reached this (official
        ``comm_threshold_mb`` = 204800 MiB); the round that crosses it is completed, so the
        total may exceed it by up to one round's bytes.
    checkpoint : str or Path, optional
        Folder; the full state is saved after each round (``state.pt``) with the history
        (``history.jsonl``, an ``icml25_core.ResultStore``), and a rerun resumes from it.
    show_progress : bool, default=True

    Returns
    -------
    History

    Raises
    ------
    TypeError
        If `checkpoint` is not a str or path.
    ValueError
        If ``rounds`` < 1 or ``max_bytes`` < 1, if `checkpoint` is a file or cannot be
        created, and as :class:`Simulation`.
    """
    check_scalar(rounds, "rounds", kind=int, low=1)
    if max_bytes is not None:
        check_scalar(max_bytes, "max_bytes", kind=int, low=1)
    folder = None if checkpoint is None else _checkpoint_folder(checkpoint)
    sim = Simulation(
        split, partitions, algorithm, schedule=schedule, batch_size=batch_size, lr=lr,
        weight_decay=weight_decay, seed=seed, test=test, device=device,
    )  # fmt: skip
    store = state_path = None
    if folder is not None:
        config = {
            "algorithm": repr(algorithm), "schedule": schedule, "batch_size": batch_size,
            "lr": lr, "weight_decay": weight_decay, "seed": seed,
            "sizes": [int(y.shape[0]) for _, y in partitions],
        }  # fmt: skip
        store = ResultStore(folder / "history.jsonl", config=config)
        state_path = folder / "state.pt"
        if state_path.exists():
            sim.load_state_dict(torch.load(state_path, weights_only=False, map_location=sim.device))
    bar = progress(total=rounds, desc=algorithm.name, unit="round", disable=not show_progress)
    bar.update(sim.round)
    while sim.round < rounds:
        if max_bytes is not None and sim.meter.official_total() >= max_bytes:
            break
        record = sim.run_round()
        if store is not None and state_path is not None:
            tmp = state_path.with_suffix(".tmp")
            torch.save(sim.state_dict(), tmp)
            tmp.replace(state_path)
            store.put(f"round-{record['round']}", record)
        bar.update(1)
        if record["accuracy"] is not None:
            bar.set_postfix(acc=f"{record['accuracy']:.3f}")
    bar.close()
    return sim.history
