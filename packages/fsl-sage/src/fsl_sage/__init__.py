"""FSL-SAGE: Accelerating Federated Split Learning via Smashed Activation Gradient Estimation.

Nair et al., "FSL-SAGE: Accelerating Federated Split Learning via Smashed Activation Gradient
Estimation", ICML 2025, arXiv:2505.23182 (https://arxiv.org/abs/2505.23182). Semantics, defaults
and byte accounting follow the official code, ``srijith1996/FSL-SAGE``.
"""

from ._version import __version__
from .algorithms import Algorithm, cse_fsl, fedavg, fsl_sage, splitfed_v1, splitfed_v2
from .align import AlignStats, align, nmse
from .aux import GradScalarAux, LinearGradScalarAux
from .buffer import AlignmentBuffer
from .comm import CommMeter, module_nbytes
from .data import load_digits, load_fashion_mnist
from .models import SplitSpec, resnet18_split, simple_conv_split, split_sequential
from .partition import dirichlet_equal_split
from .roles import AuxState, Client, FServer, ModelState, SmashedBatch, SServer
from .simulate import History, Simulation, evaluate, run

__all__ = [
    "__version__",
    # Main API: run an algorithm on a split model
    "run",
    "Simulation",
    "History",
    "evaluate",
    "Algorithm",
    "fsl_sage",
    "cse_fsl",
    "splitfed_v1",
    "splitfed_v2",
    "fedavg",
    # Models and auxiliary models
    "SplitSpec",
    "split_sequential",
    "simple_conv_split",
    "resnet18_split",
    "GradScalarAux",
    "LinearGradScalarAux",
    # Alignment
    "AlignmentBuffer",
    "AlignStats",
    "align",
    "nmse",
    # Roles, messages, accounting
    "Client",
    "SServer",
    "FServer",
    "SmashedBatch",
    "ModelState",
    "AuxState",
    "CommMeter",
    "module_nbytes",
    # Data
    "dirichlet_equal_split",
    "load_fashion_mnist",
    "load_digits",
]
