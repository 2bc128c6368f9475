"""Risk-averse neural processes: train any neural process for its worst (1 - alpha) of tasks
(CVaR over a finite task pool) by double-loop stochastic mirror prox, in JAX.

ICML 2025, OpenReview HZdK1aj22X (title and authors unverified; no official code). The update
equations are our reconstruction of the paper's abstract and are labelled so (see README).
"""

from ._version import __version__
from .distributed import data_mesh
from .mirror_prox import MirrorProxCVaR, entropic_step, mirror_prox_matrix_game, per_task_gradients
from .models import CNP, AttnCNP, LatentNP, gaussian_nll, sigma_floor
from .risk import (
    cvar,
    cvar_weights,
    kde_var,
    kde_var_loss,
    project_capped_simplex_kl,
    topk_cvar_loss,
)
from .tasks import TaskBatch, TaskPool, digits_pool, gp_pool, gp_predictive_nll, make_batch
from .trainer import METHODS, RiskAverseTrainer, evaluate_model

__all__ = [
    "__version__",
    # Main API: the risk, the optimiser, the trainer
    "cvar",
    "cvar_weights",
    "project_capped_simplex_kl",
    "MirrorProxCVaR",
    "RiskAverseTrainer",
    "METHODS",
    "evaluate_model",
    # baselines' batch losses
    "topk_cvar_loss",
    "kde_var",
    "kde_var_loss",
    # models
    "CNP",
    "LatentNP",
    "AttnCNP",
    "gaussian_nll",
    "sigma_floor",
    # tasks
    "TaskBatch",
    "TaskPool",
    "make_batch",
    "gp_pool",
    "gp_predictive_nll",
    "digits_pool",
    # mirror prox building blocks and scale-out
    "entropic_step",
    "mirror_prox_matrix_game",
    "per_task_gradients",
    "data_mesh",
]
