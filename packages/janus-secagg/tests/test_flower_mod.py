"""``janus_mod`` without Ray: it verifies the previous aggregate before training (a tampered
AggA is refused: model-inconsistency attack), rebuilds the model from it, and replaces the
plaintext reply by ToA; ``JanusFedAvg`` and ``make_janus_mod`` reject bad arguments."""

import dataclasses

import numpy as np
import pytest
from janus_secagg import AggB, ServerKeys, ToA, VerificationError
from janus_secagg.net import Remote, start_server, stop_server

DIM = 12


@pytest.fixture(autouse=True)
def task_identity(monkeypatch):
    """Flower stamps messages with the running task's ids; set them as a SuperNode would."""
    from flwr.supercore.task_identity import TaskIdentity

    monkeypatch.setattr(TaskIdentity, "_run_id", 1, raising=False)
    monkeypatch.setattr(TaskIdentity, "_task_id", 1, raising=False)
    monkeypatch.setattr(TaskIdentity, "_node_id", 1, raising=False)


@pytest.fixture
def server_b():
    ka = ServerKeys.generate()
    proc, port = start_server(
        ["-m", "janus_secagg", "serve-b", "--dim", str(DIM), "--a-pub", ka.public.sign.hex()]
    )
    try:
        yield ka, port, Remote("127.0.0.1", port).keys()
    finally:
        stop_server(proc)


def _message(config):
    from flwr.app import Array, ArrayRecord, ConfigRecord, Message, RecordDict

    arrays = ArrayRecord({"w": Array(np.zeros((3, 4)))})
    content = RecordDict({"arrays": arrays, "config": ConfigRecord(config)})
    return Message(content=content, dst_node_id=1, message_type="train")


def _context():
    from flwr.app import Context, RecordDict

    return Context(run_id=1, node_id=1, node_config={}, state=RecordDict(), run_config={})


def _trainer(seen):
    from flwr.app import Array, ArrayRecord, Message, MetricRecord, RecordDict

    def call_next(msg, context):
        seen.append(msg.content["arrays"]["w"].numpy().copy())
        content = RecordDict(
            {
                "arrays": ArrayRecord({"w": Array(np.full((3, 4), 0.5))}),
                "metrics": MetricRecord({"num-examples": 7}),
            }
        )
        return Message(content=content, reply_to=msg)

    return call_next


def test_mod_sends_to_b_and_returns_to_a(server_b):
    from janus_secagg.flower import make_janus_mod

    ka, port, b_pub = server_b
    mod = make_janus_mod("127.0.0.1", port, ka.public, b_pub)
    seen = []
    reply = mod(_message({"server-round": 1}), _context(), _trainer(seen))
    raw = reply.content["arrays"]["janus.to-a"].numpy().tobytes()
    to_a = ToA.from_bytes(raw)
    assert (to_a.round_id, len(to_a.y)) == (1, DIM + 1)
    assert Remote("127.0.0.1", port).received() == [to_a.client_id]


def test_mod_rebuilds_model_from_verified_aggregate_and_refuses_tampered(server_b):
    from janus_secagg import ClientPublicKey, JanusParams
    from janus_secagg.flower import make_janus_mod
    from janus_secagg.server import ServerA

    ka, port, b_pub = server_b
    p = JanusParams(dim=DIM)
    mod = make_janus_mod("127.0.0.1", port, ka.public, b_pub)
    # round 1 through the mod for three nodes, then server A's side by hand
    A = ServerA(p, ka)
    for _ in range(3):
        reply = mod(_message({"server-round": 1}), _context(), _trainer([]))
        to_a = ToA.from_bytes(reply.content["arrays"]["janus.to-a"].numpy().tobytes())
        A.register(ClientPublicKey.from_bytes(reply.content["janus"]["janus.client-pub"]))
        A.receive(to_a)
    b = Remote("127.0.0.1", port)
    b.aggregate(A.participants(b.bindings()))
    agg_a = A.aggregate(1)
    seen = []
    mod(_message({"server-round": 2, "janus.agg-a": agg_a.to_bytes()}), _context(), _trainer(seen))
    assert np.abs(seen[0] - 0.5).max() <= 2.0**-17  # rebuilt from the aggregate, not A's arrays
    # trial finding F1: A replays round 1's (validly signed) aggregate in round 3
    with pytest.raises(VerificationError, match="stale"):
        mod(
            _message({"server-round": 3, "janus.agg-a": agg_a.to_bytes()}), _context(), _trainer([])
        )
    vector = agg_a.vector.copy()
    vector[0] += np.uint64(1)
    unsigned = dataclasses.replace(agg_a, vector=vector, signature=b"")
    forged = dataclasses.replace(unsigned, signature=ka.sign(unsigned.payload(p.context)))
    with pytest.raises(VerificationError):
        mod(
            _message({"server-round": 2, "janus.agg-a": forged.to_bytes()}),
            _context(),
            _trainer([]),
        )
    assert isinstance(b.fetch(1, AggB), AggB)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"a_pub": "key"}, TypeError, "a_pub"),
        ({"b_pub": 3}, TypeError, "b_pub"),
        ({"b_port": "x"}, ValueError, "b_port"),
        ({"b_port": 70000}, ValueError, "b_port"),
    ],
)
def test_make_janus_mod_rejects_bad_input(kwargs, error, match):
    from janus_secagg.flower import make_janus_mod

    keys = ServerKeys.generate(box=True).public
    args = {"b_host": "127.0.0.1", "b_port": 1, "a_pub": keys, "b_pub": keys, **kwargs}
    with pytest.raises(error, match=match):
        make_janus_mod(**args)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"a_keys": "k"}, "a_keys"), ({"b_pub": b"x"}, "b_pub")],
)
def test_janus_fedavg_rejects_bad_input(kwargs, match):
    from janus_secagg.flower import JanusFedAvg

    args = {
        "a_keys": ServerKeys.generate(),
        "b_address": ("127.0.0.1", 1),
        "b_pub": ServerKeys.generate(box=True).public,
        **kwargs,
    }
    with pytest.raises(TypeError, match=match):
        JanusFedAvg(**args)
