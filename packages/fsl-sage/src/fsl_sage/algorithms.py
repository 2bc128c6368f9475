"""The algorithms compared in FSL-SAGE (Nair et al., ICML 2025, Sec. 5) as validated configs.

Defaults follow the official hydra configs of ``srijith1996/FSL-SAGE``:
``server_update_interval`` q = 5, ``align_interval`` l = 10 rounds, ``max_dataset_size`` M = 1000,
``align_epochs`` = 100, ``align_batch_size`` = 1000, Adam 1e-3.
"""

from __future__ import annotations

from dataclasses import dataclass

from icml25_core import check_scalar

__all__ = ["Algorithm", "cse_fsl", "fedavg", "fsl_sage", "splitfed_v1", "splitfed_v2"]

NAMES = ("fsl_sage", "cse_fsl", "splitfed_v1", "splitfed_v2", "fedavg")


@dataclass(frozen=True)
class Algorithm:
    """One algorithm and its hyper-parameters (build it with the functions of this module).

    Attributes
    ----------
    name : str
        One of ``fsl_sage``, ``cse_fsl``, ``splitfed_v1``, ``splitfed_v2``, ``fedavg``.
    server_update_interval : int
        q: smashed data is sent (and the S-server steps) at local iterations ``j % q == 0``.
    align_interval : int
        l: FSL-SAGE aligns the auxiliary models at rounds ``t % l == 0``.
    align : bool
        Whether FSL-SAGE aligns at all.
    buffer_size : int
        M: samples kept per client for alignment.
    align_epochs, align_batch_size : int
    align_lr : float
    official_scale : bool
        See :func:`fsl_sage.align`.

    Raises
    ------
    TypeError, ValueError
        For an unknown `name` or a value out of range, as :func:`fsl_sage`.
    """

    name: str
    server_update_interval: int = 1
    align_interval: int = 10
    align: bool = False
    buffer_size: int = 1000
    align_epochs: int = 100
    align_batch_size: int = 1000
    align_lr: float = 1e-3
    official_scale: bool = False

    def __post_init__(self):
        if self.name not in NAMES:
            raise ValueError(f"`name` must be one of {NAMES}, got {self.name!r}")
        check_scalar(self.server_update_interval, "server_update_interval (q)", kind=int, low=1)
        check_scalar(self.align_interval, "align_interval (l)", kind=int, low=1)
        check_scalar(self.buffer_size, "buffer_size (M)", kind=int, low=1)
        # an alignment of 0 epochs would silently leave the aux models unaligned
        check_scalar(self.align_epochs, "align_epochs", kind=int, low=1 if self.align else 0)
        check_scalar(self.align_batch_size, "align_batch_size", kind=int, low=1)
        check_scalar(self.align_lr, "align_lr", low=0.0, inclusive="neither")

    @property
    def uses_aux(self) -> bool:
        """FSL-SAGE and CSE-FSL train the client from an auxiliary model."""
        return self.name in ("fsl_sage", "cse_fsl")

    def is_align_round(self, round: int) -> bool:
        """FSL-SAGE aligns at rounds ``t % l == 0`` (official ``align_interval``)."""
        return self.name == "fsl_sage" and self.align and round % self.align_interval == 0


def fsl_sage(
    server_update_interval: int = 5,
    align_interval: int = 10,
    buffer_size: int = 1000,
    *,
    align_epochs: int = 100,
    align_batch_size: int = 1000,
    align_lr: float = 1e-3,
    official_scale: bool = False,
    align: bool = True,
) -> Algorithm:
    """FSL-SAGE: aux-estimated cut gradients, lazy S-server, periodic alignment (Sec. 3).

    Raises
    ------
    ValueError
        If q, l or M < 1 (named ``server_update_interval (q)``, ``align_interval (l)``,
        ``buffer_size (M)``), ``align_epochs`` < 1 (< 0 with ``align=False``),
        ``align_batch_size`` < 1 or ``align_lr`` <= 0.
    """
    return Algorithm(
        "fsl_sage",
        server_update_interval,
        align_interval,
        align,
        buffer_size,
        align_epochs,
        align_batch_size,
        align_lr,
        official_scale,
    )


def cse_fsl(server_update_interval: int = 5) -> Algorithm:
    """CSE-FSL (Mu & Shen, 2023): the client learns through a local auxiliary classifier that is
    averaged with the client models; the S-server steps on smashed data every q iterations."""
    return Algorithm("cse_fsl", server_update_interval)


def splitfed_v1() -> Algorithm:
    """SplitFed-v1 (Thapa et al., 2022; "SplitFed-MS"): one server-model replica per client,
    averaged each round; smashed data and its gradient every iteration."""
    return Algorithm("splitfed_v1")


def splitfed_v2() -> Algorithm:
    """SplitFed-v2 ("SplitFed-SS"): one server model updated by the clients in turn;
    smashed data and its gradient every iteration."""
    return Algorithm("splitfed_v2")


def fedavg() -> Algorithm:
    """FedAvg (McMahan et al., 2017): each client trains the whole model; weighted averaging."""
    return Algorithm("fedavg")
