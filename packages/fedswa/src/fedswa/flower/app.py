"""A ready Flower App: ``fedswa.flower.app:server_app`` and ``fedswa.flower.app:client_app``.

Run config (``[tool.flwr.app.config]`` of the app's pyproject, or ``--run-config``), defaults in
:data:`DEFAULTS`: ``algorithm``, ``dataset`` (``digits`` from scikit-learn or ``fashion-mnist``
from the Debian package), ``num-rounds``, ``eta0``, ``lr-factor`` (0 = the algorithm's own),
``local-steps``, ``batch-size``, ``seed`` (initial model and minibatch order), ``split-seed``
and ``dirichlet-alpha`` (the label-skewed split), ``fraction-train``, ``min-nodes``, ``swa``
(``last``, the paper's rule, or ``average``, classic SWA within the round), ``device`` (where
the clients train and the server steps, e.g. ``cuda``; "" = CPU) and ``result-path`` (a JSON
file the ServerApp writes when set). Node config: ``partition-id``,
``num-partitions``.
An example app folder is ``examples/flower-app/`` of the source distribution.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from icml25_core.extras import requires_extra

from ..data import load_digits, load_fashion_mnist
from ..metrics import accuracy
from ..models import mlp
from ..partition import dirichlet_fixed_size
from .client import make_client_app
from .records import to_state_dict
from .strategy import strategy_for

with requires_extra("fedswa", "flower"):
    from flwr.app import ArrayRecord, Context, MetricRecord
    from flwr.clientapp import ClientApp
    from flwr.serverapp import Grid, ServerApp

__all__ = ["DEFAULTS", "server_app", "client_app", "make_server_app", "model_for", "partition_data"]

DEFAULTS = {
    "algorithm": "fedmoswa",
    "dataset": "digits",
    "num-rounds": 2,
    "eta0": 0.05,
    "lr-factor": 0.0,
    "local-steps": 20,
    "batch-size": 32,
    "seed": 0,
    "split-seed": 42,
    "dirichlet-alpha": 0.5,
    "fraction-train": 1.0,
    "min-nodes": 2,
    "swa": "last",
    "device": "",
    "result-path": "",
}
FMNIST_CLIENT_SIZE = 500  # examples per client, the quick reproduce's size


@lru_cache(maxsize=2)
def _dataset(name: str):
    """``(x_train, y_train, x_test, y_test)``; digits: a fixed 80/20 split (seed 0)."""
    if name == "fashion-mnist":
        return load_fashion_mnist()
    if name != "digits":
        raise ValueError(f"`dataset` must be 'digits' or 'fashion-mnist', got {name!r}")
    x, y = load_digits()
    order = torch.from_numpy(np.random.default_rng(0).permutation(len(x)))
    cut = int(0.8 * len(x))
    return x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]


def model_for(dataset: str) -> torch.nn.Module:
    """The MLP of `dataset`: 64-64-10 for digits, 784-200-10 for Fashion-MNIST."""
    return mlp(64, 64, 10) if dataset == "digits" else mlp(784, 200, 10)


def partition_data(
    dataset: str, partition_id: int, num_partitions: int, alpha: float, seed: int = 42
):
    """Client `partition_id`'s ``(x, y)``: a Dirichlet(`alpha`) label-skewed split, the same on
    every node (digits: disjoint, equal sizes; Fashion-MNIST: the authors' split, 500 each)."""
    x, y, _, _ = _dataset(dataset)
    if dataset == "digits":
        size = len(y) // num_partitions
        parts = dirichlet_fixed_size(y.numpy(), num_partitions, alpha, size, seed, replace=False)
    else:
        parts = dirichlet_fixed_size(y.numpy(), num_partitions, alpha, FMNIST_CLIENT_SIZE, seed)
    idx = torch.from_numpy(parts[partition_id])
    return x[idx], y[idx]


def _settings(context: Context, overrides: dict | None) -> dict:
    return {**DEFAULTS, **dict(context.run_config), **(overrides or {})}


def make_server_app(overrides: dict | None = None, on_result: Callable | None = None) -> ServerApp:
    """A ServerApp reading the run config (then `overrides`) and running the chosen strategy.

    Parameters
    ----------
    overrides : dict, optional
        Run-config entries that win over the run config (for ``run_simulation``, which has none).
    on_result : callable, optional
        ``on_result(result: dict)`` with ``state`` (final ``state_dict``), ``control`` (``c``),
        ``accuracy`` (per round, centralised test accuracy) and ``train`` (aggregated client
        metrics per round); called in the ServerApp's process.
    """
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        s = _settings(context, overrides)
        _, _, x_test, y_test = _dataset(s["dataset"])
        torch.manual_seed(int(s["seed"]))
        model = model_for(s["dataset"])
        extra: dict[str, float | str] = {"swa": str(s["swa"])}
        if float(s["lr-factor"]) > 0:
            extra["lr_factor"] = float(s["lr-factor"])
        strategy = strategy_for(
            s["algorithm"],
            **extra,
            num_rounds=int(s["num-rounds"]),
            eta0=float(s["eta0"]),
            local_steps=int(s["local-steps"]),
            batch_size=int(s["batch-size"]),
            seed=int(s["seed"]),
            device=str(s["device"]) or None,
            fraction_train=float(s["fraction-train"]),
            min_train_nodes=1,
            min_available_nodes=int(s["min-nodes"]),
        )

        def evaluate(server_round: int, arrays: ArrayRecord) -> MetricRecord:
            net = model_for(s["dataset"])
            net.load_state_dict(to_state_dict(arrays))
            return MetricRecord({"accuracy": accuracy(net, x_test, y_test)})

        result = strategy.start(
            grid=grid,
            initial_arrays=ArrayRecord(model.state_dict()),
            num_rounds=int(s["num-rounds"]),
            evaluate_fn=evaluate,
        )
        rounds = sorted(result.evaluate_metrics_serverapp)
        out = {
            "state": to_state_dict(result.arrays),
            "control": strategy.control,
            "accuracy": [float(result.evaluate_metrics_serverapp[r]["accuracy"]) for r in rounds],
            "train": {int(r): dict(m) for r, m in result.train_metrics_clientapp.items()},
        }
        if s["result-path"]:
            summary = {k: out[k] for k in ("accuracy", "train")}
            Path(s["result-path"]).write_text(json.dumps(summary, indent=1), encoding="utf-8")
        if on_result is not None:
            on_result(out)

    return app


def _client_data(context_settings: dict) -> Callable:
    def data_fn(partition_id: int, num_partitions: int):
        s = context_settings
        return partition_data(
            s["dataset"],
            partition_id,
            num_partitions,
            float(s["dirichlet-alpha"]),
            int(s["split-seed"]),
        )

    return data_fn


def make_client_app_from_config(overrides: dict | None = None):
    """A ClientApp whose model and data follow the run config (then `overrides`)."""
    app = ClientApp()

    def _inner(context: Context):
        s = _settings(context, overrides)
        return make_client_app(
            lambda: model_for(s["dataset"]), _client_data(s), device=str(s["device"]) or None
        )

    @app.train()
    def train(msg, context):
        return _inner(context)(msg, context)

    @app.evaluate()
    def evaluate(msg, context):
        return _inner(context)(msg, context)

    return app


server_app = make_server_app()
client_app = make_client_app_from_config()
