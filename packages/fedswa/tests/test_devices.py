"""DECISIONS 13 / issue 34: the simulation, the Flower client and the server state run on the
device asked for (default: the model's), and give the CPU's result there. CUDA runs when
present; elsewhere only the CPU case runs (the CUDA one is skipped with the reason)."""

import pytest
import torch
from fedswa import run_federated
from fedswa.flower import make_client_app, strategy_for
from flwr.app import ArrayRecord, ConfigRecord, Context, RecordDict

pytestmark = pytest.mark.usefixtures("flower_task")  # Messages need a task identity

DEVICES = [
    "cpu",
    pytest.param(
        "cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
    ),
]

torch.manual_seed(0)
PARTS = [(torch.randn(30, 4), torch.randint(0, 3, (30,))) for _ in range(3)]


def model_fn():
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
                               torch.nn.Linear(8, 3))  # fmt: skip


def _run(device, algorithm="fedmoswa"):
    return run_federated(
        model_fn, PARTS, algorithm, rounds=2, clients_per_round=2, local_steps=3, batch_size=8,
        eta0=0.1, seed=1, device=device,
    )  # fmt: skip


@pytest.mark.parametrize("device", DEVICES)
def test_run_federated_on_a_device_matches_the_cpu(device):
    ours, cpu = _run(device), _run(None)
    for k, v in cpu.state.model_state.items():
        assert ours.state.model_state[k].device.type == device
        torch.testing.assert_close(ours.state.model_state[k].cpu(), v, rtol=1e-4, atol=1e-5)
    for k, v in cpu.state.control.items():
        assert ours.state.control[k].device.type == device
        torch.testing.assert_close(ours.state.control[k].cpu(), v, rtol=1e-4, atol=1e-5)


class _Grid:
    def __init__(self, ids):
        self.ids = list(ids)

    def get_node_ids(self):
        return list(self.ids)


@pytest.mark.parametrize("device", DEVICES)
def test_flower_client_and_server_state_on_a_device_match_the_cpu(device):
    def one_round(dev):
        strategy = strategy_for("fedmoswa", num_rounds=2, eta0=0.1, local_steps=3, batch_size=8,
                                min_available_nodes=1, min_train_nodes=1, device=dev)  # fmt: skip
        app = make_client_app(model_fn, lambda pid, num: PARTS[pid], device=dev)
        torch.manual_seed(0)
        arrays = ArrayRecord(model_fn().state_dict())
        contexts = {
            n: Context(run_id=1, node_id=n, node_config={"partition-id": n - 1,
                       "num-partitions": 3}, state=RecordDict(), run_config={})
            for n in (1, 2, 3)
        }  # fmt: skip
        for rnd in (1, 2):
            msgs = strategy.configure_train(rnd, arrays, ConfigRecord(), _Grid(contexts))
            replies = [app(m, contexts[m.metadata.dst_node_id]) for m in msgs]
            arrays, _ = strategy.aggregate_train(rnd, replies)
        return arrays.to_torch_state_dict(), strategy

    ours, strategy = one_round(device)
    cpu, _ = one_round(None)
    assert all(v.device.type == device for v in strategy.control.values())
    for k, v in cpu.items():
        torch.testing.assert_close(ours[k], v, rtol=1e-4, atol=1e-5)


def test_an_unknown_device_is_refused_by_name():
    with pytest.raises(ValueError, match="`device` 'gpu'"):
        _run("gpu")
    with pytest.raises(ValueError, match="`device` 'gpu'"):
        strategy_for("fedavg", num_rounds=1, eta0=0.1, device="gpu")


def test_a_device_torch_cannot_use_here_is_refused_early_by_name(monkeypatch):
    """New-user trial 34: ``device="cuda"`` on a CPU-only torch failed with torch's bare
    ``AssertionError`` (on every node for the ClientApp), ``"meta"`` copying a meta tensor."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # CPU-only, on any machine
    unavailable = "`device` 'cuda' is not available here"
    with pytest.raises(ValueError, match=unavailable):
        _run("cuda")
    with pytest.raises(ValueError, match="`device` 'meta'"):
        _run(torch.device("meta"))
    with pytest.raises(ValueError, match=unavailable):
        strategy_for("fedavg", num_rounds=1, eta0=0.1, device="cuda")
    # the app is built where the node's GPU may be missing: the node checks when it trains
    app = make_client_app(model_fn, lambda pid, num: PARTS[pid], device="cuda")
    strategy = strategy_for("fedavg", num_rounds=1, eta0=0.1, min_available_nodes=1,
                            min_train_nodes=1)  # fmt: skip
    msg = next(iter(strategy.configure_train(1, ArrayRecord(model_fn().state_dict()),
                                             ConfigRecord(), _Grid([1]))))  # fmt: skip
    ctx = Context(run_id=1, node_id=1, node_config={"partition-id": 0, "num-partitions": 3},
                  state=RecordDict(), run_config={})  # fmt: skip
    with pytest.raises(ValueError, match=unavailable):
        app(msg, ctx)
