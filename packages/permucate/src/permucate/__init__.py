"""PermuCATE: variable importance for heterogeneous treatment effects, with confidence.

Paillard, Reyero Lobo, Kolodyazhniy, Thirion & Engemann, "Measuring Variable Importance in
Heterogeneous Treatment Effects with Confidence", ICML 2025, arXiv:2408.13002.
"""

from . import datasets
from ._version import __version__

# Main API
from .estimator import LOCO, PermuCATE

# CATE learners and risk nuisances
from .learners import CateModel, PerArmRegressor, as_cate, dr_learner
from .nuisance import RiskNuisances

# Per-sample risks
from .risks import dr_risk, r_risk, tau_risk

# Conditional samplers
from .sampling import ConditionalSampler, LinearGaussianSampler, MarginalSampler

__all__ = [
    "LOCO",
    "CateModel",
    "ConditionalSampler",
    "LinearGaussianSampler",
    "MarginalSampler",
    "PerArmRegressor",
    "PermuCATE",
    "RiskNuisances",
    "__version__",
    "as_cate",
    "datasets",
    "dr_learner",
    "dr_risk",
    "r_risk",
    "tau_risk",
]
