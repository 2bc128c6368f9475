"""Property-based tests of the encoding, the masks, the separable commitment and the messages."""

import hmac

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from janus_secagg import (
    AggA,
    AggB,
    Commitment,
    CommitmentKey,
    ExcludedError,
    JanusParams,
    ParticipantSet,
    PedersenBLS12381,
    ToA,
    dequantize,
    mask,
    quantize,
)
from janus_secagg.messages import y_digest
from janus_secagg.params import GROUP_ORDER
from janus_secagg.testing import Federation

DIM = 4
PARAMS = JanusParams(dim=DIM)
updates = hnp.arrays(np.float64, DIM, elements=st.floats(-20, 20))
weights = st.integers(1, 1000)
seeds = st.binary(min_size=32, max_size=32)
scalars = st.integers(0, GROUP_ORDER - 1)


@pytest.fixture(scope="module")
def key():
    return CommitmentKey.derive(PARAMS)


@given(st.lists(st.tuples(updates, weights), min_size=1, max_size=6))
def test_decoding_a_sum_of_encodings_gives_the_weighted_mean_within_half_a_step(clients):
    """dequantize(Σ_i quantize(u_i, w_i)) = Σ w_i clip(u_i) / Σ w_i to 2^-(f+1) (spec §2 steps 1
    and 7): weighting before the sum, decoding once."""
    X = np.sum([quantize(u, w, PARAMS) for u, w in clients], axis=0)
    total = sum(w for _, w in clients)
    c = PARAMS.clip
    expected = sum(w * np.clip(u, -c, c) for u, w in clients) / total
    np.testing.assert_allclose(
        dequantize(X, PARAMS), expected, rtol=0, atol=2.0 ** -(PARAMS.frac_bits + 1) + 1e-12
    )


@given(updates, weights)
def test_encodings_are_non_negative_and_end_with_the_weight(u, w):
    """x = [w · rint((clip(u) + C) 2^f), w]: offset-binary, so every entry is >= 0 (short
    commitment scalars) and the last is the weight."""
    x = quantize(u, w, PARAMS)
    assert x.shape == (DIM + 1,)
    assert (x >= 0).all()
    assert x[-1] == w
    assert (x[:-1] % w == 0).all()


@given(seeds, st.integers(0, 2**64 - 1), st.integers(1, 16), st.integers(1, 16))
def test_masks_are_deterministic_words_whose_prefixes_agree(seed, round_id, length, more):
    """The mask is a function of (seed, round, domain) only: uint64 words, the same on every
    call, and a longer mask extends a shorter one (one keystream; spec §2 step 2)."""
    r = mask(seed, round_id, length, PARAMS.domain)
    assert r.dtype == np.uint64
    assert r.shape == (length,)
    np.testing.assert_array_equal(r, mask(seed, round_id, length, PARAMS.domain))
    np.testing.assert_array_equal(mask(seed, round_id, length + more, PARAMS.domain)[:length], r)


@given(seeds, seeds, st.integers(0, 2**63))
def test_masks_of_different_seeds_or_rounds_differ(seed, other, round_id):
    """Distinct seeds (or rounds) give distinct masks: the PRG output is bound to both."""
    a = mask(seed, round_id, 8, PARAMS.domain)
    if seed != other:
        assert not np.array_equal(a, mask(other, round_id, 8, PARAMS.domain))
    assert not np.array_equal(a, mask(seed, round_id + 1, 8, PARAMS.domain))


@given(
    st.lists(st.tuples(updates, weights, scalars, scalars), min_size=1, max_size=3),
)
@settings(max_examples=15)
def test_commitments_add_like_the_vectors_and_blindings_they_commit_to(key, clients):
    """Separability and homomorphism: Σ_i C(x_i, ρ^A_i, ρ^B_i) = C(Σ x_i, Σ ρ^A_i, Σ ρ^B_i),
    and the sum opens to (Σ x_i, Σ ρ_i mod r) (spec §2 steps 3 and 7, Pedersen 1991)."""
    scheme = PedersenBLS12381()
    xs = [quantize(u, w, PARAMS) for u, w, _, _ in clients]
    total = None
    for x, (_, _, a, b) in zip(xs, clients, strict=True):
        c = scheme.commit(key, x, a, b)
        total = c if total is None else total + c
    X = np.sum(xs, axis=0)
    rho_a = sum(a for *_, a, _ in clients) % GROUP_ORDER
    rho_b = sum(b for *_, b in clients) % GROUP_ORDER
    assert total == scheme.commit(key, X, rho_a, rho_b)
    assert Commitment.from_bytes(total.to_bytes()) == total
    assert scheme.check_opening(key, total, X, (rho_a + rho_b) % GROUP_ORDER)
    assert not scheme.check_opening(key, total, X + np.eye(DIM + 1, dtype=X.dtype)[0], rho_a)


@given(st.lists(st.tuples(updates, weights), min_size=3, max_size=6), st.data())
def test_masks_cancel_in_the_two_servers_sums_over_the_participants(key, clients, data):
    """Y − R = Σ_U (x_i + r_i) − Σ_U r_i = Σ_U x_i mod 2^64 for every drop-out pattern with
    |U| = |U_A ∩ U_B| >= t: A's sum of masked vectors and B's sum of masks cancel exactly over
    the same set U, a client's verification returns that sum, and the signed aggregates survive
    their encoding (spec §2 steps 2, 5-7)."""
    n = len(clients)
    U = data.draw(st.sets(st.integers(0, n - 1), min_size=PARAMS.min_clients), label="U")
    reach = {i: data.draw(st.sampled_from(["A", "B", "none"]), label=f"client {i} reaches")
             for i in range(n) if i not in U}  # fmt: skip
    to_a = sorted(U | {i for i, side in reach.items() if side == "A"})
    to_b = sorted(U | {i for i, side in reach.items() if side == "B"})
    xs = np.array([quantize(u, w, PARAMS) for u, w in clients])
    fed = Federation(PARAMS, key, n)
    agg_a, agg_b, msgs = fed.run_round(1, xs, to_a=to_a, to_b=to_b)
    X = xs[sorted(U)].sum(axis=0)
    assert agg_a.count == len(U)
    assert not np.array_equal(agg_a.vector.astype(np.int64), X)  # Y itself is masked
    np.testing.assert_array_equal((agg_a.vector - agg_b.vector).astype(np.int64), X)
    np.testing.assert_array_equal(fed.clients[min(U)].verify(agg_a, agg_b).astype(np.int64), X)
    assert AggA.from_bytes(agg_a.to_bytes()) == agg_a
    assert AggB.from_bytes(agg_b.to_bytes()) == agg_b
    assert ToA.from_bytes(msgs[0][0].to_bytes()) == msgs[0][0]


@given(st.lists(st.tuples(updates, weights), min_size=3, max_size=6), st.data())
def test_exactly_the_clients_a_leaves_out_detect_it(key, clients, data):
    """Whatever subset U of the clients that submitted to both servers A keeps (|U| >= t, the
    same U given to B), the result verifies to Σ_U x for the clients in U and raises
    ExcludedError for each one left out, which accepts it only when told its message did not
    go out (issue 16, hole 2)."""
    n = len(clients)
    kept = data.draw(st.sets(st.integers(0, n - 1), min_size=PARAMS.min_clients), label="U")
    xs = np.array([quantize(u, w, PARAMS) for u, w in clients])
    fed = Federation(PARAMS, key, n)
    for client, x in zip(fed.clients, xs, strict=True):
        to_a, to_b = client.seal(x, bytes(32), 1, 3, 4)
        fed.A.receive(to_a)
        fed.B.receive(to_b)
    agg_b = fed.B.aggregate(fed.A.participants([fed.clients[i].client_id for i in kept]))
    agg_a = fed.A.aggregate(1)
    X = xs[sorted(kept)].sum(axis=0)
    for i, client in enumerate(fed.clients):
        if i in kept:
            np.testing.assert_array_equal(client.verify(agg_a, agg_b).astype(np.int64), X)
            continue
        with pytest.raises(ExcludedError):
            client.verify(agg_a, agg_b)
        summed = client.verify(agg_a, agg_b, submitted=False)
        np.testing.assert_array_equal(summed.astype(np.int64), X)


@given(
    st.integers(0, 2**64 - 1),
    st.lists(st.integers(0, 2**64 - 1), max_size=20, unique=True),
    st.binary(min_size=64, max_size=64),
)
def test_participant_sets_survive_their_encoding(round_id, ids, signature):
    """ParticipantSet.from_bytes(to_bytes(U)) == U for every round, sorted id set and
    signature; equal sets encode to equal bytes."""
    pset = ParticipantSet(round_id, tuple(sorted(ids)), signature)
    again = ParticipantSet.from_bytes(pset.to_bytes())
    assert again == pset
    assert again.ids == tuple(sorted(ids))
    assert again.to_bytes() == pset.to_bytes()


@given(scalars, hnp.arrays(np.uint64, st.integers(1, 8)))
def test_y_digest_is_the_standard_hmac_keyed_by_rho_a(rho_a, y):
    """The digest B sees is HMAC-SHA256 (RFC 2104) keyed by ρ^A's 32 little-endian bytes over
    y's little-endian words: equal to the standard library's ``hmac``, and another key gives
    another digest."""
    expected = hmac.new(rho_a.to_bytes(32, "little"), y.astype("<u8").tobytes(), "sha256")
    assert y_digest(rho_a, y) == expected.digest()
    assert y_digest((rho_a + 1) % GROUP_ORDER, y) != expected.digest()
