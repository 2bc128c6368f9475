"""The Flower app of ``examples/flower-app/``: FedAvg of a softmax regression on Fashion-MNIST
with Janus-style secure aggregation, for Flower's deployment (or simulation) engine.

The ServerApp is server A (``JanusFedAvg``); every ClientApp runs ``janus_mod``; server B is
``janus-secagg serve-b``, run by another party. The data are the Debian package
``dataset-fashion-mnist`` (``icml25_core.fashion_mnist``), the same softmax regression and local
full-batch gradient descent as ``janus-secagg reproduce``.

Run config (set by whoever runs ``flwr run``; server A's side): ``janus-a-key-file``,
``janus-enrolment``, ``janus-operator``, ``janus-b-address``, optional ``janus-tls-cert`` /
``janus-tls-key`` (A's client certificate for B), ``num-rounds``, ``train-images``,
``local-steps``, ``seed``, ``min-nodes``, ``result-path``. Node config: ``partition-id``,
``num-partitions`` and the ``janus-*`` keys of ``janus_mod``.
"""

import json
from pathlib import Path
from typing import cast

import numpy as np

from icml25_core import fashion_mnist
from icml25_core.extras import requires_extra

from ..enrolment import Enrolment
from ..keys import ServerKeys
from ..reproduce import Settings, accuracy, local_update
from ._arrays import flatten
from .mod import janus_mod
from .strategy import JanusFedAvg

with requires_extra("janus-secagg", "flower"):
    from flwr.app import Array, ArrayRecord, Context, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import Grid, ServerApp

SHAPES = {"w": (784, 10), "b": (10,)}


def _pixels(images: np.ndarray) -> np.ndarray:
    return images.reshape(len(images), -1).astype(np.float64) / 255.0


def client_data(partition_id: int, num_partitions: int, train_images: int, seed: int):
    """Shard `partition_id` of `num_partitions` (IID) of `train_images` training images sampled
    with `seed`: pixels in [0, 1] of shape (m, 784), float64, and int64 labels."""
    images, labels = fashion_mnist("train")
    pick = np.random.default_rng(seed).permutation(len(labels))[:train_images]
    shard = np.array_split(pick, num_partitions)[partition_id]
    return _pixels(images[shard]), labels[shard]


client_app = ClientApp(mods=[janus_mod])


@client_app.train()
def train(msg: Message, context: Context) -> Message:
    """Local full-batch gradient descent from the (verified) global model."""
    rc, nc = context.run_config, context.node_config
    X, y = client_data(int(nc["partition-id"]), int(nc["num-partitions"]),
                       int(rc["train-images"]), int(rc["seed"]))  # fmt: skip
    theta = flatten(msg.content["arrays"])  # keys in SHAPES' order: w, then b
    theta = theta + local_update(theta, X, y, Settings(local_steps=int(rc["local-steps"])))
    arrays = ArrayRecord({
        "w": Array(theta[: 784 * 10].reshape(SHAPES["w"])), "b": Array(theta[784 * 10 :]),
    })  # fmt: skip
    content = RecordDict({"arrays": arrays, "metrics": MetricRecord({"num-examples": len(y)})})
    return Message(content=content, reply_to=msg)


server_app = ServerApp()


@server_app.main()
def main(grid: Grid, context: Context) -> None:
    """Server A: pin the zero model with B, run `num-rounds` rounds, record test accuracy."""
    rc = context.run_config
    enrolment = Enrolment.load(str(rc["janus-enrolment"]), str(rc["janus-operator"]))
    strategy = JanusFedAvg(
        a_keys=ServerKeys.load(str(rc["janus-a-key-file"]), "janus-a-key-file"),
        enrolment=enrolment,
        b_address=str(rc["janus-b-address"]),
        client_cert=str(rc.get("janus-tls-cert", "")) or None,
        client_key=str(rc.get("janus-tls-key", "")) or None,
        fraction_train=1.0, fraction_evaluate=0.0, min_train_nodes=int(rc["min-nodes"]),
        min_available_nodes=int(rc["min-nodes"]),
    )  # fmt: skip
    test_images, test_labels = fashion_mnist("test")
    X_test = _pixels(test_images)
    history: dict = {"accuracy": [], "participants": []}

    def evaluate(server_round, arrays):
        theta = flatten(arrays)
        history["accuracy"].append(accuracy(theta, X_test, test_labels))
        return MetricRecord({"accuracy": history["accuracy"][-1]})

    initial = ArrayRecord({k: Array(np.zeros(s)) for k, s in SHAPES.items()})
    result = strategy.start(grid=grid, initial_arrays=initial, num_rounds=int(rc["num-rounds"]),
                            evaluate_fn=evaluate)  # fmt: skip
    for metrics in result.train_metrics_clientapp.values():
        history["participants"].append(int(cast(int, metrics["janus-participants"])))
    if rc.get("result-path"):
        Path(str(rc["result-path"])).write_text(json.dumps(history))
