"""One Flower simulation (``flwr.simulation.run_simulation``, Ray) of the ready app, in this
process. Ray allows one simulation per process (flower #1152): call it in a fresh process for
each run.

The module belongs to the extra ``[simulation]`` (``optional-modules`` of the card): without
Ray, importing it raises an ImportError naming ``pip install 'fedswa[simulation]'`` (without
flwr, the one of :mod:`fedswa.flower`, imported first).
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

from icml25_core.extras import requires_extra

from .app import DEFAULTS, make_client_app_from_config, make_server_app

with requires_extra("fedswa", "simulation"):
    from flwr.simulation import run_simulation

    if find_spec("ray") is None:  # flwr.simulation imports without Ray; a run would exit
        raise ModuleNotFoundError("No module named 'ray'", name="ray")

__all__ = ["simulate"]


def simulate(overrides: dict, num_supernodes: int, num_cpus: int = 2) -> dict:
    """Run the app of :mod:`fedswa.flower.app` on `num_supernodes` virtual SuperNodes.

    Parameters
    ----------
    overrides : dict
        Run-config entries (see :data:`fedswa.flower.app.DEFAULTS`).
    num_supernodes : int
        Virtual SuperNodes; node ``i`` gets ``partition-id = i``.
    num_cpus : int, default=2
        CPUs given to Ray; each ClientApp takes one.

    Returns
    -------
    dict
        ``state`` (final ``state_dict``), ``control``, ``accuracy`` (per round, centralised
        test accuracy) and ``train`` (aggregated client metrics per round).

    Raises
    ------
    ValueError
        If `overrides` holds a key that is not a run-config entry of
        :data:`~fedswa.flower.app.DEFAULTS` (e.g. ``rounds`` for ``num-rounds``).
    """
    if not isinstance(overrides, dict):
        raise TypeError(f"`overrides` must be a dict, got {type(overrides).__name__}")
    unknown = sorted(set(overrides) - set(DEFAULTS))
    if unknown:
        raise ValueError(
            f"`overrides` has unknown run-config keys {unknown}; valid: {sorted(DEFAULTS)}"
        )
    captured: dict[str, Any] = {}
    settings = {**overrides, "min-nodes": num_supernodes}
    run_simulation(
        server_app=make_server_app(settings, on_result=captured.update),
        client_app=make_client_app_from_config(settings),
        num_supernodes=num_supernodes,
        backend_config={
            "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
            "init_args": {"num_cpus": num_cpus, "include_dashboard": False},
        },
    )
    if not captured:
        raise RuntimeError("the Flower simulation ended without a result (see its log above)")
    return captured
