"""Spec §5 tests 2 (exactness), 7 (tampering), 8 (dropouts), 9 (round discipline),
10 (join/leave), 11 (message sizes), and the client/server bad-input tests."""

import dataclasses
import hashlib
import itertools

import numpy as np
import pytest
from janus_secagg import (
    ClientKeys,
    ExcludedError,
    JanusClient,
    JanusParams,
    ProtocolError,
    ReplayError,
    ServerA,
    ServerB,
    VerificationError,
)
from janus_secagg.messages import y_digest
from janus_secagg.params import GROUP_ORDER
from janus_secagg.prg import mask
from janus_secagg.testing import FAULTS_A, FAULTS_B, FaultyServerA, FaultyServerB, random_codes


def test_exact_sum_over_any_subset_n50(federation, params):
    rng = np.random.default_rng(3)
    fed = federation(50)
    xs = random_codes(params, rng, 50)
    for round_id in (1, 2, 3):
        keep = sorted(rng.choice(50, size=int(rng.integers(3, 51)), replace=False))
        agg_a, agg_b, _ = fed.run_round(round_id, xs, to_a=keep, to_b=range(50))
        X = (agg_a.vector - agg_b.vector).astype(np.int64)  # uint64 arithmetic mod 2^64
        assert np.array_equal(X, xs[keep].sum(axis=0))
        assert np.array_equal(fed.clients[0].verify(agg_a, agg_b).astype(np.int64), X)


@pytest.mark.filterwarnings("ignore:.*are clipped")
def test_finalize_gives_weighted_mean(federation, params):
    rng = np.random.default_rng(4)
    fed = federation(5)
    us, ws = rng.normal(size=(5, params.dim)) * 5, [1, 2, 3, 4, 10]
    for client, u, w in zip(fed.clients, us, ws, strict=True):
        to_a, to_b = client.prepare(u, w, 1)
        fed.A.receive(to_a)
        fed.B.receive(to_b)
    agg_b = fed.B.aggregate(fed.A.participants(fed.B.received))
    agg_a = fed.A.aggregate(1)
    expected = np.average(np.clip(us, -8, 8), axis=0, weights=ws)
    for client in fed.clients:
        assert np.abs(client.finalize(agg_a, agg_b) - expected).max() <= 2.0**-17


@pytest.mark.parametrize("fault", [f for f in FAULTS_A + FAULTS_B if f != "exclude"])
def test_tampering_detected_by_every_client(federation, params, fault):
    def servers(p, ka, kb):
        a = FaultyServerA(p, ka, fault) if fault in FAULTS_A else ServerA(p, ka)
        b = (
            FaultyServerB(p, kb, ka.public, fault)
            if fault in FAULTS_B
            else ServerB(p, kb, ka.public)
        )
        return a, b

    fed = federation(5, servers)
    agg_a, agg_b, _ = fed.run_round(1, random_codes(params, np.random.default_rng(5), 5))
    for client in fed.clients:
        with pytest.raises(VerificationError):
            client.verify(agg_a, agg_b)


def test_coordinate_shift_by_minus_one_detected(federation, params):
    fed = federation(4)
    agg_a, agg_b, _ = fed.run_round(1, random_codes(params, np.random.default_rng(6), 4))
    for agg in (agg_a, agg_b):
        vector = agg.vector.copy()
        vector[params.dim // 2] -= np.uint64(1)
        payload = dataclasses.replace(agg, vector=vector, signature=b"").payload(params.context)
        keys = fed.ka if agg is agg_a else fed.kb
        forged = dataclasses.replace(agg, vector=vector, signature=keys.sign(payload))
        pair = (forged, agg_b) if agg is agg_a else (agg_a, forged)
        with pytest.raises(VerificationError, match="open"):
            fed.clients[0].verify(*pair)


def test_unsigned_or_mis_signed_client_message_refused(federation, params):
    fed = federation(3)
    x = random_codes(params, np.random.default_rng(7), 1)[0]
    to_a, to_b = fed.clients[0].seal(x, bytes(32), 1, 5, 6)
    other = ClientKeys.generate()
    for server, msg in ((fed.A, to_a), (fed.B, to_b)):
        with pytest.raises(ProtocolError, match="signature"):
            server.receive(dataclasses.replace(msg, signature=b""))
        with pytest.raises(ProtocolError, match="signature"):
            server.receive(
                dataclasses.replace(msg, signature=other.sign(msg.payload(params.context)))
            )
    y = to_a.y.copy()
    y[0] += np.uint64(1)
    with pytest.raises(ProtocolError, match="signature"):
        fed.A.receive(dataclasses.replace(to_a, y=y))  # consistent shift of y breaks σ
    stranger = JanusClient(params, other, fed.ka.public, fed.kb.public, fed.ck)
    with pytest.raises(ProtocolError, match="not registered"):
        fed.A.receive(stranger.seal(x, bytes(32), 1, 1, 1)[0])
    fed.A.receive(to_a)
    fed.A.receive(to_a)  # the very same message again (a resend after a lost reply): a no-op
    assert fed.A.received == [fed.clients[0].keys.client_id]
    another = fed.clients[0].seal(x, bytes([1]) * 32, 1, 5, 6)[0]  # a second prepare
    with pytest.raises(ProtocolError, match="already sent another message"):
        fed.A.receive(another)


PATTERNS = list(itertools.product((True, False), repeat=2))  # (reaches A, reaches B)


@pytest.mark.parametrize("seed", range(4))
def test_dropouts_give_exact_sum_over_intersection(federation, params, seed):
    rng = np.random.default_rng(seed)
    fed = federation(6)
    xs = random_codes(params, rng, 6)
    # every pattern appears: clients 0-3 take the four patterns, 4-5 reach both
    patterns = PATTERNS + [(True, True)] * 2
    order = rng.permutation(6)
    to_a = [i for i in range(6) if patterns[order[i]][0]]
    to_b = [i for i in range(6) if patterns[order[i]][1]]
    agg_a, agg_b, _ = fed.run_round(1, xs, to_a=to_a, to_b=to_b)
    both = sorted(set(to_a) & set(to_b))
    assert agg_a.count == len(both) == 3
    X = fed.clients[both[0]].verify(agg_a, agg_b)
    assert np.array_equal(X.astype(np.int64), xs[both].sum(0))


def test_too_few_participants_refused_by_b_and_clients(federation, params):
    fed = federation(4)
    xs = random_codes(params, np.random.default_rng(8), 4)
    with pytest.raises(ProtocolError, match="min_clients"):
        fed.run_round(1, xs, to_a=[0, 1, 2], to_b=[1, 2, 3])  # |U| = 2 < t = 3
    # servers configured with t = 2 reject the clients' messages (their signatures cover t)
    lax = JanusParams(dim=params.dim, min_clients=2)
    fed = federation(4, lambda p, ka, kb: (ServerA(lax, ka), ServerB(lax, kb, ka.public)))
    with pytest.raises(ProtocolError, match="JanusParams differ"):
        fed.run_round(1, xs, to_a=[0, 1, 2], to_b=[1, 2, 3])

    # colluding servers that skip the |U| >= t check publish |U| = 2: clients refuse
    class _IgnoreT:
        min_clients = 2

        def __init__(self, p):
            self._p = p

        def __getattr__(self, name):
            return getattr(self._p, name)

    def servers(p, ka, kb):
        a, b = ServerA(p, ka), ServerB(p, kb, ka.public)
        a.params, b.params = _IgnoreT(p), _IgnoreT(p)
        return a, b

    fed = federation(4, servers)
    agg_a, agg_b, _ = fed.run_round(1, xs, to_a=[0, 1, 2], to_b=[1, 2, 3])
    for client in fed.clients:
        with pytest.raises(VerificationError, match="min_clients"):
            client.verify(agg_a, agg_b)


def test_b_answers_once_per_round(federation, params):
    fed = federation(4)
    xs = random_codes(params, np.random.default_rng(9), 4)
    msgs = [c.seal(x, bytes(32), 1, 1, 1) for c, x in zip(fed.clients, xs, strict=True)]
    for to_a, to_b in msgs:
        fed.A.receive(to_a)
        fed.B.receive(to_b)
    fed.B.aggregate(fed.A.participants(fed.B.received))
    with pytest.raises(ProtocolError, match="already answered"):
        fed.B.aggregate(fed.A.participants(fed.B.received[:3]))
    forged = fed.A.participants(fed.B.received)
    with pytest.raises(ProtocolError, match="signed by server A"):
        ServerB(params, fed.kb, fed.ka.public).aggregate(
            dataclasses.replace(forged, signature=bytes(64))
        )


def test_replayed_message_next_round_raises_replay_error(federation, params):
    fed = federation(3)
    xs = random_codes(params, np.random.default_rng(10), 3)
    _, _, msgs = fed.run_round(1, xs)
    for server, msg in ((fed.A, msgs[0][0]), (fed.B, msgs[0][1])):
        with pytest.raises(ReplayError):
            server.receive(msg)
    future = fed.clients[0].seal(xs[0], bytes(32), 5, 1, 1)[0]
    with pytest.raises(ProtocolError, match="open round"):
        fed.A.receive(future)


def test_client_joins_at_round_four_with_public_keys_only(federation, params):
    rng = np.random.default_rng(11)
    fed = federation(4)
    late = fed.clients.pop()  # registered, but absent in rounds 1-3
    for round_id in (1, 2, 3):
        fed.run_round(round_id, random_codes(params, rng, 3))
    newcomer = fed.join()  # joins now with the servers' public keys only
    fed.clients += [late, newcomer]
    xs = random_codes(params, rng, 5)
    agg_a, agg_b, _ = fed.run_round(4, xs)
    for client in (late, newcomer):
        assert np.array_equal(client.verify(agg_a, agg_b).astype(np.int64), xs.sum(0))


@pytest.mark.parametrize("dim", [16, 1000])
def test_message_sizes_against_n(federation, ck, dim):
    from janus_secagg import CommitmentKey

    params = JanusParams(dim=dim)
    key = ck if dim == 16 else CommitmentKey.derive(params)
    sizes = {}
    for n in (5, 200):
        from janus_secagg.testing import Federation

        fed = Federation(params, key, n)
        xs = np.zeros((n, params.length), dtype=np.int64)
        xs[:, -1] = 1
        agg_a, agg_b, msgs = fed.run_round(1, xs)
        sizes[n] = [len(m.to_bytes()) for m in (*msgs[0], agg_a, agg_b)]
    assert sizes[5][:2] == sizes[200][:2]  # upload constant in n
    for n in (5, 200):
        up_a, up_b, down_a, down_b = sizes[n]
        assert up_a - 8 * params.length == 10 + 8 + 4 + 32 + 48 + 32 + 64  # head, i, len, ρ, C, σ
        assert up_b == 10 + 8 + 112 + 48 + 32 + 64
        # download: both aggregates carry U, 8 bytes per participant (issue 16, hole 2)
        assert down_a + down_b - 16 * params.length == 2 * (10 + 4 + 8 * n + 48 + 4 + 32 + 64)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda c: c.prepare([0.0] * 15, 1, 1), ValueError, "`u`"),
        (lambda c: c.prepare([float("nan")] * 16, 1, 1), ValueError, "`u`"),
        (lambda c: c.prepare([0.0] * 16, 0, 1), ValueError, "weight"),
        (lambda c: c.prepare([0.0] * 16, 1, -1), ValueError, "round_id"),
        (lambda c: c.finalize("a", "b"), TypeError, "agg_a"),
        (lambda c: c.prepare(np.zeros(16), 1, 1.0), TypeError, "round_id"),
        (
            lambda c: c.prepare(np.ma.array(np.zeros(16), mask=[1] + [0] * 15), 1, 1),
            ValueError,
            "`u`",
        ),
        (lambda c: c.seal(np.zeros(17, np.int64), bytes(32), -1, 0, 0), ValueError, "round_id"),
        (
            lambda c: c.seal(np.zeros(17, np.int64), bytes(32), 1, GROUP_ORDER, 0),
            ValueError,
            "rho_a",
        ),
    ],
)
def test_client_rejects_bad_input(federation, call, error, match):
    with pytest.raises(error, match=match):
        call(federation(1).clients[0])


def _one_message(fed, params):
    return fed.clients[0].seal(np.zeros(params.length, np.int64), bytes(32), 1, 5, 7)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda fed, m: fed.A.participants(None), TypeError, "u_b"),
        (lambda fed, m: fed.A.participants("abc"), TypeError, "u_b"),
        (lambda fed, m: fed.A.participants([-1]), ValueError, "u_b"),
        (lambda fed, m: fed.A.participants(["7"]), ValueError, "u_b"),
        (lambda fed, m: fed.A.participants([True]), ValueError, "u_b"),
        (lambda fed, m: ServerA(fed.params, fed.A.keys, round_id=-1), ValueError, "round_id"),
        (lambda fed, m: ServerA(fed.params, fed.A.keys, round_id=1.5), TypeError, "round_id"),
        (lambda fed, m: fed.A.receive(dataclasses.replace(m[0], rho_a=-1)), ProtocolError, "rho_a"),
        (
            lambda fed, m: fed.A.receive(dataclasses.replace(m[0], rho_a=GROUP_ORDER)),
            ProtocolError,
            "rho_a",
        ),
        # ρ^A is covered by the signature (HMAC_{ρ^A}(y)): a changed ρ^A is caught at A
        (
            lambda fed, m: fed.A.receive(dataclasses.replace(m[0], rho_a=6)),
            ProtocolError,
            "signature",
        ),
    ],
)
def test_servers_reject_bad_input(federation, params, call, error, match):
    fed = federation(3)
    with pytest.raises(error, match=match):
        call(fed, _one_message(fed, params))


def test_stale_aggregate_is_rejected(federation, params):
    # trial finding F1: a validly signed aggregate of an earlier round is a replay
    fed = federation(3)
    xs = random_codes(params, np.random.default_rng(21), 3)
    old = fed.run_round(1, xs)[:2]
    new = fed.run_round(2, xs)[:2]
    client = fed.clients[0]  # prepared round 2
    assert np.array_equal(client.verify(*new).astype(np.int64), xs.sum(0))
    with pytest.raises(VerificationError, match=r"round 1.*stale"):
        client.verify(*old)
    with pytest.raises(VerificationError, match="stale"):
        client.finalize(*new, round_id=3)
    client.verify(*old, round_id=1)  # explicitly asked for round 1
    bystander = JanusClient(params, ClientKeys.generate(), fed.A.public, fed.B.public, fed.ck)
    with pytest.raises(ValueError, match="round_id"):
        bystander.finalize(*new)
    bystander.finalize(*new, round_id=2)


def test_parameter_mismatch_is_rejected_not_decoded(federation, params):
    # trial finding F2: a client with another clip used to yield a verified, wrong mean
    fed = federation(3)
    other = JanusParams(dim=params.dim, clip=4.0)
    odd = JanusClient(other, ClientKeys.generate(), fed.A.public, fed.B.public, fed.ck)
    fed.A.register(odd.keys.public)
    to_a, to_b = odd.prepare(np.ones(params.dim), 1, 1)
    with pytest.raises(ProtocolError, match="JanusParams differ"):
        fed.A.receive(to_a)
    with pytest.raises(ProtocolError, match=r"not registered|JanusParams differ"):
        fed.B.receive(to_b)
    agg_a, agg_b, _ = fed.run_round(1, random_codes(params, np.random.default_rng(2), 3))
    odd.round_id = 1
    with pytest.raises(VerificationError, match="signature"):
        odd.verify(agg_a, agg_b)


def test_inconsistent_pair_is_left_out_by_bindings(federation, params):
    # trial finding F5: ToA and ToB of one client from two prepare calls (a retry, or a cheat)
    fed = federation(4)
    us = np.random.default_rng(5).uniform(-1, 1, (4, params.dim))
    msgs = [client.prepare(u, 1, 1) for client, u in zip(fed.clients, us, strict=True)]
    retry = fed.clients[0].prepare(us[0], 1, 1)
    fed.A.receive(msgs[0][0])
    fed.B.receive(retry[1])
    for to_a, to_b in msgs[1:]:
        fed.A.receive(to_a)
        fed.B.receive(to_b)
    pset = fed.A.participants(fed.B.bindings)
    assert fed.clients[0].client_id not in pset.ids
    assert len(pset.ids) == 3
    agg_b = fed.B.aggregate(pset)
    agg_a = fed.A.aggregate(1)
    expected = us[1:].mean(axis=0)
    for client in fed.clients[1:]:
        assert np.abs(client.finalize(agg_a, agg_b) - expected).max() <= 2.0**-17
    with pytest.raises(ExcludedError):  # its two messages differ: left out, and it can tell
        fed.clients[0].finalize(agg_a, agg_b)


def test_b_cannot_test_guesses_of_an_update(federation, params):
    # trial finding F20: with SHA-256(y) in ToB, B (who knows r) could check guesses of x
    fed = federation(3)
    x = np.zeros(params.length, np.int64)
    x[-1] = 1
    to_a, to_b = fed.clients[0].seal(x, bytes(32), 1, 5, 7)
    r = mask(bytes(32), 1, params.length, params.domain)
    guess = (x.astype(np.uint64) + r).astype("<u8").tobytes()
    assert to_b.y_digest != hashlib.sha256(guess).digest()
    assert to_b.y_digest == y_digest(to_a.rho_a, to_a.y)


def test_total_weight_over_budget_is_named(federation):
    # trial finding F19: each weight legal, their sum above W_max
    small = JanusParams(dim=4, max_total_weight=10)
    from janus_secagg import CommitmentKey

    fed = federation(3)
    ck = CommitmentKey.derive(small)
    clients = [
        JanusClient(small, ClientKeys.generate(), fed.A.public, fed.B.public, ck) for _ in range(3)
    ]
    A, B = ServerA(small, fed.A.keys), ServerB(small, fed.B.keys, fed.A.public)
    for client in clients:
        A.register(client.keys.public)
        B.register(client.keys.public)
        to_a, to_b = client.prepare(np.zeros(4), 5, 1)
        A.receive(to_a)
        B.receive(to_b)
    agg_b = B.aggregate(A.participants(B.bindings))
    with pytest.raises(VerificationError, match=r"total weight 15.*max_total_weight"):
        clients[0].finalize(A.aggregate(1), agg_b)


def test_values_beyond_clip_warn(federation, params):
    # trial finding F3: clipping used to be silent (a wrong JanusFedAvg model for weights > C)
    client = federation(1).clients[0]
    with pytest.warns(UserWarning, match=r"2 of 16 values lie beyond ±clip = 8.0"):
        client.prepare([9.0, -12.0] + [0.0] * 14, 1, 1)


def test_client_and_servers_reject_bad_construction(params, ck):
    from janus_secagg import ServerKeys

    ka, kb = ServerKeys.generate(), ServerKeys.generate(box=True)
    with pytest.raises(TypeError, match="params"):
        JanusClient({"dim": 16}, ClientKeys.generate(), ka.public, kb.public, ck)
    with pytest.raises(ValueError, match="ck"):
        JanusClient(JanusParams(dim=3), ClientKeys.generate(), ka.public, kb.public, ck)
    with pytest.raises(ValueError, match="b_pub"):
        JanusClient(params, ClientKeys.generate(), ka.public, ka.public, ck)
    with pytest.raises(ValueError, match="box key"):
        ServerB(params, ka, ka.public)
    with pytest.raises(TypeError, match="keys"):
        ServerA(params, "key")
    with pytest.raises(TypeError, match="msg"):
        ServerA(params, ka).receive(b"bytes")
