"""The five algorithms as frozen configurations of the same client and server functions."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from icml25_core import check_choice, check_scalar

__all__ = ["ALGORITHMS", "AlgorithmConfig", "get_algorithm"]


@dataclass(frozen=True)
class AlgorithmConfig:
    """How :func:`~fedswa.local.local_update` and :func:`~fedswa.server.server_step` are called.

    Parameters
    ----------
    name : str
        Label used in reports.
    rho : float, default=1.0
        Cyclic-LR ratio in ``[0, 1]``; 1 = constant local rate. FedSWA: 0 (official HEAD).
    lr_factor : float, default=1.0
        Peak local rate = ``lr_factor * eta_t``; FedSWA/FedMoSWA 2 (official HEAD code and README:
        twice FedAvg's rate). Sweep it: never compare FedSWA at 2x with FedAvg at 1x only.
    control : {"none", "global", "local"}, default="none"
        Controls: none; FedMoSWA's upload ``c_i+ - c``; SCAFFOLD's ``c_i+ - c_i``.
    gamma : float, default=1.0
        Control momentum in ``(0, 1]`` (FedMoSWA 0.4, official HEAD; the May code used 0.1).
    warm_start : bool, default=True
        First-round ``c = sum_i w_i delta_i`` (FedMoSWA, both code versions); SCAFFOLD: False.
    scale_by_participation : bool, default=False
        Multiply the control step by ``|S|/N`` (SCAFFOLD, Karimireddy et al. 2020, Alg. 1).
    alpha : float, default=1.0
        Server step in ``(0, 1]`` (official HEAD ``--lg 1.0``).
    weights : {"num_examples", "uniform"}, default="num_examples"
        Client weights for the model and the control.
    weight_decay : float, default=1e-3
        ``lambda`` (official HEAD code).
    clip_norm : float or None, default=10.0
        Raw-gradient clip (official HEAD code).
    sam_rho : float or None, default=None
        SAM radius (FedSAM: 0.05, official README).
    lr_schedule : {"cosine", "exp", "constant"}, default="cosine"
        Round schedule of :func:`~fedswa.schedule.round_lr` (official HEAD: cosine).
    swa : {"last", "average"}, default="last"
        What a client returns: the last local iterate (paper, official code) or classic SWA's
        average of the round's iterates (Izmailov et al. 2018); ``"average"`` needs
        ``control="none"`` (see :func:`~fedswa.local.local_update`).

    Raises
    ------
    TypeError
        If `warm_start` or `scale_by_participation` is not a bool.
    ValueError
        If a value is out of range (the field is named).
    """

    name: str
    rho: float = 1.0
    lr_factor: float = 1.0
    control: str = "none"
    gamma: float = 1.0
    warm_start: bool = True
    scale_by_participation: bool = False
    alpha: float = 1.0
    weights: str = "num_examples"
    weight_decay: float = 1e-3
    clip_norm: float | None = 10.0
    sam_rho: float | None = None
    lr_schedule: str = "cosine"
    swa: str = "last"

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("`name` must be a non-empty string")
        check_scalar(self.rho, "rho", low=0.0, high=1.0)
        check_scalar(self.lr_factor, "lr_factor", low=0.0, inclusive="neither")
        check_choice(self.control, "control", ("none", "global", "local"))
        check_scalar(self.gamma, "gamma", low=0.0, high=1.0, inclusive="right")
        for flag in ("warm_start", "scale_by_participation"):  # "no" would act as True
            check_scalar(getattr(self, flag), flag, kind=bool)
        check_scalar(self.alpha, "alpha", low=0.0, high=1.0, inclusive="right")
        check_choice(self.weights, "weights", ("num_examples", "uniform"))
        check_scalar(self.weight_decay, "weight_decay", low=0.0)
        if self.clip_norm is not None:
            check_scalar(self.clip_norm, "clip_norm", low=0.0, inclusive="neither")
        if self.sam_rho is not None:
            check_scalar(self.sam_rho, "sam_rho", low=0.0, inclusive="neither")
        check_choice(self.lr_schedule, "lr_schedule", ("cosine", "exp", "constant"))
        check_choice(self.swa, "swa", ("last", "average"))
        if self.swa == "average" and self.control != "none":
            raise ValueError("`swa`='average' needs `control`='none' (the control update uses "
                             "the last iterate)")  # fmt: skip

    @property
    def uses_control(self) -> bool:
        """Whether clients keep a control ``c_i``."""
        return self.control != "none"

    @property
    def control_key(self) -> str:
        """The :class:`~fedswa.local.LocalResult` field the server averages for ``c``."""
        return "local_control_delta" if self.control == "local" else "control_delta"

    def replace(self, **changes) -> AlgorithmConfig:
        """A copy with `changes` applied (validated again)."""
        return dataclasses.replace(self, **changes)


ALGORITHMS: dict[str, AlgorithmConfig] = {
    "fedavg": AlgorithmConfig("FedAvg"),
    "fedswa": AlgorithmConfig("FedSWA", rho=0.0, lr_factor=2.0),
    "fedmoswa": AlgorithmConfig(
        "FedMoSWA", rho=0.0, lr_factor=2.0, control="global", gamma=0.4, warm_start=True
    ),
    "scaffold": AlgorithmConfig(
        "SCAFFOLD",
        control="local",
        gamma=1.0,
        warm_start=False,
        scale_by_participation=True,
        weights="uniform",
    ),
    "fedsam": AlgorithmConfig("FedSAM", sam_rho=0.05),
}


def get_algorithm(name: str, **overrides) -> AlgorithmConfig:
    """The registered configuration `name` (case-insensitive), with `overrides` applied.

    Parameters
    ----------
    name : {"fedavg", "fedswa", "fedmoswa", "scaffold", "fedsam"}
    **overrides
        Fields of :class:`AlgorithmConfig` to change, e.g. ``rho=0.5``.

    Raises
    ------
    ValueError
        If `name` is unknown or an override is out of range.
    TypeError
        If an override is not a field.

    Examples
    --------
    >>> get_algorithm("fedmoswa", gamma=1.0).gamma
    1.0
    """
    if not isinstance(name, str):
        raise TypeError(f"`name` must be a str, got {type(name).__name__}")
    cfg = _config_of(name, "name")
    fields = [f.name for f in dataclasses.fields(AlgorithmConfig)]
    unknown = sorted(set(overrides) - set(fields))
    if unknown:
        raise TypeError(f"`overrides` {unknown} are not AlgorithmConfig fields; valid: {fields}")
    return cfg.replace(**overrides) if overrides else cfg


def _config_of(algorithm: str | AlgorithmConfig, name: str = "algorithm") -> AlgorithmConfig:
    """`algorithm` as a configuration: a registered name (case-insensitive) or an
    :class:`AlgorithmConfig`, as ``run_federated`` and the Flower strategies take it.

    Parameters
    ----------
    algorithm : str or AlgorithmConfig
    name : str, default="algorithm"
        The caller's argument, named in the errors.

    Raises
    ------
    TypeError
        If `algorithm` is neither a str nor an :class:`AlgorithmConfig`.
    ValueError
        If it is an unknown name.
    """
    if isinstance(algorithm, AlgorithmConfig):
        return algorithm
    if not isinstance(algorithm, str):
        raise TypeError(
            f"`{name}` must be a name or an AlgorithmConfig, got {type(algorithm).__name__}"
        )
    check_choice(algorithm.lower(), name, tuple(ALGORITHMS))
    return ALGORITHMS[algorithm.lower()]
