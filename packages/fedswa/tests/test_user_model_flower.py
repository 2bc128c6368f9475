"""Issue 34: a user's own model, data split and stock Flower ClientApp (full weights back, no
fedswa client code) under FedSWA's strategy on Flower's simulation engine (Ray); the global model
equals the weighted average of the same local training done by hand."""

import sys

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

pytestmark = pytest.mark.slow

NODES, ROUNDS, STEPS, LR = 2, 2, 5, 0.5


def user_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))


def user_split(pid):
    """The user's own split: node 0 gets the digits 0-4, node 1 the digits 5-9."""
    x, y = load_digits(return_X_y=True)
    keep = (y < 5) if pid == 0 else (y >= 5)
    return torch.tensor(x[keep] / 16.0, dtype=torch.float32), torch.tensor(y[keep])


def user_train(state, pid):
    """Full-batch gradient descent, as the user's ClientApp does it."""
    model = user_model()
    model.load_state_dict(state)
    x, y = user_split(pid)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    for _ in range(STEPS):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return model.state_dict(), len(y)


def test_stock_client_app_with_user_model_under_fedswa_on_the_simulation_engine():
    from fedswa.flower import strategy_for
    from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import Grid, ServerApp
    from flwr.simulation import run_simulation
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    client_app = ClientApp()

    @client_app.train()
    def train(msg: Message, context: Context) -> Message:
        pid = int(context.node_config["partition-id"])
        state, n = user_train(msg.content["arrays"].to_torch_state_dict(), pid)
        metrics = MetricRecord({"num-examples": n})
        return Message(RecordDict({"arrays": ArrayRecord(state), "metrics": metrics}), reply_to=msg)

    models = []
    server_app = ServerApp()

    @server_app.main()
    def main(grid: Grid, context: Context) -> None:
        strategy = strategy_for("fedswa", num_rounds=ROUNDS, eta0=0.1, fraction_evaluate=0.0,
                                min_train_nodes=NODES, min_available_nodes=NODES)  # fmt: skip
        result = strategy.start(grid=grid, initial_arrays=ArrayRecord(user_model().state_dict()),
                                num_rounds=ROUNDS)  # fmt: skip
        models.append(result.arrays.to_torch_state_dict())

    run_simulation(
        server_app=server_app, client_app=client_app, num_supernodes=NODES,
        backend_config={"client_resources": {"num_cpus": 1}, "init_args": {"num_cpus": 2}},
    )  # fmt: skip
    state = user_model().state_dict()
    for _ in range(ROUNDS):
        trained = [user_train(state, pid) for pid in range(NODES)]
        total = sum(n for _, n in trained)
        state = {k: sum(s[k] * n for s, n in trained) / total for k in state}
    assert len(models) == 1
    for k, v in state.items():
        np.testing.assert_allclose(models[0][k].numpy(), v.numpy(), rtol=0, atol=1e-5)
