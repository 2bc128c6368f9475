"""LEAPS: A discrete neural sampler via locally equivariant networks.

Holderrieth, Albergo, Jaakkola, "LEAPS: A discrete neural sampler via locally equivariant
networks", ICML 2025, arXiv:2502.10843 (https://arxiv.org/abs/2502.10843).
A learned CTMC carries a uniform base to a discrete Boltzmann target; Jarzynski importance
weights, one locally equivariant net pass per step, correct it exactly as the step size -> 0.
"""

from . import exact
from ._version import __version__
from .estimators import bootstrap_log_z, ess, log_mean_exp, pareto_khat, snis, systematic_resample
from .loss import pinn_loss, pinn_residual
from .mcmc import metropolis_sweep
from .nets import (
    FreeEnergyNet,
    LocallyEquivariantAttention,
    LocallyEquivariantConv,
    LocallyEquivariantMLP,
    corrector,
    rates,
)
from .paths import GraphIsingPath, IsingPath, PottsPath
from .sampler import SampleResult, StiffStepWarning, ais, sample, time_grid
from .train import Trainer

__all__ = [
    "__version__",
    # Main API: the sampler, then the training loop
    "sample",
    "ais",
    "SampleResult",
    "StiffStepWarning",
    "Trainer",
    "pinn_loss",
    "pinn_residual",
    # annealing paths
    "IsingPath",
    "PottsPath",
    "GraphIsingPath",
    # locally equivariant nets and their functional ops
    "LocallyEquivariantConv",
    "LocallyEquivariantMLP",
    "LocallyEquivariantAttention",
    "FreeEnergyNet",
    "rates",
    "corrector",
    # estimators, MCMC, time grids, exact references
    "ess",
    "log_mean_exp",
    "snis",
    "systematic_resample",
    "pareto_khat",
    "bootstrap_log_z",
    "metropolis_sweep",
    "time_grid",
    "exact",
]
