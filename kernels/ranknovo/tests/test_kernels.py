"""ranknovo-kernels against a plain Python PMD/RMD (the spec's recurrences) and the spec's
hand values (packages/ranknovo spec test 1-3)."""

import numpy as np
import pytest
import ranknovo_kernels as rk

G = 51.4238
# A small mass table: 0 gap, then A, S, K, G, N, +42.011, -17.027.
MASSES = np.array([0.0, 71.037114, 87.032028, 128.094963, 57.021464, 114.042927, 42.010565,
                   -17.026549])  # fmt: skip


def ref_pmd(a, b):
    d = [[0.0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = float(i)
    for j in range(len(b) + 1):
        d[0][j] = float(j)
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(
                d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + abs(a[i - 1] - b[j - 1])
            )
    return d[len(a)][len(b)]


def ref_rmd(a, b):
    pt = np.cumsum(b)
    out, s = [], 0.0
    for x in a:
        s += x
        out.append(s if len(b) == 0 else s - pt[int(np.argmin(np.abs(s - pt)))])
    return np.array(out)


def pack(seqs):
    width = max(1, max(len(s) for s in seqs))
    ids = np.zeros((len(seqs), width), np.int64)
    for k, s in enumerate(seqs):
        ids[k, : len(s)] = s
    return ids, np.array([len(s) for s in seqs], np.int64)


def test_hand_values():
    # ASK vs SAK: 0.622082 PMD, RMD [-0.311041, 0, 0] (spec tests 1-2).
    q, ql = pack([[1, 2, 3]])
    t, tl = pack([[2, 1, 3]])
    assert rk.pmd_batch(q, ql, t, tl, MASSES, G)[0] == pytest.approx(0.622082, abs=1e-6)
    np.testing.assert_allclose(
        rk.rmd_batch(q, ql, t, tl, MASSES, G)[0], [-0.311041, 0, 0], atol=1e-6
    )
    # NGK vs GGGK: 2.108854
    q, ql = pack([[5, 4, 3]])
    t, tl = pack([[4, 4, 4, 3]])
    assert rk.pmd_batch(q, ql, t, tl, MASSES, G)[0] == pytest.approx(2.108854, abs=1e-6)


def test_random_pairs_equal_reference():
    rng = np.random.default_rng(0)
    seqs_q = [list(rng.integers(1, len(MASSES), rng.integers(0, 25))) for _ in range(800)]
    seqs_t = [list(rng.integers(1, len(MASSES), rng.integers(0, 25))) for _ in range(800)]
    q, ql = pack(seqs_q)
    t, tl = pack(seqs_t)
    pmd = rk.pmd_batch(q, ql, t, tl, MASSES, G)
    rmd = rk.rmd_batch(q, ql, t, tl, MASSES, G)
    for k in range(len(seqs_q)):
        a = [MASSES[i] / G for i in seqs_q[k]]
        b = [MASSES[i] / G for i in seqs_t[k]]
        assert abs(pmd[k] - ref_pmd(a, b)) <= 1e-9
        np.testing.assert_allclose(rmd[k, : len(a)], ref_rmd(a, b), atol=1e-9, rtol=0)
        assert not rmd[k, len(a) :].any()


def test_bad_input_raises_value_error():
    q, ql = pack([[1, 2]])
    with pytest.raises(ValueError, match="q_len"):
        rk.pmd_batch(q, np.array([5]), q, ql, MASSES, G)
    with pytest.raises(ValueError, match="vocabulary"):
        rk.pmd_batch(q + 100, ql, q, ql, MASSES, G)
    with pytest.raises(ValueError, match="unit"):
        rk.rmd_batch(q, ql, q, ql, MASSES, 0.0)
    assert rk.num_threads() >= 1
