"""Spec §5 test 5: hiding with a trapdoored key (exact simulation of each server's view) and the
tight collusion bound (A + |U|-1 clients recover the last input; A + B recover all)."""

import numpy as np
from janus_secagg import PedersenBLS12381, mask
from janus_secagg.params import GROUP_ORDER
from janus_secagg.testing import Federation, random_codes, trapdoor_key
from nacl.public import SealedBox

SCHEME = PedersenBLS12381()
MOD = 2**64


def _u64(values):
    return np.array([int(v) % MOD for v in values], dtype=np.uint64)


def _equivocate(trapdoor, x, x_alt, rho):
    """ρ' with commit(x', ρ') == commit(x, ρ): ρ + Σ_j a_j (x_j − x'_j) mod r."""
    return (
        rho + sum(a * (int(u) - int(v)) for a, u, v in zip(trapdoor, x, x_alt, strict=True))
    ) % GROUP_ORDER


def _run(params, n, rng):
    key, trapdoor = trapdoor_key(params)
    fed = Federation(params, key, n)
    xs = random_codes(params, rng, n)
    agg_a, agg_b, msgs = fed.run_round(1, xs)
    return fed, key, trapdoor, xs, agg_a, agg_b, msgs


def _opened(fed, to_b):
    raw = SealedBox(fed.kb.box).decrypt(to_b.box)
    return raw[:32], int.from_bytes(raw[32:], "little")


def test_view_of_a_is_reproduced_by_other_inputs_with_same_sum(params):
    rng = np.random.default_rng(12)
    fed, key, trapdoor, xs, _agg_a, agg_b, msgs = _run(params, 3, rng)
    # x'_0 + x'_1 = x_0 + x_1 with the weights kept (they are only revealed in total)
    shift = np.minimum(xs[0, :-1], rng.integers(0, 2**20, size=params.dim))
    alt = xs.copy()
    alt[0, :-1] -= shift
    alt[1, :-1] += shift
    assert (alt >= 0).all()
    assert not np.array_equal(alt, xs)
    alt_masks, alt_rho_b = [], []
    for i, (to_a, to_b) in enumerate(msgs):
        seed, rho_b = _opened(fed, to_b)
        alt_masks.append(to_a.y - alt[i].astype(np.uint64))  # explicit r'_i = y_i − x'_i
        alt_rho_b.append(_equivocate(trapdoor, xs[i], alt[i], rho_b))
        # A's per-client view (y_i, ρ^A_i, C_i), byte for byte
        y_alt = alt[i].astype(np.uint64) + alt_masks[i]
        c_alt = SCHEME.commit(key, alt[i], to_a.rho_a, alt_rho_b[i])
        assert y_alt.tobytes() == to_a.y.tobytes()
        assert c_alt.to_bytes() == to_a.commitment.to_bytes()
        assert np.array_equal(
            mask(seed, 1, params.length, params.domain), to_a.y - xs[i].astype(np.uint64)
        )
    # the outputs A sees: R, P_B and C_U of B (its own Y, P_A are functions of its view)
    R_alt = np.sum(alt_masks, axis=0, dtype=np.uint64)
    assert R_alt.tobytes() == agg_b.vector.tobytes()
    assert sum(alt_rho_b) % GROUP_ORDER == agg_b.blinding


def test_view_of_b_is_reproduced_by_other_inputs_with_same_sum(params):
    rng = np.random.default_rng(13)
    fed, key, trapdoor, xs, agg_a, _agg_b, msgs = _run(params, 4, rng)
    alt = xs[::-1].copy()  # a permutation of the inputs: same sum, different per-client values
    alt_y, alt_rho_a = [], []
    for i, (to_a, to_b) in enumerate(msgs):
        seed, rho_b = _opened(fed, to_b)
        r = mask(seed, 1, params.length, params.domain)  # B's view: r_i, ρ^B_i, C_i
        alt_y.append(alt[i].astype(np.uint64) + r)
        alt_rho_a.append(_equivocate(trapdoor, xs[i], alt[i], to_a.rho_a))
        c_alt = SCHEME.commit(key, alt[i], alt_rho_a[i], rho_b)
        assert c_alt.to_bytes() == to_b.commitment.to_bytes()
    assert np.sum(alt_y, axis=0, dtype=np.uint64).tobytes() == agg_a.vector.tobytes()  # Y
    assert sum(alt_rho_a) % GROUP_ORDER == agg_a.blinding  # P_A


def test_a_with_all_but_one_colluder_recovers_last_input(params):
    rng = np.random.default_rng(14)
    _fed, _key, _trapdoor, xs, agg_a, agg_b, _msgs = _run(params, 5, rng)
    total = (agg_a.vector - agg_b.vector).astype(np.int64)  # public result
    colluders = xs[:4].sum(axis=0)  # |U| - 1 colluding clients know their inputs
    assert np.array_equal(total - colluders, xs[4])


def test_a_and_b_together_recover_every_input(params):
    rng = np.random.default_rng(15)
    fed, _key, _trapdoor, xs, _agg_a, _agg_b, msgs = _run(params, 4, rng)
    for i, (to_a, to_b) in enumerate(msgs):
        seed, _ = _opened(fed, to_b)
        recovered = (to_a.y - mask(seed, 1, params.length, params.domain)).astype(np.int64)
        assert np.array_equal(recovered, xs[i])
