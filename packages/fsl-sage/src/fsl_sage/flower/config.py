"""Run configuration shared by the Flower ServerApp and ClientApp.

Keys follow Flower's kebab-case run-config style (``[tool.flwr.app.config]`` of a Flower app's
pyproject); every field has the official default unless noted (spec Sec. 2).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from functools import lru_cache

import numpy as np
import torch

from icml25_core import check_choice, check_device, check_scalar

from ..algorithms import Algorithm, cse_fsl, fsl_sage, splitfed_v1, splitfed_v2
from ..data import load_digits, load_fashion_mnist
from ..models import SplitSpec, simple_conv_split
from ..partition import dirichlet_equal_split

__all__ = ["FlowerConfig", "build_split", "load_partition", "load_test", "resolve"]

#: Algorithms the Flower apps run (FedAvg: use Flower's own FedAvg strategy).
FLOWER_ALGORITHMS = ("fsl_sage", "cse_fsl", "splitfed_v1", "splitfed_v2")


def _parse_reference(reference: str, name: str) -> tuple[str, str]:
    """``"package.module:function"`` as ``(module, function)``, both non-empty.

    Raises
    ------
    ValueError
        If `reference` does not look like that (the message names the run-config key `name`).
    """
    module, sep, attr = reference.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"`{name}` must look like 'package.module:function', got {reference!r}")
    return module, attr


def resolve(reference: str, name: str) -> Callable:
    """The callable that ``"package.module:function"`` names (imported now).

    Raises
    ------
    ValueError
        If `reference` is not ``module:attribute``, or the module or attribute does not exist
        (the message names the run-config key `name`).
    """
    module, attr = _parse_reference(reference, name)
    try:
        target = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"`{name}` {reference!r} cannot be loaded: {err}") from err
    if not callable(target):
        raise ValueError(f"`{name}` {reference!r} is not callable")
    return target


@dataclass(frozen=True)
class FlowerConfig:
    """Hyper-parameters of an FSL-SAGE run on Flower.

    Attributes
    ----------
    dataset : {"fashion-mnist", "digits"}
        Debian Fashion-MNIST or scikit-learn's digits (8x8).
    num_clients : int
        Number of partitions (= SuperNodes); official 10.
    per_client : int
        Training samples per client (taken from a seeded permutation).
    alpha : float
        Dirichlet concentration of the equal split (official ``noniid_dirichlet_equal_split``).
    widths : str
        Conv widths of ``simple_conv`` as ``"w1,w2"`` (official ``"64,64"``).
    rounds, batch_size, q, l, buffer_size, align_epochs, align_batch_size : int
        Official 200, 128, 5, 10, 1000, 100, 1000.
    align : bool
        Align the aux models at rounds ``t % l == 0``.
    lr, weight_decay : float
        Adam, official 1e-3 and 1e-4.
    seed : int
        Official 200.
    num_test : int
        Test images for the server's per-round accuracy (0 = none).
    result_path : str
        If not empty, the ServerApp writes its per-round history, bytes and client metrics
        there as JSON (chosen here, for runs on the deployment engine).
    algorithm_name : {"fsl_sage", "cse_fsl", "splitfed_v1", "splitfed_v2"}
        What the apps run (run-config key ``algorithm``; default FSL-SAGE). SplitFed sends one
        message per local iteration (the server's cut gradient is needed every step).
    split : str
        ``"package.module:function"``: a factory ``() -> SplitSpec`` of your own model, called
        after ``torch.manual_seed(seed)`` on every node ("" = ``simple_conv`` for `dataset`).
    data : str
        ``"package.module:function"``: ``(partition_id, num_partitions) -> (x, y)``, your own
        client data ("" = `dataset`, split as above).
    test_data : str
        ``"package.module:function"``: ``() -> (x, y)`` for the server's accuracy ("" =
        `dataset`'s test images, `num_test` of them).
    fraction_train : float
        Share of the clients sampled each round, in ``(0, 1]`` (at least one).
    min_replies : int
        Fewest successful replies a round needs; failed or missing ClientApps are left out of
        the round (with a warning) as long as this many answered.
    device : str
        Where the nodes' models and the server model train, e.g. ``"cuda"`` ("" = the
        model's device, CPU for the built-in model; DECISIONS 13). Only its name is checked
        here (``"gpu"`` and ``"meta"`` are refused): the config is read on every machine, and
        whether CUDA is there is checked where the models are built (each node, the ServerApp).

    Raises
    ------
    TypeError, ValueError
        For a field of the wrong type or out of range (named), an unknown `dataset` or
        `algorithm`, a `split`, `data` or `test_data` that is not ``module:function``, or a
        `device` torch cannot name.
    """

    dataset: str = "fashion-mnist"
    num_clients: int = 10
    per_client: int = 1200
    alpha: float = 1.0
    widths: str = "64,64"
    rounds: int = 200
    batch_size: int = 128
    q: int = 5
    l: int = 10  # noqa: E741 - the paper's name
    buffer_size: int = 1000
    align_epochs: int = 100
    align_batch_size: int = 1000
    align: bool = True
    lr: float = 1e-3
    weight_decay: float = 1e-4
    seed: int = 200
    num_test: int = 2000
    result_path: str = ""
    algorithm_name: str = "fsl_sage"
    split: str = ""
    data: str = ""
    test_data: str = ""
    fraction_train: float = 1.0
    min_replies: int = 1
    device: str = ""

    def __post_init__(self):
        check_choice(self.dataset, "dataset", ("fashion-mnist", "digits"))
        for name in ("num_clients", "per_client", "rounds", "batch_size", "q", "l"):
            check_scalar(getattr(self, name), name, kind=int, low=1)
        check_scalar(self.num_test, "num_test", kind=int, low=0)
        check_scalar(self.seed, "seed", kind=int, low=0)
        check_scalar(self.alpha, "alpha", low=0.0, high=math.inf, inclusive="neither")
        check_scalar(self.lr, "lr", low=0.0, high=math.inf, inclusive="neither")
        check_scalar(self.weight_decay, "weight_decay", low=0.0, high=math.inf, inclusive="left")
        check_choice(self.algorithm_name, "algorithm", FLOWER_ALGORITHMS)
        check_scalar(self.fraction_train, "fraction_train", low=0.0, high=1.0, inclusive="right")
        check_scalar(self.min_replies, "min_replies", kind=int, low=1, high=self.num_clients)
        check_device(self.device or None)  # the name only: see `device`
        for name in ("split", "data", "test_data"):
            if getattr(self, name):
                _parse_reference(getattr(self, name), name)
        self.algorithm()  # validates q, l, M and the alignment settings
        self.width_pair()

    def width_pair(self) -> tuple[int, int]:
        """``widths`` parsed, e.g. ``"16,32"`` -> ``(16, 32)``."""
        try:
            pair = tuple(int(w) for w in self.widths.split(","))
        except ValueError as err:
            raise ValueError(f"`widths` must look like '16,32', got {self.widths!r}") from err
        if len(pair) != 2 or min(pair) < 1:
            raise ValueError(f"`widths` must be two positive ints, got {self.widths!r}")
        return pair

    def algorithm(self) -> Algorithm:
        """The :class:`~fsl_sage.Algorithm` of this run."""
        if self.algorithm_name == "cse_fsl":
            return cse_fsl(self.q)
        if self.algorithm_name == "splitfed_v1":
            return splitfed_v1()
        if self.algorithm_name == "splitfed_v2":
            return splitfed_v2()
        return fsl_sage(
            self.q, self.l, self.buffer_size, align_epochs=self.align_epochs,
            align_batch_size=self.align_batch_size, align=self.align,
        )  # fmt: skip

    @classmethod
    def from_run_config(cls, run_config, base: FlowerConfig | None = None) -> FlowerConfig:
        """``base`` (default: the defaults) updated by Flower run-config keys
        (``num-clients = 5`` or ``num_clients = 5``; ``algorithm`` sets `algorithm_name`).

        Raises
        ------
        ValueError
            For an unknown key (the message lists the run-config keys, ``num-clients``, ...),
            and as the class for bad values.
        """
        values = asdict(base or cls())
        names = {f.name for f in fields(cls)}
        keys = {_run_config_key(name): name for name in names}
        for key, value in dict(run_config or {}).items():
            name = key if key in names else keys.get(key.replace("_", "-"))
            if name is None:
                raise ValueError(f"unknown run-config key {key!r}; known: {sorted(keys)}")
            values[name] = value
        return cls(**values)


def _run_config_key(field_name: str) -> str:
    """The run-config key of a field: kebab-case, ``algorithm`` for `algorithm_name`."""
    return "algorithm" if field_name == "algorithm_name" else field_name.replace("_", "-")


def _image_size(cfg: FlowerConfig) -> int:
    return 28 if cfg.dataset == "fashion-mnist" else 8


def build_split(cfg: FlowerConfig) -> SplitSpec:
    """The run's split model, initialised from ``torch.manual_seed(cfg.seed)``: the user's
    ``cfg.split`` factory, else ``simple_conv_split`` for the dataset.

    Raises
    ------
    ValueError, TypeError
        If ``cfg.split`` cannot be loaded or does not return a ``SplitSpec``.
    """
    torch.manual_seed(cfg.seed)
    if not cfg.split:
        return simple_conv_split(1, 10, _image_size(cfg), cfg.width_pair())
    split = resolve(cfg.split, "split")()
    if not isinstance(split, SplitSpec):
        raise TypeError(f"`split` {cfg.split!r} returned {type(split).__name__}, not a SplitSpec")
    return split


@lru_cache(maxsize=4)
def _train_pool(dataset: str):
    return load_fashion_mnist("train") if dataset == "fashion-mnist" else load_digits()


@lru_cache(maxsize=64)
def _partition_indices(cfg: FlowerConfig, num_partitions: int):
    _x, y = _train_pool(cfg.dataset)
    n = num_partitions * cfg.per_client
    if n > y.shape[0]:
        raise ValueError(
            f"`per_client` x partitions = {cfg.per_client} x {num_partitions} = {n} exceeds the "
            f"{y.shape[0]} training samples of {cfg.dataset!r}"
        )
    pool = np.random.default_rng(cfg.seed).permutation(y.shape[0])[:n]
    parts = dirichlet_equal_split(y[pool].numpy(), num_partitions, cfg.alpha, cfg.seed)
    return [pool[p] for p in parts]


def load_partition(cfg: FlowerConfig, partition_id: int, num_partitions: int):
    """Client ``partition_id``'s training data ``(x [n_i, 1, H, W] float32, y [n_i] int64)``.

    Raises
    ------
    ValueError
        If ``partition_id`` is outside ``[0, num_partitions)`` or ``per_client x
        num_partitions`` exceeds the dataset's training samples.
    """
    check_scalar(num_partitions, "num_partitions", kind=int, low=1)
    check_scalar(partition_id, "partition_id", kind=int, low=0, high=num_partitions - 1)
    if cfg.data:
        return resolve(cfg.data, "data")(partition_id, num_partitions)
    x, y = _train_pool(cfg.dataset)
    idx = torch.from_numpy(_partition_indices(cfg, num_partitions)[partition_id])
    return x[idx], y[idx]


def load_test(cfg: FlowerConfig):
    """The server's test data (``cfg.test_data``'s, else ``cfg.num_test`` samples of the
    dataset), or ``None`` when ``num_test == 0``."""
    if cfg.test_data:
        return resolve(cfg.test_data, "test_data")()
    if cfg.num_test == 0:
        return None
    if cfg.dataset == "fashion-mnist":
        return load_fashion_mnist("test", limit=cfg.num_test)
    x, y = load_digits()  # digits has no test split: the last samples
    return x[-cfg.num_test :], y[-cfg.num_test :]
