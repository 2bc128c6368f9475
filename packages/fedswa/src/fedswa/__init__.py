"""FedSWA: Improving Generalization in Federated Learning with Highly Heterogeneous Data via
Momentum-Based Stochastic Controlled Weight Averaging.

Liu et al., ICML 2025, arXiv:2507.20016 (https://arxiv.org/abs/2507.20016). Follows the official
code ``junkangLiu0/FedSWA`` (HEAD f725be9 and the May 2025 upload); the paper body was not read.

FedSWA = cyclic local learning rate (one SWA cycle per round) + server averaging; FedMoSWA adds
SCAFFOLD-style control variates with server momentum. FedAvg, SCAFFOLD and FedSAM are
configurations of the same two functions, :func:`local_update` and :func:`server_step`; Flower
strategies and a ClientApp live in :mod:`fedswa.flower` (extra ``[flower]``).
"""

from ._version import __version__
from .algorithms import ALGORITHMS, AlgorithmConfig, get_algorithm
from .control import ClientControl, ControlStore, zeros_like_params
from .data import load_digits, load_fashion_mnist
from .local import LocalResult, local_update
from .metrics import accuracy, top_hessian_eigenvalue
from .models import mlp, small_cnn
from .partition import dirichlet_fixed_size, flwr_partition, label_entropy
from .schedule import cyclic_lr, round_lr
from .server import ServerState, client_weights, server_step
from .simulate import History, ShuffledBatches, run_federated

__all__ = [
    "__version__",
    # main API: one client round, one server round, the driver
    "local_update",
    "server_step",
    "run_federated",
    "LocalResult",
    "ServerState",
    "History",
    # algorithms
    "ALGORITHMS",
    "AlgorithmConfig",
    "get_algorithm",
    # schedules and controls
    "cyclic_lr",
    "round_lr",
    "ClientControl",
    "ControlStore",
    "zeros_like_params",
    "client_weights",
    # data, splits, models, metrics
    "load_fashion_mnist",
    "load_digits",
    "dirichlet_fixed_size",
    "flwr_partition",
    "label_entropy",
    "ShuffledBatches",
    "mlp",
    "small_cnn",
    "accuracy",
    "top_hessian_eigenvalue",
]
