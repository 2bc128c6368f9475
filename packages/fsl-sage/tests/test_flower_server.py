"""Issue 34: the ServerApp's loop driven in-process (a Grid that hands each message to the
ClientApp, no Ray): FSL-SAGE, CSE-FSL and SplitFed-v1/v2 equal the in-process schedules, a
user's own split model and data load from ``module:function`` references, clients are sampled
each round, and a failing ClientApp is left out of the round."""

import textwrap

import pytest
import torch
from flwr.app import Context, Error, Message, RecordDict
from fsl_sage import Simulation
from fsl_sage.flower import FlowerConfig, build_split, load_partition
from fsl_sage.flower.client_app import client_from_context, make_client_app
from fsl_sage.flower.config import load_test
from fsl_sage.flower.server_app import make_server_app

pytestmark = pytest.mark.usefixtures("flower_task")  # Messages need a task identity

BASE = dict(
    dataset="digits", num_clients=2, per_client=120, widths="4,8", rounds=2, batch_size=16,
    q=2, l=1, buffer_size=60, align_epochs=3, align_batch_size=30, num_test=300,
)  # fmt: skip


class LoopbackGrid:
    """The part of ``flwr.serverapp.Grid`` the ServerApp uses; node ``100 + i`` hosts
    partition ``i``. `fail` names nodes whose ClientApp raises (Flower then replies an error)."""

    def __init__(self, cfg, fail=(), reverse=False):
        self.app = make_client_app(cfg)
        n = cfg.num_clients
        self.contexts = {
            100 + i: Context(run_id=1, node_id=100 + i, state=RecordDict(), run_config={},
                             node_config={"partition-id": n - 1 - i if reverse else i,
                                          "num-partitions": n})
            for i in range(n)
        }  # fmt: skip
        self.fail, self.sent = set(fail), []

    def get_node_ids(self):
        return list(self.contexts)

    def send_and_receive(self, messages, timeout=None):
        replies = []
        for msg in messages:
            node = msg.metadata.dst_node_id
            self.sent.append((msg.metadata.message_type, node))
            if node in self.fail:
                replies.append(Message(Error(0, "ClientApp raised"), reply_to=msg))
                continue
            replies.append(self.app(msg, self.contexts[node]))
        return replies


def _run(cfg, grid=None):
    result = {}
    grid = grid or LoopbackGrid(cfg)
    ctx = Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config={})
    make_server_app(cfg, on_finish=result.update)(grid, ctx)
    return result, grid


def _simulation(cfg):
    parts = [load_partition(cfg, i, cfg.num_clients) for i in range(cfg.num_clients)]
    schedule = "sequential" if cfg.algorithm_name.startswith("splitfed") else "round"
    sim = Simulation(
        build_split(cfg), parts, cfg.algorithm(), schedule=schedule, batch_size=cfg.batch_size,
        lr=cfg.lr, weight_decay=cfg.weight_decay, seed=cfg.seed, test=load_test(cfg),
    )  # fmt: skip
    for _ in range(cfg.rounds):
        sim.run_round()
    return sim


def _assert_equal(result, sim):
    for key, value in sim.clients[0].model.state_dict().items():
        torch.testing.assert_close(result["client_model"][key], value, atol=1e-6, rtol=0)
    for key, value in sim.server.model.state_dict().items():
        torch.testing.assert_close(result["server_model"][key], value, atol=1e-6, rtol=0)
    accs = [r["accuracy"] for r in result["history"]]
    assert accs == pytest.approx(sim.history.accuracy, abs=1e-6)
    assert result["official_bytes"] == sim.meter.official_total()


@pytest.mark.parametrize("algorithm", ["fsl_sage", "cse_fsl", "splitfed_v1", "splitfed_v2"])
def test_server_loop_equals_the_in_process_schedule(algorithm):
    """FSL-SAGE and CSE-FSL against the "round" schedule; SplitFed (one message per local
    iteration) against the "sequential" one, with bytes counted alike."""
    cfg = FlowerConfig(**BASE, algorithm_name=algorithm)
    result, grid = _run(cfg)
    _assert_equal(result, _simulation(cfg))
    kinds = {kind for kind, _ in grid.sent}
    expected = "train.splitfed" if algorithm.startswith("splitfed") else "train." + algorithm
    assert expected.replace("_", "") in kinds
    assert ("query.probe" in kinds) == (algorithm == "fsl_sage")


USER_MODULE = """
import torch
from sklearn.datasets import load_digits
from torch import nn
from fsl_sage import SplitSpec

def make_split():
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10),
                          nn.LogSoftmax(dim=1))
    return SplitSpec.from_sequential(model, 3, torch.zeros(1, 64), 10)

def _all():
    x, y = load_digits(return_X_y=True)
    return torch.tensor(x / 16.0, dtype=torch.float32), torch.tensor(y)

def partition(partition_id, num_partitions):
    x, y = _all()
    keep = (y % num_partitions) == partition_id  # the user's own split: by label
    return x[keep][:150], y[keep][:150]

def test():
    x, y = _all()
    return x[-300:], y[-300:]
"""


def test_user_split_and_data_by_reference(tmp_path, monkeypatch):
    (tmp_path / "user_fsl.py").write_text(textwrap.dedent(USER_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    refs = dict(split="user_fsl:make_split", data="user_fsl:partition", test_data="user_fsl:test")
    cfg = FlowerConfig(**BASE, **refs)
    result, _ = _run(cfg)
    assert set(result["client_model"]) == {"1.weight", "1.bias"}  # the user's client part
    _assert_equal(result, _simulation(cfg))


def test_clients_are_sampled_each_round():
    cfg = FlowerConfig(**{**BASE, "num_clients": 4, "per_client": 60, "rounds": 3, "l": 2},
                       fraction_train=0.5)  # fmt: skip
    _, grid = _run(cfg)
    per_round = [node for kind, node in grid.sent if kind.startswith("train.")]
    assert len(per_round) == 3 * 2  # ceil(0.5 x 4) each round
    assert len({tuple(per_round[i : i + 2]) for i in (0, 2, 4)}) > 1  # not always the same


def test_a_failing_client_is_left_out_unless_too_few_answer(caplog):
    cfg = FlowerConfig(**{**BASE, "num_clients": 3, "per_client": 60})
    result, _ = _run(cfg, LoopbackGrid(cfg, fail={101}))
    assert len(result["client_metrics"]) == 2
    assert "left out" in caplog.text
    strict = FlowerConfig(**{**BASE, "num_clients": 3, "per_client": 60}, min_replies=3)
    with pytest.raises(RuntimeError, match="min_replies"):
        _run(strict, LoopbackGrid(strict, fail={101}))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"algorithm_name": "fedavg"}, ValueError, "algorithm"),
        ({"split": "nocolon"}, ValueError, "split"),
        ({"fraction_train": 0.0}, ValueError, "fraction_train"),
        ({"min_replies": 3}, ValueError, "min_replies"),
        ({"data": "user_fsl:"}, ValueError, "`data` must look like"),
        ({"test_data": ":test"}, ValueError, "`test_data` must look like"),
    ],
)
def test_flower_config_rejects_bad_new_fields(kwargs, error, match):
    with pytest.raises(error, match=match):
        FlowerConfig(**BASE, **kwargs)


def test_unloadable_references_name_the_key():
    cfg = FlowerConfig(**BASE, split="no_such_module_xyz:make")
    with pytest.raises(ValueError, match=r"`split`.*cannot be loaded"):
        build_split(cfg)
    cfg = FlowerConfig(**BASE, split="fsl_sage.models:SplitSpec.nope")
    with pytest.raises(ValueError, match="`split`"):
        build_split(cfg)


@pytest.mark.slow
def test_user_split_with_cse_fsl_on_the_ray_simulation_engine(tmp_path, monkeypatch):
    """A user's model, data split and CSE-FSL on Flower's simulation engine (Ray, 2
    SuperNodes): the Ray workers import the user's module by name, as a deployment would."""
    import json
    import os
    import sys

    from icml25_core import process_group

    (tmp_path / "user_fsl.py").write_text(textwrap.dedent(USER_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = FlowerConfig(**BASE, algorithm_name="cse_fsl", split="user_fsl:make_split",
                       data="user_fsl:partition", test_data="user_fsl:test")  # fmt: skip
    out = tmp_path / "result.pt"
    fields = {k: getattr(cfg, k) for k in cfg.__dataclass_fields__}
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "OMP_NUM_THREADS": "1", "RAY_DEDUP_LOGS": "0", "PYTHONPATH": path}
    cmd = [sys.executable, "-m", "fsl_sage.flower.simulation", json.dumps(fields), str(out)]
    with process_group(cmd, env=env, log=tmp_path / "sim.log") as proc:
        assert proc.wait(timeout=420) == 0, (tmp_path / "sim.log").read_text()[-3000:]
    _assert_equal(torch.load(out, weights_only=False), _simulation(cfg))


@pytest.mark.parametrize("algorithm", ["splitfed_v2", "fsl_sage"])
def test_client_order_follows_partition_ids_not_node_ids(algorithm):
    """New-user trial (issue 34): Flower's node ids are random, so SplitFed's client sequence
    (and the sampling) followed them from run to run; the ServerApp now orders by partition."""
    cfg = FlowerConfig(**BASE, algorithm_name=algorithm)
    result, _ = _run(cfg, LoopbackGrid(cfg, reverse=True))
    _assert_equal(result, _simulation(cfg))


BAD_DATA = """
import torch

def _x(channels=1):
    return torch.randn(20, channels, 8, 8)

def labels(partition_id, num_partitions):
    return _x(), torch.full((20,), 12)

def test_labels():
    return labels(0, 1)

def shape(partition_id, num_partitions):
    return _x(3), torch.zeros(20, dtype=torch.int64)

def tensor(partition_id, num_partitions):
    return _x()

def nan(partition_id, num_partitions):
    x = _x()
    x[3, 0, 0, 0] = float("nan")
    return x, torch.zeros(20, dtype=torch.int64)
"""


@pytest.mark.parametrize(
    ("function", "error", "match"),
    [
        ("labels", ValueError, r"`data 'bad_data:labels' \(partition-id 1\) y` must hold labels "
         r"in \[0, 10\), got range \[12, 12\]"),
        ("shape", ValueError, r"`data 'bad_data:shape' \(partition-id 1\) x` of per-sample "
         r"shape \(3, 8, 8\) does not fit the client model"),
        ("tensor", TypeError, r"`data 'bad_data:tensor' \(partition-id 1\)` must be an \(x, y\) "
         "pair of tensors, got Tensor"),
        ("nan", ValueError, r"`data 'bad_data:nan' \(partition-id 1\) x` contains NaN"),
    ],
)  # fmt: skip
def test_the_user_data_is_checked_on_the_node_like_run_checks_partitions(
    tmp_path, monkeypatch, function, error, match
):
    """New-user trial 34: labels out of range crashed the ServerApp (torch IndexError in the
    S-server's step), other bad data gave torch's errors on every node. The ClientApp now
    refuses before training, with the check of ``fsl_sage.run`` (``SplitSpec.check_data``)."""
    (tmp_path / "bad_data.py").write_text(textwrap.dedent(BAD_DATA))
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = FlowerConfig(**BASE, data=f"bad_data:{function}")
    ctx = Context(run_id=1, node_id=7, node_config={"partition-id": 1, "num-partitions": 2},
                  state=RecordDict(), run_config={})  # fmt: skip
    with pytest.raises(error, match=match):
        client_from_context(ctx, cfg)


def test_the_server_checks_the_test_data_before_the_first_round(tmp_path, monkeypatch):
    (tmp_path / "bad_data.py").write_text(textwrap.dedent(BAD_DATA))
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = FlowerConfig(**BASE, test_data="bad_data:test_labels")
    grid = LoopbackGrid(cfg)
    with pytest.raises(ValueError, match=r"`test_data 'bad_data:test_labels' \(test\) y` must "
                       r"hold labels in \[0, 10\)"):  # fmt: skip
        _run(cfg, grid)
    assert grid.sent == []  # refused before any message
