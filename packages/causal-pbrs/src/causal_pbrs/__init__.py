"""causal-pbrs: automatic reward shaping from confounded offline data.

Li, Zhang & Bareinboim, "Automatic Reward Shaping from Confounded Offline Data", ICML 2025,
arXiv:2505.11478 (https://arxiv.org/abs/2505.11478). Logs of a demonstrator who saw a confounder
U give a causal upper bound on the optimal values; used as a PBRS potential it speeds up Q-UCB.
"""

from . import presets, regret
from ._version import __version__

# Main API: bound the optimal values from logs, shape, learn
from .agents import QUCB

# Demonstrators who see U
from .behavior import Demonstrator, anti_expert, exact_values, expert, random_policy
from .bounds import causal_upper_bound, combine, manski_bounds, monte_carlo_values

# Logs and their counts
from .data import Counts, OfflineDataset

# Confounded environments with exact tables
from .envs import ConfoundedToyText, TabularCMDP, WindyGrid
from .shaping import PotentialShaping, as_potential, shaped_reward

__all__ = [
    "__version__",
    # main API
    "causal_upper_bound",
    "combine",
    "manski_bounds",
    "monte_carlo_values",
    "shaped_reward",
    "PotentialShaping",
    "as_potential",
    "QUCB",
    "regret",
    # data
    "OfflineDataset",
    "Counts",
    # environments and demonstrators
    "TabularCMDP",
    "ConfoundedToyText",
    "WindyGrid",
    "Demonstrator",
    "expert",
    "anti_expert",
    "random_policy",
    "exact_values",
]

# gymnasium.make("causal_pbrs/WindyLava-v0"), ...: ids in presets.ENV_IDS (idempotent)
presets.register_envs()
