"""Spec §5 test 16: ``janus_mod`` + ``JanusFedAvg`` under Flower's ``run_simulation`` (Ray),
3 SuperNodes, 2 rounds, server B as a separate process (TLS, enrolment); each round's global
model equals plaintext FedAvg of the same replies within 2^-(f+1). Scale-out path of spec §7."""

import itertools
import sys

import numpy as np
import pytest
from janus_secagg import ClientKeys, JanusParams, ServerKeys, ServerPublicKeys
from janus_secagg.serving import start_server, stop_server
from janus_secagg.testing import Deployment
from nacl.signing import SigningKey

pytestmark = pytest.mark.slow

SHAPES = {"w": (6, 5), "b": (5,)}


def local_train(model: dict, pid: int) -> tuple[dict, int]:
    """Deterministic 'training': shrink towards a node-specific target; weight 10 (pid + 1)."""
    rng = np.random.default_rng(pid)
    out = {k: 0.5 * v + rng.uniform(-3, 3, size=v.shape) for k, v in model.items()}
    return out, 10 * (pid + 1)


def test_flower_simulation_matches_plaintext_fedavg(tmp_path):
    from flwr.app import Context, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import Grid, ServerApp
    from flwr.simulation import run_simulation
    from janus_secagg.flower import JanusFedAvg, make_janus_mod
    from ray import cloudpickle

    # this test module is not importable by name in Ray's workers: ship its functions by value
    cloudpickle.register_pickle_by_value(sys.modules[__name__])

    deployment = Deployment(tmp_path / "dep", JanusParams(dim=35), 3)
    seeds = [bytes(keys.signing) for keys in deployment.clients]
    b_proc, b_port = start_server(deployment.serve_args("b"))
    try:
        models = []

        def node_keys(context):
            return ClientKeys(SigningKey(seeds[int(context.node_config["partition-id"])]))

        client_app = ClientApp(
            mods=[
                make_janus_mod(
                    ("127.0.0.1", b_port),
                    deployment.enrolment,
                    node_keys,
                    cache_dir=str(tmp_path / "ck"),
                )
            ]
        )

        @client_app.train()
        def train(msg: Message, context: Context):
            model = {k: v.numpy() for k, v in msg.content["arrays"].items()}
            trained, n = local_train(model, int(context.node_config["partition-id"]))
            content = RecordDict(
                {"arrays": _arrays(trained), "metrics": MetricRecord({"num-examples": n})}
            )
            return Message(content=content, reply_to=msg)

        server_app = ServerApp()

        @server_app.main()
        def main(grid: Grid, context: Context) -> None:
            strategy = JanusFedAvg(
                a_keys=deployment.ka, enrolment=deployment.enrolment,
                b_address=("127.0.0.1", b_port), cache_dir=str(tmp_path / "ck"),
                fraction_evaluate=0.0, min_train_nodes=3, min_available_nodes=3,
            )  # fmt: skip
            initial = {k: np.full(s, 0.25) for k, s in SHAPES.items()}

            def record(server_round, arrays):
                models.append({k: v.numpy().copy() for k, v in arrays.items()})

            strategy.start(
                grid=grid, initial_arrays=_arrays(initial), num_rounds=2,
                evaluate_fn=lambda r, a: record(r, a),
            )  # fmt: skip

        run_simulation(
            server_app=server_app, client_app=client_app, num_supernodes=3,
            backend_config={"client_resources": {"num_cpus": 1}, "init_args": {"num_cpus": 2}},
        )  # fmt: skip
    finally:
        stop_server(b_proc)
    assert len(models) == 3  # initial model, then one per round
    tol = 2.0 ** -(JanusParams(dim=35).frac_bits + 1)
    for start, result in itertools.pairwise(models):
        trained = [local_train(start, pid) for pid in range(3)]
        weights = [n for _, n in trained]
        for key in SHAPES:
            plain = np.average([t[key] for t, _ in trained], axis=0, weights=weights)
            assert np.abs(result[key] - plain).max() <= tol + 1e-12


def _arrays(model):
    from flwr.app import Array, ArrayRecord

    return ArrayRecord({k: Array(np.asarray(v, dtype=np.float64)) for k, v in model.items()})


def test_server_public_keys_round_trip():
    keys = ServerKeys.generate(box=True).public
    assert ServerPublicKeys.from_bytes(keys.to_bytes()) == keys
