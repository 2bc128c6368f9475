"""In-process reference driver: rounds of sampled clients over :func:`local_update` and
:func:`server_step`, deterministic and resumable per round.

Flower's engines (``fedswa.flower``) run the same two functions; this driver is what the tests
compare them with and what ``fedswa reproduce`` runs.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from icml25_core import check_device, check_scalar, progress

from .algorithms import AlgorithmConfig, _config_of
from .control import ClientControl, ControlStore, zeros_like_params
from .local import local_update
from .schedule import round_lr
from .server import ServerState, server_step

__all__ = ["History", "ShuffledBatches", "run_federated", "sample_clients", "client_seed"]


def client_seed(seed: int, round_index: int, client_id: int) -> int:
    """The minibatch-shuffling seed of client `client_id` in round `round_index` (0-based).

    Derived from ``numpy.random.SeedSequence([seed, round_index, client_id])`` so that it
    depends on the client, never on the worker or node that trains it.
    """
    return int(np.random.SeedSequence([seed, round_index, client_id]).generate_state(1)[0])


def sample_clients(num_clients: int, clients_per_round: int, seed: int, round_index: int):
    """Ids of the clients sampled in round `round_index`, sorted (uniform without replacement)."""
    rng = np.random.default_rng([seed, round_index, 2**31 - 1])
    chosen = rng.choice(num_clients, size=clients_per_round, replace=False)
    return sorted(int(c) for c in chosen)


class ShuffledBatches:
    """Minibatches of ``(x, y)`` in a fresh random order at every pass (re-iterable).

    Parameters
    ----------
    x : Tensor, shape [N, ...]
    y : Tensor, shape [N, ...]
    batch_size : int
        Examples per batch; the last batch of a pass may be smaller.
    seed : int
        Seed of the ``torch.Generator`` drawing the permutations.
    """

    def __init__(self, x: torch.Tensor, y: torch.Tensor, batch_size: int, seed: int):
        for value, name in ((x, "x"), (y, "y")):
            if not isinstance(value, torch.Tensor):
                raise TypeError(f"`{name}` must be a Tensor, got {type(value).__name__}")
        if len(x) != len(y):
            raise ValueError(f"`x` and `y` differ in length ({len(x)} vs {len(y)})")
        if len(x) == 0:
            raise ValueError("`x` is empty")
        self.x, self.y = x, y
        self.batch_size = check_scalar(batch_size, "batch_size", kind=int, low=1)
        self.generator = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return -(-len(self.x) // self.batch_size)

    def __iter__(self):
        order = torch.randperm(len(self.x), generator=self.generator)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            yield self.x[idx], self.y[idx]


@dataclass
class History:
    """What :func:`run_federated` returns.

    Attributes
    ----------
    rounds : list of dict
        Per round: ``round`` (1-based), ``eta`` (peak local rate), ``clients``, ``train_loss``
        (weighted mean over the sampled clients) and whatever ``eval_fn`` returned.
    state : ServerState
        The final global state.
    controls : ControlStore or None
        Every client's ``c_i`` (algorithms with controls).
    """

    rounds: list = field(default_factory=list)
    state: ServerState | None = None
    controls: ControlStore | None = None

    def metric(self, name: str) -> list:
        """The values of `name` over the rounds (``None`` where a round lacks it)."""
        return [r.get(name) for r in self.rounds]


def _check_pair(part, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """One client's data: a pair ``(x, y)`` of tensors of the same non-zero length."""
    if not (isinstance(part, tuple | list) and len(part) == 2):
        raise TypeError(f"`{name}` must be a pair (x, y) of tensors, got {type(part).__name__}")
    x, y = part
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
        got = f"({type(x).__name__}, {type(y).__name__})"
        raise TypeError(f"`{name}` must hold tensors, got {got}")
    if len(x) == 0 or len(x) != len(y):
        raise ValueError(
            f"`{name}` is empty or its x and y differ in length ({len(x)} vs {len(y)})"
        )
    return x, y


def _check_partitions(partitions):
    if not isinstance(partitions, Sequence) or len(partitions) == 0:
        raise ValueError("`partitions` must be a non-empty sequence of (x, y) tensor pairs")
    for i, part in enumerate(partitions):
        _check_pair(part, f"partitions[{i}]")


def _check_model_fn(model_fn) -> None:
    if isinstance(model_fn, torch.nn.Module) or not callable(model_fn):
        raise TypeError(
            "`model_fn` must be a callable returning a fresh nn.Module (e.g. `lambda: net`), "
            f"got {type(model_fn).__name__}"
        )


def _new_model(model_fn) -> torch.nn.Module:
    model = model_fn()
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"`model_fn` must return an nn.Module, got {type(model).__name__}")
    return model


_RESERVED = ("round", "eta", "clients", "train_loss")


def _fingerprint(model: torch.nn.Module, partitions) -> dict:
    """What a checkpoint must match besides the settings: the initial model (names, shapes,
    dtypes and a hash of the values) and every partition (shapes, dtypes and a hash)."""

    def digest(tensors) -> str:
        h = hashlib.blake2b(digest_size=16)
        for t in tensors:
            t = t.detach().cpu().contiguous()
            h.update(f"{tuple(t.shape)}{t.dtype}".encode())
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        return h.hexdigest()

    state = model.state_dict()
    return {
        "model": [(k, tuple(v.shape), str(v.dtype)) for k, v in state.items()],
        "model_hash": digest(state.values()),
        "data_hash": digest(t for part in partitions for t in part),
    }


def _check_checkpoint_path(checkpoint) -> Path | None:
    if checkpoint is None:
        return None
    if not isinstance(checkpoint, str | os.PathLike):
        raise TypeError(f"`checkpoint` must be a path, got {type(checkpoint).__name__}")
    path = Path(checkpoint)
    if path.is_dir():
        raise ValueError(f"`checkpoint` {path} is a directory; give a file name")
    if not path.parent.is_dir():
        raise ValueError(f"`checkpoint` {path}: the directory {path.parent} does not exist")
    return path


def _save(path: Path, payload: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)


def run_federated(
    model_fn: Callable[[], torch.nn.Module],
    partitions: Sequence[tuple[torch.Tensor, torch.Tensor]],
    algorithm: str | AlgorithmConfig,
    *,
    rounds: int,
    clients_per_round: int,
    local_steps: int,
    batch_size: int,
    eta0: float,
    seed: int = 0,
    eval_fn: Callable[[torch.nn.Module], dict] | None = None,
    checkpoint: str | os.PathLike | None = None,
    loss_fn: Callable = F.cross_entropy,
    show_progress: bool = False,
    device: str | torch.device | None = None,
) -> History:
    """Run federated training in this process; every random choice is seeded.

    Round ``t = 0..T-1``: the peak rate is ``lr_factor * round_lr(t, T, eta0)``; clients are
    drawn by :func:`sample_clients`; each runs :func:`~fedswa.local.local_update` on
    :class:`ShuffledBatches` seeded by :func:`client_seed`; the server applies
    :func:`~fedswa.server.server_step` with the results keyed by client id.

    Parameters
    ----------
    model_fn : callable
        ``model_fn() -> nn.Module``; called once after ``torch.manual_seed(seed)``.
    partitions : sequence of (Tensor [n_i, ...], Tensor [n_i])
        Client ``i``'s data; ``n_i`` is its aggregation weight.
    algorithm : str or AlgorithmConfig
        A name of :data:`~fedswa.algorithms.ALGORITHMS` or a configuration.
    rounds : int
        ``T >= 1``.
    clients_per_round : int
        ``1 <= |S| <= len(partitions)``.
    local_steps : int
        ``K >= 1``.
    batch_size : int
        ``>= 1``.
    eta0 : float
        Round-0 rate ``> 0`` (before ``lr_factor``).
    seed : int, default=0
    eval_fn : callable, optional
        ``eval_fn(model) -> dict`` of metrics, called after every round; its keys must not be
        ``round``, ``eta``, ``clients`` or ``train_loss``.
    checkpoint : path, optional
        File rewritten after each round (``torch.save``); an existing one with the same settings,
        the same initial model and the same partitions (checked by a hash of their values) is
        resumed from its last round. Its directory must exist.
    loss_fn : callable, default=torch.nn.functional.cross_entropy
    show_progress : bool, default=False
        A progress bar over the rounds.
    device : str or torch.device, optional
        Where the model, the server state and the controls live (default: the device of
        ``model_fn()``'s parameters); each minibatch moves there. A checkpoint resumes onto it.

    Returns
    -------
    History

    Raises
    ------
    ValueError
        If `algorithm` is an unknown name, a size is out of range, `partitions` is empty or
        malformed, `device` cannot be used here (``"cuda"`` without CUDA, ``"meta"``),
        `checkpoint` is a directory, in a missing directory, unreadable or holds another run
        (other settings, model or data), or `eval_fn` returns a reserved key.
    TypeError
        If `algorithm` is neither a name nor an AlgorithmConfig, `model_fn` is not a callable
        returning a fresh ``nn.Module`` (an ``nn.Module`` instance is refused), or `eval_fn`
        does not return a mapping.
    FloatingPointError
        If a client diverges (the client is named).
    """
    cfg = _config_of(algorithm)
    _check_partitions(partitions)
    rounds = check_scalar(rounds, "rounds", kind=int, low=1)
    clients_per_round = check_scalar(
        clients_per_round, "clients_per_round", kind=int, low=1, high=len(partitions)
    )
    local_steps = check_scalar(local_steps, "local_steps", kind=int, low=1)
    batch_size = check_scalar(batch_size, "batch_size", kind=int, low=1)
    eta0 = check_scalar(eta0, "eta0", low=0.0, inclusive="neither")
    seed = check_scalar(seed, "seed", kind=int, low=0)
    _check_model_fn(model_fn)
    if eval_fn is not None and not callable(eval_fn):
        raise TypeError(f"`eval_fn` must be callable, got {type(eval_fn).__name__}")
    path = _check_checkpoint_path(checkpoint)

    torch.manual_seed(seed)
    model = _new_model(model_fn)
    device = check_device(device, module=model, available=True)
    model = model.to(device)
    template = zeros_like_params(model) if cfg.uses_control else None
    state = ServerState({k: v.detach().clone() for k, v in model.state_dict().items()}, template, 0)
    controls = ControlStore(template) if template is not None else None
    history = History(state=state, controls=controls)
    settings = {
        "algorithm": repr(cfg), "rounds": rounds, "clients_per_round": clients_per_round,
        "local_steps": local_steps, "batch_size": batch_size, "eta0": eta0, "seed": seed,
        "num_clients": len(partitions), **_fingerprint(model, partitions),
    }  # fmt: skip
    if path is not None and path.exists():
        try:
            saved = torch.load(path, weights_only=False, map_location=device)
            saved_settings = saved["settings"]
        except Exception as err:  # any unreadable file is the same user error
            raise ValueError(
                f"`checkpoint` {path} is not a readable run_federated checkpoint"
            ) from err
        if saved_settings != settings:
            diff = sorted(k for k in settings.keys() | saved_settings.keys()
                          if settings.get(k) != saved_settings.get(k))  # fmt: skip
            raise ValueError(
                f"`checkpoint` {path} holds a run with other settings, model or data "
                f"(differing: {diff}); delete it or pass another path"
            )
        history.rounds, history.state = saved["rounds"], saved["state"]
        if controls is not None:
            controls.load_state_dict(saved["controls"])

    participation = clients_per_round / len(partitions) if cfg.scale_by_participation else None
    assert history.state is not None  # set above, or loaded from the checkpoint
    todo = range(history.state.round, rounds)
    for t in progress(todo, desc=cfg.name, unit="round", disable=not show_progress):
        state = history.state
        eta = cfg.lr_factor * round_lr(t, rounds, eta0, cfg.lr_schedule)
        model.load_state_dict(state.model_state)
        results = {}
        for cid in sample_clients(len(partitions), clients_per_round, seed, t):
            x, y = partitions[cid]
            control = None
            if controls is not None:
                assert state.control is not None  # algorithms with controls keep ``c`` in state
                control = ClientControl(state.control, controls.get(cid))
            try:
                results[cid] = local_update(
                    model,
                    ShuffledBatches(x, y, batch_size, client_seed(seed, t, cid)),
                    steps=local_steps,
                    eta=eta,
                    rho=cfg.rho,
                    weight_decay=cfg.weight_decay,
                    clip_norm=cfg.clip_norm,
                    loss_fn=loss_fn,
                    control=control,
                    sam_rho=cfg.sam_rho,
                    num_examples=len(x),
                    swa=cfg.swa,
                )
            except (FloatingPointError, ValueError, TypeError) as err:
                where = f"client {cid} (`partitions[{cid}]`), round {t + 1}"
                raise type(err)(f"{where}: {err}") from err
        state = server_step(
            state,
            results,
            alpha=cfg.alpha,
            gamma=cfg.gamma if cfg.uses_control else None,
            weights=cfg.weights,
            warm_start=cfg.warm_start,
            participation=participation,
            control_key=cfg.control_key,
        )
        if controls is not None:
            for cid, res in results.items():
                assert res.new_control is not None  # local_update ran with a control
                controls.put(cid, res.new_control)
        total = sum(r.num_examples for r in results.values())
        record = {
            "round": t + 1,
            "eta": eta,
            "clients": sorted(results),
            "train_loss": sum(r.loss * r.num_examples for r in results.values()) / total,
        }
        if eval_fn is not None:
            model.load_state_dict(state.model_state)
            metrics = eval_fn(model)
            if not isinstance(metrics, Mapping):
                raise TypeError(
                    f"`eval_fn` must return a dict of metrics, got {type(metrics).__name__}"
                )
            clash = sorted(set(metrics) & set(_RESERVED))
            if clash:
                raise ValueError(f"`eval_fn` returned reserved keys {clash}; rename them")
            record.update(metrics)
        history.rounds.append(record)
        history.state = state
        if path is not None:
            _save(
                path,
                {
                    "settings": settings,
                    "rounds": history.rounds,
                    "state": state,
                    "controls": controls.state_dict() if controls else None,
                },
            )
    return history
