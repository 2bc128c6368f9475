"""Flower apps of FedSWA, FedMoSWA, SCAFFOLD and FedSAM (extra ``[flower]``, ``flwr>=1.42``).

Strategies subclass ``flwr.serverapp.strategy.FedAvg`` and aggregate with
:func:`fedswa.server_step`; :func:`make_client_app` runs :func:`fedswa.local_update` and keeps
each client's control ``c_i`` in ``context.state`` (clients are re-created every round, see
flower issues #1530 and #1910). Run them with Flower's simulation engine
(``flwr.simulation.run_simulation``, Ray) on one machine or its deployment engine
(``flower-superlink`` / ``flower-supernode`` / ``flwr run``) across machines.

The package belongs to the extra (``optional-modules`` of the card): without flwr, importing it
raises an ImportError naming ``pip install 'fedswa[flower]'``; ``import fedswa`` never imports it.
"""

from .client import make_client_app
from .records import CONTROL_PREFIX, MODEL_PREFIX, pack_update, unpack_update
from .strategy import FedAvgSWA, FedMoSWA, FedSAM, FedSWA, Scaffold, strategy_for

__all__ = [
    "FedSWA",
    "FedMoSWA",
    "Scaffold",
    "FedSAM",
    "FedAvgSWA",
    "strategy_for",
    "make_client_app",
    "pack_update",
    "unpack_update",
    "MODEL_PREFIX",
    "CONTROL_PREFIX",
]
