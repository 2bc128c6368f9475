"""``janus_mod`` without Ray, against a real server B process (TLS pinned by the enrolment):
verification cannot be skipped (issue 16, hole 1), an excluded node refuses the next round
(hole 2), the model is rebuilt from the verified aggregate, and bad input is refused."""

import dataclasses

import numpy as np
import pytest
from janus_secagg import (
    ExcludedError,
    ServerA,
    ServerKeys,
    ToA,
    UnverifiedModelError,
    VerificationError,
)
from janus_secagg.serving import start_server, stop_server
from janus_secagg.testing import Deployment, FaultyServerA

pytestmark = pytest.mark.usefixtures("flower_task")  # Messages need a task identity

DIM = 12


@pytest.fixture
def site(tmp_path):
    """A deployment of 4 nodes, server B as a process, and each node's mod and context."""
    from flwr.app import Context, RecordDict
    from janus_secagg import JanusParams
    from janus_secagg.flower import make_janus_mod

    deployment = Deployment(tmp_path / "dep", JanusParams(dim=DIM), 4)
    proc, port = start_server(deployment.serve_args("b"))
    try:
        mods = [
            make_janus_mod(
                ("127.0.0.1", port), deployment.enrolment, keys, cache_dir=str(tmp_path / "ck")
            )
            for keys in deployment.clients
        ]
        contexts = [
            Context(run_id=1, node_id=i + 1, node_config={}, state=RecordDict(), run_config={})
            for i in range(4)
        ]
        yield deployment, deployment.remote("b", port), mods, contexts
    finally:
        stop_server(proc)


def _arrays(w=0.0, keys=("w", "v")):
    from flwr.app import Array, ArrayRecord

    return ArrayRecord({keys[0]: Array(np.full((3, 2), w)), keys[1]: Array(np.full((6,), w))})


def _message(round_id, arrays=None, **config):
    from flwr.app import ConfigRecord, Message, RecordDict

    config = {
        "server-round": round_id,
        **{k.replace("_", ".", 1).replace("_", "-"): v for k, v in config.items()},
    }
    content = RecordDict({"arrays": arrays or _arrays(), "config": ConfigRecord(config)})
    return Message(content=content, dst_node_id=1, message_type="train")


def _trainer(seen, value=0.5):
    from flwr.app import Message, MetricRecord, RecordDict

    def call_next(msg, context):
        seen.append({k: v.numpy().copy() for k, v in msg.content["arrays"].items()})
        content = RecordDict(
            {"arrays": _arrays(value), "metrics": MetricRecord({"num-examples": 7})}
        )
        return Message(content=content, reply_to=msg)

    return call_next


def _pin(A, b, arrays):
    from janus_secagg.flower import model_digests

    return b.pin_model(A.sign_model(*model_digests(arrays))).to_bytes()


def _round_one(deployment, b, mods, contexts, A, nodes=range(4)):
    pin = _pin(A, b, _arrays())
    for i in nodes:
        reply = mods[i](_message(1, janus_model_pin=pin), contexts[i], _trainer([]))
        A.receive(ToA.from_bytes(reply.content["arrays"]["janus.to-a"].numpy().tobytes()))
    b.aggregate(A.participants(b.bindings(A.authorize("bindings"))))
    return A.aggregate(1), pin


def test_round_one_needs_the_pinned_model(site):
    deployment, b, mods, contexts = site
    A = ServerA(deployment.params, deployment.ka, enrolment=deployment.enrolment)
    with pytest.raises(UnverifiedModelError, match="no model pin"):
        mods[0](_message(1), contexts[0], _trainer([]))
    pin = _pin(A, b, _arrays())
    # A sends node 0 another model than the one both servers pinned
    with pytest.raises(UnverifiedModelError, match="model-inconsistency"):
        mods[0](_message(1, _arrays(0.25), janus_model_pin=pin), contexts[0], _trainer([]))
    reply = mods[0](_message(1, janus_model_pin=pin), contexts[0], _trainer([]))
    to_a = ToA.from_bytes(reply.content["arrays"]["janus.to-a"].numpy().tobytes())
    assert (to_a.round_id, len(to_a.y)) == (1, DIM + 1)
    assert b.received(deployment.authorize("received", 1)) == [to_a.client_id]


def test_later_rounds_train_only_on_the_verified_aggregate(site):
    deployment, b, mods, contexts = site
    A = ServerA(deployment.params, deployment.ka, enrolment=deployment.enrolment)
    agg_a, pin = _round_one(deployment, b, mods, contexts, A)
    # hole 1: A leaves the aggregate out, hoping the node trains on the arrays it sent
    with pytest.raises(UnverifiedModelError, match="no aggregate of round 1"):
        mods[0](_message(2, _arrays(3.0), janus_model_pin=pin), contexts[0], _trainer([]))
    seen = []
    mods[0](
        _message(2, _arrays(3.0), janus_model_pin=pin, janus_agg_a=agg_a.to_bytes()),
        contexts[0], _trainer(seen),
    )  # fmt: skip
    for array in seen[0].values():  # rebuilt from the aggregate (all 0.5), not A's 3.0
        assert np.abs(array - 0.5).max() <= 2.0**-17
    # a model of another layout (arrays renamed), or the pin left out, is refused
    with pytest.raises(UnverifiedModelError, match="names, dtypes, shapes"):
        mods[1](
            _message(2, _arrays(keys=("v", "w")), janus_model_pin=pin,
                     janus_agg_a=agg_a.to_bytes()), contexts[1], _trainer([]),
        )  # fmt: skip
    with pytest.raises(UnverifiedModelError, match="no model pin"):
        mods[1](_message(2, janus_agg_a=agg_a.to_bytes()), contexts[1], _trainer([]))
    # trial finding F1: A replays round 1's (validly signed) aggregate in round 3
    with pytest.raises(VerificationError, match="stale"):
        mods[2](_message(3, janus_model_pin=pin, janus_agg_a=agg_a.to_bytes()), contexts[2],
                _trainer([]))  # fmt: skip
    vector = agg_a.vector.copy()
    vector[0] += np.uint64(1)
    unsigned = dataclasses.replace(agg_a, vector=vector, signature=b"")
    forged = dataclasses.replace(
        unsigned, signature=deployment.ka.sign(unsigned.payload(deployment.params.context))
    )
    with pytest.raises(VerificationError):
        mods[3](_message(2, janus_model_pin=pin, janus_agg_a=forged.to_bytes()), contexts[3],
                _trainer([]))  # fmt: skip


def test_a_node_left_out_of_u_refuses_the_next_round(site):
    deployment, b, mods, contexts = site
    A = FaultyServerA(deployment.params, deployment.ka, "exclude", enrolment=deployment.enrolment)
    agg_a, pin = _round_one(deployment, b, mods, contexts, A, nodes=range(4))
    ids = {c.client_id: i for i, c in enumerate(deployment.clients)}
    victim = ids[min(ids)]
    message = _message(2, janus_model_pin=pin, janus_agg_a=agg_a.to_bytes())
    with pytest.raises(ExcludedError, match="server A left it out"):
        mods[victim](message, contexts[victim], _trainer([]))
    other = (victim + 1) % 4
    mods[other](
        _message(2, janus_model_pin=pin, janus_agg_a=agg_a.to_bytes()), contexts[other],
        _trainer([]),
    )  # fmt: skip


def test_janus_mod_reads_its_trust_anchors_from_the_node_config(site, tmp_path):
    from flwr.app import Context, RecordDict
    from janus_secagg.flower import janus_mod

    deployment, b, *_ = site
    context = Context(run_id=1, node_id=9, node_config={"janus-b-address": "127.0.0.1:1"},
                      state=RecordDict(), run_config={})  # fmt: skip
    with pytest.raises(ValueError, match="janus-enrolment, janus-operator, janus-key-file"):
        janus_mod(_message(1), context, _trainer([]))
    A = ServerA(deployment.params, deployment.ka, enrolment=deployment.enrolment)
    context.node_config.update({
        "janus-enrolment": str(deployment.paths["enrolment"]), "janus-operator":
        deployment.operator, "janus-key-file": str(deployment.paths["client_0"]),
        "janus-b-address": f"127.0.0.1:{b.port}", "janus-cache-dir": str(tmp_path / "ck"),
    })  # fmt: skip
    janus_mod(_message(1, janus_model_pin=_pin(A, b, _arrays())), context, _trainer([]))
    assert b.received(deployment.authorize("received", 1)) == [deployment.clients[0].client_id]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"enrolment": "e.json"}, TypeError, "enrolment"),
        ({"keys": 3}, TypeError, "keys"),
        ({"b_address": ("127.0.0.1", "x")}, ValueError, "b_address"),
        ({"b_address": "127.0.0.1:70000"}, ValueError, "b_address"),
        ({"b_address": "nohost"}, ValueError, "b_address"),
    ],
)
def test_make_janus_mod_rejects_bad_input(tmp_path, kwargs, error, match):
    from janus_secagg import JanusParams
    from janus_secagg.flower import make_janus_mod

    deployment = Deployment(tmp_path, JanusParams(dim=DIM), 3, tls=False)
    args = {"b_address": ("127.0.0.1", 1), "enrolment": deployment.enrolment,
            "keys": deployment.clients[0], **kwargs}  # fmt: skip
    with pytest.raises(error, match=match):
        make_janus_mod(**args)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"a_keys": "k"}, TypeError, "a_keys"),
        ({"enrolment": b"x"}, TypeError, "enrolment"),
        ({"a_keys": ServerKeys.generate()}, ValueError, "server A"),
        ({"b_address": "127.0.0.1"}, ValueError, "b_address"),
    ],
)
def test_janus_fedavg_rejects_bad_input(tmp_path, kwargs, error, match):
    from janus_secagg import JanusParams
    from janus_secagg.flower import JanusFedAvg

    deployment = Deployment(tmp_path, JanusParams(dim=DIM), 3, tls=False)
    args = {"a_keys": deployment.ka, "enrolment": deployment.enrolment,
            "b_address": ("127.0.0.1", 1), **kwargs}  # fmt: skip
    with pytest.raises(error, match=match):
        JanusFedAvg(**args)
