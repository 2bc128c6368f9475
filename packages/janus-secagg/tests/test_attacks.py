"""Issue 16: each attack of a malicious server A (or an outsider) mounted in-process, and the
named error that stops it. Holes: 1 model inconsistency (first-round pin), 2 silent exclusion,
3 sybil clients; the network-level mounts are in test_tls.py and test_flower_mod.py."""

import dataclasses

import numpy as np
import pytest
from janus_secagg import (
    Authorization,
    ClientKeys,
    Enrolment,
    ExcludedError,
    JanusClient,
    JanusParams,
    NotEnrolledError,
    ProtocolError,
    ServerA,
    ServerB,
    ServerKeys,
    UnverifiedModelError,
    VerificationError,
)
from janus_secagg.client import verify_model_pin
from janus_secagg.messages import ParticipantSet
from janus_secagg.testing import FaultyServerA, random_codes
from nacl.signing import SigningKey


@pytest.fixture
def enrolled(params, ck):
    """Operator, servers and four enrolled clients; servers built from the enrolment."""
    operator = SigningKey.generate()
    ka, kb = ServerKeys.generate(), ServerKeys.generate(box=True)
    keys = [ClientKeys.generate() for _ in range(4)]
    enrolment = Enrolment.create(operator, params, ka.public, kb.public, [k.public for k in keys])
    A = ServerA(params, ka, enrolment=enrolment)
    B = ServerB(params, kb, ka.public, enrolment=enrolment)
    clients = [JanusClient.from_enrolment(enrolment, k, ck) for k in keys]
    return enrolment, ka, kb, A, B, clients


def _round(A, B, clients, params, round_id=1, seed=0):
    xs = random_codes(params, np.random.default_rng(seed), len(clients))
    for client, x in zip(clients, xs, strict=True):
        to_a, to_b = client.seal(x, bytes(32), round_id, 5, 7)
        A.receive(to_a)
        B.receive(to_b)
    agg_b = B.aggregate(A.participants(B.bindings))
    return A.aggregate(round_id), agg_b, xs


# hole 2: silent exclusion ----------------------------------------------------------------------


def test_a_excluding_a_client_consistently_is_caught_by_that_client(federation, params):
    fed = federation(
        5, lambda p, ka, kb: (FaultyServerA(p, ka, "exclude"), ServerB(p, kb, ka.public))
    )
    agg_a, agg_b, _msgs = fed.run_round(1, random_codes(params, np.random.default_rng(1), 5))
    victim = min(range(5), key=lambda i: fed.clients[i].client_id)  # A drops the smallest id
    assert fed.clients[victim].client_id not in agg_a.ids
    assert agg_a.count == 4
    with pytest.raises(ExcludedError, match="not in the participant set"):
        fed.clients[victim].verify(agg_a, agg_b)
    for i, client in enumerate(fed.clients):
        if i != victim:  # the others' view is a valid round over 4 clients
            client.verify(agg_a, agg_b)
    # a client whose message did not go out accepts the same result when it says so
    fed.clients[victim].verify(agg_a, agg_b, submitted=False)


def test_published_u_is_the_signed_one(federation, params):
    fed = federation(4)
    agg_a, agg_b, _ = fed.run_round(1, random_codes(params, np.random.default_rng(2), 4))
    # U travels in the clear now: change it without re-signing, in one aggregate or both
    fewer = agg_a.ids[:-1]
    for a, b in (
        (dataclasses.replace(agg_a, ids=fewer), agg_b),
        (dataclasses.replace(agg_a, ids=fewer), dataclasses.replace(agg_b, ids=fewer)),
    ):
        with pytest.raises(VerificationError, match="signature"):
            fed.clients[-1].verify(a, b)


# hole 3: sybils ----------------------------------------------------------------------------------


def test_servers_refuse_keys_off_the_enrolment_list(enrolled, params, ck):
    enrolment, ka, kb, A, B, _ = enrolled
    sybil = JanusClient(params, ClientKeys.generate(), ka.public, kb.public, ck)
    for server in (A, B):
        with pytest.raises(NotEnrolledError, match="enrolment"):
            server.register(sybil.keys.public)
    to_a, to_b = sybil.prepare(np.zeros(params.dim), 1, 1)
    with pytest.raises(NotEnrolledError):
        A.receive(to_a)
    with pytest.raises(NotEnrolledError):
        B.receive(to_b)
    with pytest.raises(NotEnrolledError):
        JanusClient.from_enrolment(enrolment, sybil.keys, ck)


def test_a_cannot_put_sybils_in_u(enrolled, params, ck):
    """The attack of issue 16: A registers its own clients and sets U = {victim, sybils} to
    recover the victim's update from the sum. B knows only enrolled clients, so U ⊄ U_B."""
    _enrolment, ka, _kb, A, B, clients = enrolled
    victim = clients[0]
    to_a, to_b = victim.prepare(np.full(params.dim, 0.5), 1, 1)
    A.receive(to_a)
    B.receive(to_b)
    sybils = [ClientKeys.generate() for _ in range(2)]
    ids = tuple(sorted([victim.client_id] + [s.client_id for s in sybils]))
    unsigned = ParticipantSet(1, ids, b"")
    pset = ParticipantSet(1, ids, ka.sign(unsigned.payload(params.context)))
    with pytest.raises(ProtocolError, match="not a subset of U_B"):
        B.aggregate(pset)


def test_clients_refuse_a_u_with_ids_off_the_list(params, ck):
    """Defence in depth: a B run without the enrolment (misconfigured) accepts A's sybils, but
    every enrolled client rejects the result."""
    operator = SigningKey.generate()
    ka, kb = ServerKeys.generate(), ServerKeys.generate(box=True)
    keys = [ClientKeys.generate() for _ in range(3)]
    enrolment = Enrolment.create(operator, params, ka.public, kb.public, [k.public for k in keys])
    A, B = ServerA(params, ka), ServerB(params, kb, ka.public)  # no enrolment: registers anyone
    clients = [JanusClient.from_enrolment(enrolment, k, ck) for k in keys[:1]]
    sybils = [
        JanusClient(params, ClientKeys.generate(), ka.public, kb.public, ck) for _ in range(2)
    ]
    for c in clients + sybils:
        A.register(c.keys.public)
        B.register(c.keys.public)
    agg_a, agg_b, _ = _round(A, B, clients + sybils, params)
    with pytest.raises(VerificationError, match="not on the enrolment list"):
        clients[0].verify(agg_a, agg_b)


def test_min_clients_counts_enrolled_clients_only(enrolled, params):
    _enrolment, _ka, _kb, A, B, clients = enrolled
    for client in clients[:2]:  # two enrolled clients, below t = 3; no sybil can make up U
        to_a, to_b = client.prepare(np.zeros(params.dim), 1, 1)
        A.receive(to_a)
        B.receive(to_b)
    with pytest.raises(ProtocolError, match="min_clients"):
        B.aggregate(A.participants(B.bindings))


def test_servers_refuse_an_enrolment_that_is_not_theirs(enrolled, params):
    enrolment, ka, kb, *_ = enrolled
    with pytest.raises(ValueError, match="server A"):
        ServerA(params, ServerKeys.generate(), enrolment=enrolment)
    with pytest.raises(ValueError, match="server B"):
        ServerB(params, ServerKeys.generate(box=True), ka.public, enrolment=enrolment)
    with pytest.raises(ValueError, match="`a_pub`"):
        ServerB(params, kb, ServerKeys.generate().public, enrolment=enrolment)
    with pytest.raises(ValueError, match="params"):
        ServerA(type(params)(dim=params.dim + 1), ka, enrolment=enrolment)


# hole 1: the first-round model is pinned by both servers ----------------------------------------


def test_b_pins_one_first_round_model(enrolled, params, tmp_path):
    enrolment, ka, kb, A, _, _ = enrolled
    B = ServerB(params, kb, ka.public, enrolment=enrolment, state=tmp_path / "b.jsonl")
    layout, model = bytes(range(32)), bytes(32)
    pin = B.pin_model(A.sign_model(layout, model))
    verify_model_pin(params, ka.public, kb.public, pin, layout, model)
    assert B.pin_model(A.sign_model(layout, model)) == pin  # asked again: the same pin
    with pytest.raises(ProtocolError, match="already pinned another"):
        B.pin_model(A.sign_model(layout, bytes([1]) * 32))  # a second model for other clients
    B.close()
    restarted = ServerB(params, kb, ka.public, enrolment=enrolment, state=tmp_path / "b.jsonl")
    with pytest.raises(ProtocolError, match="already pinned another"):
        restarted.pin_model(A.sign_model(layout, bytes([1]) * 32))
    forged = dataclasses.replace(A.sign_model(layout, bytes([2]) * 32), a_signature=bytes(64))
    with pytest.raises(ProtocolError, match="not signed by server A"):
        restarted.pin_model(forged)


def test_clients_refuse_a_model_other_than_the_pinned_one(enrolled, params):
    _enrolment, ka, kb, A, B, _ = enrolled
    layout, model = bytes(range(32)), bytes(32)
    pin = B.pin_model(A.sign_model(layout, model))
    with pytest.raises(UnverifiedModelError, match="model-inconsistency"):
        verify_model_pin(params, ka.public, kb.public, pin, layout, bytes([9]) * 32)
    with pytest.raises(UnverifiedModelError, match="names, dtypes, shapes"):
        verify_model_pin(params, ka.public, kb.public, pin, bytes(32), None)
    a_only = A.sign_model(layout, model)  # A's half alone, B never signed
    with pytest.raises(UnverifiedModelError, match="server B"):
        verify_model_pin(params, ka.public, kb.public, a_only, layout, model)


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((None, "ctx", "close", 1), TypeError, "keys"),
        (("ka", "str", "close", 1), TypeError, "context"),
        (("ka", b"JANUS-SECAGG-v1", "close", 1), TypeError, "not its domain"),
        (("ka", "ctx", "open", 1), ValueError, "request"),
        (("ka", "ctx", "close", 3.7), TypeError, "round_id"),
        (("ka", "ctx", "close", 0), ValueError, "round_id"),
        (("ka", "ctx", "close", 2**64), ValueError, "round_id"),
    ],
)
def test_authorization_sign_rejects_bad_input(args, error, match):
    keys, context = ServerKeys.generate(), JanusParams(dim=4).context
    named = {"ka": keys, "ctx": context}
    with pytest.raises(error, match=match):
        Authorization.sign(*(named.get(a, a) if isinstance(a, str) and a in named else a
                             for a in args))  # fmt: skip
