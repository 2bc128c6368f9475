"""Run FSL-SAGE on Flower's simulation engine (Ray) in this process.

Needs ``pip install fsl-sage[simulation]``. For the deployment engine across machines, start a
SuperLink and one SuperNode per client (``--node-config "partition-id=0 num-partitions=2"``)
and ``flwr run`` a Flower app whose ``serverapp`` / ``clientapp`` are
``fsl_sage.flower.server_app:app`` / ``fsl_sage.flower.client_app:app``.

The module belongs to the extra ``[simulation]`` (``optional-modules`` of the card): without
Ray, importing it raises an ImportError naming ``pip install 'fsl-sage[simulation]'`` (without
flwr, the ``[flower]`` one of the apps it imports first).
"""

from __future__ import annotations

import json
import sys
from importlib.util import find_spec

import torch

from icml25_core.extras import requires_extra

from .client_app import make_client_app
from .config import FlowerConfig
from .server_app import make_server_app

with requires_extra("fsl-sage", "simulation"):
    from flwr.simulation import run_simulation

    if find_spec("ray") is None:  # flwr.simulation imports without Ray; a run would exit
        raise ModuleNotFoundError("No module named 'ray'", name="ray")

__all__ = ["run_flower_simulation"]


def run_flower_simulation(cfg: FlowerConfig, *, num_cpus_per_client: float = 1.0) -> dict:
    """Run ``cfg`` with ``cfg.num_clients`` virtual SuperNodes; return the ServerApp's result.

    Returns
    -------
    dict
        See :func:`fsl_sage.flower.server_app.make_server_app` (``on_finish``).

    Raises
    ------
    RuntimeError
        If the run ended without a result (a ClientApp or the ServerApp failed).
    """
    if not isinstance(cfg, FlowerConfig):
        raise TypeError(f"`cfg` must be a FlowerConfig, got {type(cfg).__name__}")
    result: dict = {}
    run_simulation(
        server_app=make_server_app(cfg, on_finish=result.update),
        client_app=make_client_app(cfg),
        num_supernodes=cfg.num_clients,
        backend_config={
            "client_resources": {"num_cpus": num_cpus_per_client},
            "init_args": {"num_cpus": cfg.num_clients, "include_dashboard": False},
        },
    )
    if not result:
        raise RuntimeError("the Flower simulation ended without a result; see its log above")
    return result


def main(argv=None) -> None:
    """``python -m fsl_sage.flower.simulation '<json config>' out.pt``: run, save the result."""
    args = sys.argv[1:] if argv is None else argv
    cfg = FlowerConfig(**json.loads(args[0]))
    torch.save(run_flower_simulation(cfg), args[1])


if __name__ == "__main__":
    main()
