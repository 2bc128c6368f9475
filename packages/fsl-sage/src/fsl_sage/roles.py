"""The three roles of federated split learning and the messages between them.

Roles (FSL-SAGE, Sec. 3; official ``src/algos``): clients ``i = 1..m`` hold the client model
``theta_c,i`` and the auxiliary model ``a_i``; the S-server holds the server model ``theta_s`` and
one alignment buffer per client; the F-server averages client models with weights ``n_i / n``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from icml25_core import check_choice, check_device, check_scalar, check_tensor

from .align import AlignStats, align
from .aux import GradScalarAux, check_labels, check_smashed
from .buffer import AlignmentBuffer

__all__ = ["AuxState", "Client", "FServer", "ModelState", "SServer", "SmashedBatch"]


def _state_nbytes(state: dict[str, torch.Tensor]) -> int:
    return 4 * sum(t.numel() for t in state.values())


@dataclass
class SmashedBatch:
    """Smashed data of one local iteration, sent client -> S-server with its labels.

    Attributes
    ----------
    client_id : int
    iteration : int
        Local iteration ``j`` within the round.
    z : Tensor, shape [B, *S], float32
    y : Tensor, shape [B], int64
    """

    client_id: int
    iteration: int
    z: torch.Tensor
    y: torch.Tensor

    @property
    def nbytes(self) -> int:
        """Official size: ``4 * z.numel()`` (float32; labels not counted)."""
        return 4 * self.z.numel()

    @property
    def label_nbytes(self) -> int:
        """Size of the int64 labels: ``8 * B`` (counted under ``labels``)."""
        return 8 * self.y.numel()


@dataclass
class ModelState:
    """A model's ``state_dict`` in transit; ``nbytes`` = 4 x elements (official)."""

    state: dict[str, torch.Tensor]

    @property
    def nbytes(self) -> int:
        """Official size in bytes: ``4 x`` the number of elements of every entry of `state`
        (all counted as float32, integer buffers included)."""
        return _state_nbytes(self.state)


@dataclass
class AuxState(ModelState):
    """An auxiliary model's ``state_dict`` in transit."""


_LOCAL_ALGORITHMS = ("fsl_sage", "cse_fsl", "splitfed", "fedavg")


def _check_adam(lr, weight_decay) -> None:
    check_scalar(lr, "lr", low=0.0, high=math.inf, inclusive="neither")
    check_scalar(weight_decay, "weight_decay", low=0.0, high=math.inf, inclusive="left")


def _check_finite(z: torch.Tensor, client_id: int, round: int) -> None:
    if not torch.isfinite(z).all():
        raise FloatingPointError(
            f"smashed data of client {client_id} in round {round} holds NaN or inf"
        )


class Client:
    """One client: its data, client model, optimiser and auxiliary model.

    Parameters
    ----------
    client_id : int
    model : nn.Module
        Client model ``x -> z`` (for FedAvg the whole model ``x -> log-probs``). Used as is.
    x : Tensor, shape [n_i, *X], float32
    y : Tensor, shape [n_i], int64
    aux : GradScalarAux, optional
        FSL-SAGE / CSE-FSL auxiliary model.
    batch_size : int, default=128
        Official default. The last batch of a round may be shorter.
    lr : float, default=1e-3
    weight_decay : float, default=1e-4
        Adam hyper-parameters of the client (and of a CSE-FSL aux).
    seed : int, default=200
        Batch order of round ``t`` is a permutation drawn from ``seed``, ``client_id`` and ``t``
        only, so any schedule sees the same batches.
    device : str or torch.device, optional
        Where the model and aux train (moved there); default the model's device. `x`, `y`
        stay where they are and each batch moves (DECISIONS 13).

    Raises
    ------
    TypeError, ValueError
        For a `model` that is not an ``nn.Module`` or has no parameters, an `aux` that is not a
        :class:`GradScalarAux`, bad data (dtype, NaN, empty, length mismatch),
        hyper-parameters (``lr`` finite and > 0, ``weight_decay`` finite and >= 0) or a
        `device` this torch cannot use (``"cuda"`` without CUDA, ``"meta"``).
    """

    def __init__(
        self,
        client_id: int,
        model: nn.Module,
        x: torch.Tensor,
        y: torch.Tensor,
        *,
        aux: GradScalarAux | None = None,
        batch_size: int = 128,
        lr: float = 1e-3,
        weight_decay: float = 1e-4,
        seed: int = 200,
        device: str | torch.device | None = None,
    ):
        check_scalar(client_id, "client_id", kind=int, low=0)
        if not isinstance(model, nn.Module):
            raise TypeError(f"`model` must be an nn.Module, got {type(model).__name__}")
        if next(iter(model.parameters()), None) is None:
            raise ValueError("`model` has no parameters (Adam needs some): move the cut deeper")
        check_tensor(x, "x", dtype=(torch.float32, torch.float64))
        check_labels(y, "y", x.shape[0], None)
        if aux is not None and not isinstance(aux, GradScalarAux):
            raise TypeError(f"`aux` must be a GradScalarAux or None, got {type(aux).__name__}")
        check_scalar(batch_size, "batch_size", kind=int, low=1)
        _check_adam(lr, weight_decay)
        check_scalar(seed, "seed", kind=int, low=0)
        self.device = check_device(device, module=model, available=True)
        model.to(self.device)
        if aux is not None:
            aux.to(self.device)
        self.client_id, self.model, self.x, self.y, self.aux = client_id, model, x, y, aux
        self.batch_size, self.seed = batch_size, seed
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
        self.aux_optimizer = (
            None
            if aux is None
            else torch.optim.Adam(aux.parameters(), lr=lr, weight_decay=weight_decay)
        )

    @property
    def num_samples(self) -> int:
        """``n_i``, the weight of this client in the F-server's average."""
        return int(self.y.shape[0])

    def batches(self, round: int) -> list[torch.Tensor]:
        """Index batches of round ``round`` (one local epoch; the last may be short).

        Raises
        ------
        TypeError, ValueError
            If `round` is not an int >= 0.
        """
        check_scalar(round, "round", kind=int, low=0)
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + round * 10_007 + self.client_id)
        order = torch.randperm(self.num_samples, generator=gen)
        return list(order.split(self.batch_size))

    def splitfed_forward(self, round: int, iteration: int) -> tuple[SmashedBatch, dict[str, Any]]:
        """Iteration `iteration` of a SplitFed round, split at the server round trip: the
        smashed batch to send, and the snapshot :meth:`splitfed_backward` needs.

        Used where the server's cut gradient comes in a later message (Flower): the forward
        runs as in :meth:`local_round` (train mode, BatchNorm statistics updated), without a
        graph; the snapshot holds the floating buffers and the RNG state from before it.

        Raises
        ------
        ValueError
            If `iteration` is not in ``[0, len(batches(round)))``.
        FloatingPointError
            If the smashed data holds NaN or inf.
        """
        idx = self._iteration_batch(round, iteration)
        snapshot = {
            "buffers": {k: v.detach().clone() for k, v in self.model.named_buffers()},
            "rng": torch.get_rng_state(),
        }
        x, y = self._batch(idx)
        self.model.train()
        with torch.no_grad():
            z = self.model(x)
        _check_finite(z, self.client_id, round)
        return SmashedBatch(self.client_id, iteration, z.detach().clone(), y.clone()), snapshot

    def splitfed_backward(
        self, round: int, iteration: int, grad: torch.Tensor, snapshot: dict
    ) -> None:
        """Finish iteration `iteration`: restore the buffers and RNG of `snapshot`, recompute
        the forward with a graph, ``z.backward(grad)`` and step; the client then is exactly
        where :meth:`local_round` ("splitfed") leaves it after that iteration.

        Raises
        ------
        ValueError
            If `iteration` is out of range or `grad` does not have the smashed data's shape.
        """
        idx = self._iteration_batch(round, iteration)
        with torch.no_grad():
            for name, buf in self.model.named_buffers():
                buf.copy_(snapshot["buffers"][name])
        torch.set_rng_state(snapshot["rng"])
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        z = self.model(self._batch(idx)[0])
        check_tensor(grad, "grad", dtype=(torch.float32, torch.float64))
        if grad.shape != z.shape:
            raise ValueError(f"`grad` must have the shape of z {tuple(z.shape)}, got "
                             f"{tuple(grad.shape)}")  # fmt: skip
        z.backward(grad.to(z))
        self.optimizer.step()

    def _batch(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[idx].to(self.device), self.y[idx].to(self.device)

    def _iteration_batch(self, round: int, iteration: int) -> torch.Tensor:
        batches = self.batches(round)
        check_scalar(iteration, "iteration", kind=int, low=0, high=len(batches) - 1)
        return batches[iteration]

    def probe(self, round: int) -> SmashedBatch:
        """Smashed data of iteration 0 of ``round``, computed without changing any state.

        Used by the "round" schedule (and Flower's ``probe`` message) at alignment rounds.
        """
        idx = self.batches(round)[0]
        x, y = self._batch(idx)
        with torch.no_grad():
            z = self.model(x)
        _check_finite(z, self.client_id, round)
        return SmashedBatch(self.client_id, 0, z.detach().clone(), y.clone())

    def local_round(
        self,
        round: int,
        algorithm: str = "fsl_sage",
        *,
        server_update_interval: int = 5,
        exchange: Callable[[SmashedBatch], torch.Tensor | None] | None = None,
        skip_first: bool = False,
    ) -> list[SmashedBatch]:
        """One local epoch of ``algorithm``; returns the smashed batches meant for the S-server.

        Parameters
        ----------
        round : int
        algorithm : {"fsl_sage", "cse_fsl", "splitfed", "fedavg"}
            ``fsl_sage``: ``z.backward(a_i's estimate)``, the batch-mean gradient (spec step 4);
            ``cse_fsl``: the aux classifier's local loss trains client and aux; ``splitfed``:
            ``exchange`` returns the server's cut gradient every iteration; ``fedavg``:
            whole-model local training.
        server_update_interval : int, default=5
            q: iterations ``j % q == 0`` produce a :class:`SmashedBatch` (fsl_sage, cse_fsl).
        exchange : callable, optional
            Called with each batch as soon as it is produced (the "sequential" schedule); for
            ``splitfed`` it must return ``dCE_mean/dz``.
        skip_first : bool, default=False
            Iteration 0's batch was already sent by :meth:`probe` (do not send it again).

        Returns
        -------
        list of SmashedBatch
            In iteration order (empty for splitfed and fedavg).

        Raises
        ------
        TypeError, ValueError
            For an unknown `algorithm`, a negative `round`, ``q < 1``, ``fsl_sage`` / ``cse_fsl``
            on a client without `aux`, or ``splitfed`` without `exchange`.
        FloatingPointError
            If the smashed data holds NaN or inf (names client and round).
        """
        check_choice(algorithm, "algorithm", _LOCAL_ALGORITHMS)
        check_scalar(round, "round", kind=int, low=0)
        check_scalar(server_update_interval, "server_update_interval (q)", kind=int, low=1)
        if algorithm in ("fsl_sage", "cse_fsl") and self.aux is None:
            raise ValueError(f"`algorithm` {algorithm!r} needs a client built with an `aux` model")
        if algorithm == "splitfed" and exchange is None:
            raise ValueError(
                "`algorithm` 'splitfed' needs an `exchange` returning the cut gradient"
            )
        sent = []
        self.model.train()
        for j, idx in enumerate(self.batches(round)):
            x, y = self._batch(idx)
            self.optimizer.zero_grad(set_to_none=True)
            z = self.model(x)
            _check_finite(z, self.client_id, round)
            if algorithm == "fedavg":
                F.nll_loss(z, y).backward()
            elif algorithm == "splitfed":
                assert exchange is not None  # checked above
                grad = exchange(SmashedBatch(self.client_id, j, z.detach().clone(), y.clone()))
                if not isinstance(grad, torch.Tensor):
                    raise TypeError(
                        "`exchange` must return the cut gradient (a Tensor) for splitfed"
                    )
                z.backward(grad.to(z))
            else:
                if j % server_update_interval == 0 and not (skip_first and j == 0):
                    batch = SmashedBatch(self.client_id, j, z.detach().clone(), y.clone())
                    sent.append(batch)
                    if exchange is not None:
                        exchange(batch)
                assert self.aux is not None  # checked above
                assert self.aux_optimizer is not None  # made with the aux
                if algorithm == "fsl_sage":
                    z.backward(self.aux.estimate(z.detach(), y))  # batch-mean scale
                elif algorithm == "cse_fsl":
                    self.aux_optimizer.zero_grad(set_to_none=True)
                    F.nll_loss(self.aux(z), y).backward()
                    self.aux_optimizer.step()
                else:
                    raise ValueError(f"`algorithm` must be a known algorithm, got {algorithm!r}")
            self.optimizer.step()
        return sent


class SServer:
    """The S-server: server model, its optimiser and one alignment buffer per client.

    Parameters
    ----------
    model : nn.Module
        ``z -> log-probs``.
    lr : float, default=1e-3
    weight_decay : float, default=1e-4
        Adam (official optimiser; wd from the research notes).
    buffer_size : int, default=1000
        M per client.
    device : str or torch.device, optional
        Where the server model steps (moved there) and the buffers live; default the model's
        device. Incoming batches move there; ``split_step``'s gradient is on it.

    Raises
    ------
    TypeError, ValueError
        For a `model` that is not an ``nn.Module``, bad hyper-parameters (``lr`` finite and
        > 0, ``weight_decay`` finite and >= 0, ``buffer_size`` >= 1) or a `device` this torch
        cannot use (``"cuda"`` without CUDA, ``"meta"``).
    """

    def __init__(
        self, model: nn.Module, *, lr: float = 1e-3, weight_decay: float = 1e-4, buffer_size=1000,
        device: str | torch.device | None = None,
    ):  # fmt: skip
        if not isinstance(model, nn.Module):
            raise TypeError(f"`model` must be an nn.Module, got {type(model).__name__}")
        _check_adam(lr, weight_decay)
        check_scalar(buffer_size, "buffer_size (M)", kind=int, low=1)
        self.device = check_device(device, module=model, available=True)
        self.model, self.buffer_size = model.to(self.device), buffer_size
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
        self.buffers: dict[int, AlignmentBuffer] = {}

    def _check(self, batch: SmashedBatch, round: int) -> None:
        if not isinstance(batch, SmashedBatch):
            raise TypeError(f"`batch` must be a SmashedBatch, got {type(batch).__name__}")
        check_tensor(batch.z, "batch.z", dtype=(torch.float32, torch.float64), finite=False)
        _check_finite(batch.z, batch.client_id, round)
        check_smashed(batch.z, "batch.z", None)
        check_labels(batch.y, "batch.y", batch.z.shape[0], None)

    def step(self, batch: SmashedBatch, round: int) -> float:
        """Lazy server update: one Adam step on ``mean CE(theta_s(z), y)``; buffer ``(z, y)``.

        Returns
        -------
        float
            The loss (nats).

        Raises
        ------
        FloatingPointError
            If ``batch.z`` holds NaN or inf (names client and round).
        """
        self._check(batch, round)
        z, y = batch.z.to(self.device), batch.y.to(self.device)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        loss = F.nll_loss(self.model(z), y)
        loss.backward()
        self.optimizer.step()
        buf = self.buffers.setdefault(batch.client_id, AlignmentBuffer(self.buffer_size))
        buf.add(z, y)
        return float(loss.detach())

    def split_step(self, batch: SmashedBatch, round: int) -> torch.Tensor:
        """SplitFed server step: returns ``dCE_mean/dz`` (``[B, *S]``) and steps the model."""
        self._check(batch, round)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        z = batch.z.detach().to(self.device).requires_grad_(True)
        F.nll_loss(self.model(z), batch.y.to(self.device)).backward()
        self.optimizer.step()
        assert z.grad is not None  # z is a leaf that requires grad
        return z.grad.detach()

    def align(
        self,
        client_id: int,
        aux: GradScalarAux,
        *,
        epochs: int = 100,
        batch_size: int = 1000,
        lr: float = 1e-3,
        official_scale: bool = False,
        generator: torch.Generator | None = None,
    ) -> AlignStats:
        """Align ``aux`` (in place) on client ``client_id``'s buffer; see :func:`align`."""
        if client_id not in self.buffers:
            raise ValueError(f"no smashed data buffered for `client_id` {client_id}")
        return align(
            aux,
            self.buffers[client_id],
            self.model,
            epochs=epochs,
            batch_size=batch_size,
            lr=lr,
            official_scale=official_scale,
            generator=generator,
        )


class FServer:
    """The F-server: weighted averaging of client states (FedAvg, weights ``n_i / n``)."""

    @staticmethod
    def aggregate(states: list[dict], weights: list[float]) -> dict[str, torch.Tensor]:
        """``sum_i (w_i / sum w) state_i`` for floating entries; integer buffers
        (``num_batches_tracked``) are taken from the first state.

        Parameters
        ----------
        states : list of dict of str to Tensor
            ``state_dict``s with equal keys and shapes.
        weights : list of float
            ``n_i``, non-negative with a positive sum.

        Returns
        -------
        dict of str to Tensor

        Raises
        ------
        ValueError
            For an empty list, mismatched lengths, keys or shapes, or bad weights.
        """
        if not states:
            raise ValueError("`states` must not be empty")
        if len(weights) != len(states):
            raise ValueError(f"`weights` has {len(weights)} entries for {len(states)} states")
        w = torch.as_tensor(weights, dtype=torch.float64)
        if not torch.isfinite(w).all() or (w < 0).any() or float(w.sum()) <= 0:
            raise ValueError(f"`weights` must be finite, non-negative, positive sum; got {weights}")
        w = w / w.sum()
        keys = list(states[0])
        if any(list(s) != keys for s in states):
            raise ValueError("`states` must all have the same keys")
        out = {}
        for key in keys:
            first = states[0][key]
            for i, s in enumerate(states):
                if s[key].shape != first.shape:
                    raise ValueError(
                        f"`states[{i}]['{key}']` has shape {tuple(s[key].shape)}, "
                        f"`states[0]` {tuple(first.shape)}"
                    )
            if not first.is_floating_point():
                out[key] = first.clone()
                continue
            acc = sum(wi * s[key].to(torch.float64) for wi, s in zip(w, states, strict=True))
            out[key] = acc.to(first.dtype)
        return out

    @staticmethod
    def average_modules(modules: list[nn.Module], weights: list[float]) -> None:
        """Average ``modules`` in place (every one loads the weighted mean)."""
        avg = FServer.aggregate([m.state_dict() for m in modules], weights)
        for m in modules:
            m.load_state_dict(copy.deepcopy(avg))
