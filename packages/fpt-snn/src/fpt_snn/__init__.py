"""fpt-snn: fixed-point parallel training (FPT) of LIF spiking neurons.

Feng, Gao, Du, Shi, Zhao, Wu, Miao, "Efficient Parallel Training Methods for Spiking Neural
Networks with Constant Time Complexity", ICML 2025, arXiv:2506.12087
(https://arxiv.org/abs/2506.12087). The T steps of a LIF layer run as K parallel fixed-point
evaluations (Sec. 4); the exact sequential LIF is kept for deployment and as the reference.
"""

from ._version import __version__
from .data import Sequences, digits_sequences
from .diagnostics import ConvergenceReport, convergence_report
from .encoding import pixel_sequential, rate_encode, row_sequential
from .fpt import default_alphas, fpt_lif
from .lif import decay_from_tau, lambda_matrix, lif_sequential, reset_matrix, stateleaky_beta
from .neuron import FPTLIF, use_exact_lif
from .surrogate import sigmoid_surrogate

__all__ = [
    "__version__",
    # main API: the functional op, then the layer
    "fpt_lif",
    "FPTLIF",
    "use_exact_lif",
    "default_alphas",
    # exact LIF and its matrix form
    "lif_sequential",
    "lambda_matrix",
    "reset_matrix",
    "decay_from_tau",
    "stateleaky_beta",
    "sigmoid_surrogate",
    # diagnostics
    "convergence_report",
    "ConvergenceReport",
    # inputs
    "row_sequential",
    "pixel_sequential",
    "rate_encode",
    "digits_sequences",
    "Sequences",
]
