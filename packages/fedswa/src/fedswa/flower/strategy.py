"""Flower strategies: FedAvg's sampling and messaging, FedSWA's configuration and aggregation.

The classes subclass ``flwr.serverapp.strategy.FedAvg``. The module belongs to the extra
``[flower]`` (``optional-modules`` of the card): it imports flwr at its top and, without it,
raises an ImportError naming ``pip install 'fedswa[flower]'``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import cast

import torch

from icml25_core import check_choice, check_device, check_scalar
from icml25_core.extras import requires_extra

from ..algorithms import ALGORITHMS, AlgorithmConfig, _config_of
from ..schedule import round_lr
from ..server import ServerState, server_step
from .records import from_weights, is_update, to_state_dict, unpack_update

with requires_extra("fedswa", "flower"):
    from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord
    from flwr.common.logger import log
    from flwr.serverapp import Grid
    from flwr.serverapp.strategy import FedAvg

__all__ = ["FedAvgSWA", "FedSWA", "FedMoSWA", "Scaffold", "FedSAM", "strategy_for"]


def _cpu(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu() for k, v in state.items()}


class FedAvgSWA(FedAvg):
    """Base strategy: one registered :class:`~fedswa.algorithms.AlgorithmConfig` run on Flower.

    ``configure_train`` adds ``eta`` (this round's peak local rate ``lr_factor * round_lr``),
    ``rho``, ``local-steps``, ``weight-decay``, ``clip-norm`` (0 = off), ``sam-rho`` (0 = off),
    ``batch-size``, ``seed``, ``control-kind`` and ``swa`` to the ConfigRecord and the server
    control ``c`` as the ArrayRecord ``control``; ``aggregate_train`` calls
    :func:`~fedswa.server.server_step` on the replies ordered by ``partition-id``.

    Parameters
    ----------
    num_rounds : int
        ``T`` of the round schedule (also pass it to ``start``).
    eta0 : float
        Round-0 rate ``> 0`` before ``lr_factor``.
    local_steps : int, default=50
        ``K`` (official HEAD cap).
    batch_size : int, default=50
        Official default.
    seed : int, default=0
        Seed of the clients' minibatch order (:func:`fedswa.simulate.client_seed`).
    algorithm : str or AlgorithmConfig, optional
        Defaults to the class's own (``"fedswa"`` for :class:`FedSWA`, ...).
    device : str or torch.device, optional
        Where the server step runs and ``x_t``, ``c`` live between rounds (default CPU);
        records go out as CPU arrays.
    **kwargs
        Fields of :class:`~fedswa.algorithms.AlgorithmConfig` to override (``rho``, ``gamma``,
        ``alpha``, ``swa``, ...) and FedAvg's sampling arguments (``fraction_train``,
        ``min_train_nodes``, ``min_available_nodes``, ``fraction_evaluate``, ...).
        ``fraction_evaluate`` defaults to 0.0 here, not Flower's 1.0: the ClientApps'
        ``evaluate`` is not called (Flower logs "Federated evaluation will be skipped"),
        because the algorithms are judged on the server's test set (``evaluate_fn`` of
        ``start``, as the paper and the ready app do) and a federated evaluation would add a
        pass over every client's data each round. Pass ``fraction_evaluate=1.0`` for it.

    Raises
    ------
    TypeError, ValueError
        For an unknown `algorithm`, a value out of range (named), or a `device` this torch
        cannot use (``"cuda"`` without CUDA, ``"meta"``).

    Attributes
    ----------
    config : AlgorithmConfig
    control : dict of str to Tensor or None
        The server control ``c`` after the last aggregation.
    """

    default_algorithm = "fedavg"

    def __init__(
        self,
        *,
        num_rounds: int,
        eta0: float,
        local_steps: int = 50,
        batch_size: int = 50,
        seed: int = 0,
        algorithm: str | AlgorithmConfig | None = None,
        device: str | torch.device | None = None,
        **kwargs,
    ):
        fields = set(AlgorithmConfig.__dataclass_fields__)
        overrides = {k: kwargs.pop(k) for k in list(kwargs) if k in fields}
        for key in ("fraction_train", "fraction_evaluate"):
            if key in kwargs:
                check_scalar(kwargs[key], key, low=0.0, high=1.0)
        kwargs.setdefault("fraction_evaluate", 0.0)
        super().__init__(**kwargs)
        cfg = _config_of(algorithm if algorithm is not None else self.default_algorithm)
        self.config = cfg.replace(**overrides) if overrides else cfg
        self.num_rounds = check_scalar(num_rounds, "num_rounds", kind=int, low=1)
        self.eta0 = check_scalar(eta0, "eta0", low=0.0, inclusive="neither")
        self.local_steps = check_scalar(local_steps, "local_steps", kind=int, low=1)
        self.batch_size = check_scalar(batch_size, "batch_size", kind=int, low=1)
        self.seed = check_scalar(seed, "seed", kind=int, low=0)
        self.device = check_device(device, available=True)
        self.control: dict[str, torch.Tensor] | None = None
        self._model_state: dict[str, torch.Tensor] | None = None
        self._num_nodes: int | None = None

    def summary(self) -> None:
        """Log FedAvg's summary and the algorithm configuration."""
        super().summary()
        log(20, "\t└──> Algorithm: %s", self.config)

    def train_config(self, server_round: int) -> dict:
        """The ConfigRecord entries of round `server_round` (1-based)."""
        cfg = self.config
        t = min(server_round - 1, self.num_rounds)
        return {
            "eta": cfg.lr_factor * round_lr(t, self.num_rounds, self.eta0, cfg.lr_schedule),
            "rho": float(cfg.rho),
            "local-steps": self.local_steps,
            "weight-decay": float(cfg.weight_decay),
            "clip-norm": float(cfg.clip_norm or 0.0),
            "sam-rho": float(cfg.sam_rho or 0.0),
            "batch-size": self.batch_size,
            "seed": self.seed,
            "control-kind": cfg.control,
            "swa": cfg.swa,
        }

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """FedAvg's sampling and messages, plus the round's hyper-parameters and ``c``."""
        self._model_state = {k: v.to(self.device) for k, v in to_state_dict(arrays).items()}
        self._num_nodes = len(list(grid.get_node_ids()))
        config = ConfigRecord({**dict(config), **self.train_config(server_round)})
        messages = list(super().configure_train(server_round, arrays, config, grid))
        if self.config.uses_control:
            control = ArrayRecord(_cpu(self.control)) if self.control else ArrayRecord()
            for message in messages:
                message.content["control"] = control
        return messages

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """:func:`~fedswa.server.server_step` over the valid replies (keyed by partition id).

        Replies of fedswa's ClientApp carry ``Delta_i`` (and the control upload); for FedAvg,
        FedSWA and FedSAM a stock Flower ClientApp's reply (trained weights, ``num-examples``)
        works too (``swa="average"`` then has no effect: the stock client returns its own
        weights, and a warning says so). ``partition-id`` is left out of the averaged metrics.

        Raises
        ------
        RuntimeError
            If no reply can be aggregated (every ClientApp failed or none answered): Flower's
            ``Strategy.start`` would go on with the model unchanged and, when that happens in
            every round, return an empty ArrayRecord.
        ValueError
            If a reply does not fit (see :meth:`_local_result`).
        """
        valid, failed = self._check_and_log_replies(list(replies), is_train=True)
        if not valid:
            reasons = "; ".join(f"node {m.metadata.src_node_id}: {m.error.reason}" for m in failed)
            raise RuntimeError(
                f"round {server_round}: no ClientApp reply to aggregate "
                f"({len(failed)} failed{': ' + reasons if failed else ', none answered'})"
            )
        cfg = self.config
        results = {}
        for msg in valid:
            content = msg.content
            metrics = next(iter(content.metric_records.values()))
            record = next(iter(content.array_records.values()))
            # the ClientApp writes "partition-id" as an int (MetricRecord values may be lists)
            cid = int(cast(int, metrics.get("partition-id", msg.metadata.src_node_id)))
            results[cid] = self._local_result(record, metrics)
        control = self.control
        if cfg.uses_control and control is None:
            first = next(iter(results.values()))
            upload = getattr(first, cfg.control_key) or {}
            control = {k: v.new_zeros(v.shape) for k, v in upload.items()}
        participation = None
        if cfg.scale_by_participation and self._num_nodes:
            participation = len(results) / self._num_nodes
        assert self._model_state is not None  # set by configure_train of this round
        state = ServerState(self._model_state, control, server_round - 1)
        new = server_step(
            state,
            results,
            alpha=cfg.alpha,
            gamma=cfg.gamma if cfg.uses_control else None,
            weights=cfg.weights,
            warm_start=cfg.warm_start,
            participation=participation,
            control_key=cfg.control_key,
        )
        self.control = new.control
        self._model_state = new.model_state
        metrics = self.train_metrics_aggr_fn([m.content for m in valid], self.weighted_by_key)
        if metrics is not None:
            metrics.pop("partition-id", None)  # an id, not a quantity to average
        return ArrayRecord(_cpu(new.model_state)), metrics

    def _local_result(self, record: ArrayRecord, metrics: MetricRecord):
        """A reply as the server step needs it: fedswa's client format (``Delta_i`` and the
        control upload) or, for algorithms without controls, a stock Flower reply (the trained
        weights and ``num-examples``).

        Raises
        ------
        ValueError
            If a stock reply comes for an algorithm with control variates, or does not fit.

        Warns
        -----
        UserWarning
            If a stock reply comes while ``swa`` is not ``"last"`` (it cannot apply there).
        """
        if is_update(record):
            return unpack_update(record, metrics, self.config.control_key)
        if self.config.uses_control:
            raise ValueError(
                f"{self.config.name} needs control variates, and the reply holds plain weights "
                "(a stock Flower ClientApp): run fedswa's client, "
                "fedswa.flower.client.make_client_app(model_fn, data_fn) or "
                "fedswa.flower.app:client_app, which uploads Delta_i and c_i"
            )
        if self.config.swa != "last":
            warnings.warn(
                f"swa={self.config.swa!r} has no effect on a stock Flower ClientApp's reply: it "
                "returns its own trained weights (only fedswa's make_client_app averages the "
                "round's iterates)",
                stacklevel=2,
            )
        assert self._model_state is not None  # set by configure_train of this round
        return from_weights(record, metrics, self._model_state)


class FedSWA(FedAvgSWA):
    """FedSWA on Flower: cyclic local LR (``rho=0``), twice FedAvg's peak LR, averaging."""

    default_algorithm = "fedswa"


class FedMoSWA(FedAvgSWA):
    """FedMoSWA on Flower: FedSWA plus momentum controls (``gamma=0.4``, warm start)."""

    default_algorithm = "fedmoswa"


class Scaffold(FedAvgSWA):
    """SCAFFOLD option II on Flower (Karimireddy et al. 2020): constant LR, ``c_i+ - c_i``
    uploads, control step ``|S|/N``."""

    default_algorithm = "scaffold"


class FedSAM(FedAvgSWA):
    """FedSAM on Flower: SAM local steps (``sam_rho=0.05``), plain averaging."""

    default_algorithm = "fedsam"


_BY_NAME = {
    "fedavg": FedAvgSWA, "fedswa": FedSWA, "fedmoswa": FedMoSWA, "scaffold": Scaffold,
    "fedsam": FedSAM,
}  # fmt: skip


def strategy_for(algorithm: str, **kwargs):
    """The strategy of a registered algorithm name, e.g. ``strategy_for("fedmoswa", ...)``.

    Raises
    ------
    TypeError
        If `algorithm` is not a str.
    ValueError
        If it is not a name of :data:`~fedswa.algorithms.ALGORITHMS`; and as the strategy's
        constructor for `kwargs`.
    """
    if not isinstance(algorithm, str):
        raise TypeError(f"`algorithm` must be a str, got {type(algorithm).__name__}")
    check_choice(algorithm.lower(), "algorithm", tuple(ALGORITHMS))
    return _BY_NAME[algorithm.lower()](**kwargs)
