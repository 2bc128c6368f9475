"""Property tests (hypothesis) of the library's invariants."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from recap_datacomp.distributed import assign_shards
from recap_datacomp.metrics import retrieval_from_scores
from recap_datacomp.mixing import mix_uniform, use_recaption

shard_lists = st.lists(st.text("abc0123", min_size=1, max_size=6), min_size=1, max_size=30)


@given(shard_lists, st.integers(1, 9))
def test_assign_shards_is_a_partition(shards, world):
    parts = [assign_shards(shards, r, world) for r in range(world)]
    flat = [s for p in parts for s in p]
    assert sorted(flat) == sorted(set(shards))
    assert len(flat) == len(set(flat))


@given(st.integers(0, 2**31), st.integers(0, 1000), st.text(max_size=20))
def test_mix_uniform_in_unit_interval_and_deterministic(seed, epoch, key):
    u = mix_uniform(seed, epoch, key)
    assert 0.0 <= u < 1.0
    assert u == mix_uniform(seed, epoch, key)


@given(st.floats(0, 1), st.floats(0, 1), st.integers(0, 100), st.text(max_size=10))
def test_recap_choice_is_monotone_in_p(p1, p2, seed, key):
    lo, hi = sorted((p1, p2))
    assert use_recaption(lo, seed, 0, key) <= use_recaption(hi, seed, 0, key)


@st.composite
def retrieval_cases(draw):
    n = draw(st.integers(2, 6))
    per = draw(st.integers(1, 3))
    vals = st.integers(0, 4).map(float)  # small integer scores: many ties
    scores = np.array(draw(st.lists(vals, min_size=n * per * n, max_size=n * per * n)))
    return scores.reshape(n * per, n), np.repeat(np.arange(n), per)


@given(retrieval_cases())
def test_recall_is_monotone_in_k_and_optimistic_bounds_pessimistic(case):
    scores, t2i = case
    n = scores.shape[1]
    ks = tuple(range(1, n + 1))
    pess = retrieval_from_scores(scores, t2i, ks=ks)
    opt = retrieval_from_scores(scores, t2i, ks=ks, ties="optimistic")
    for side in ("t2i", "i2t"):
        vals = [pess[f"{side}_R@{k}"] for k in ks]
        assert vals == sorted(vals)
        assert all(pess[f"{side}_R@{k}"] <= opt[f"{side}_R@{k}"] for k in ks)
    assert pess[f"t2i_R@{n}"] == 1.0  # all candidates


@given(retrieval_cases(), st.integers(0, 1000))
def test_recall_invariant_to_candidate_permutation(case, seed):
    scores, t2i = case
    perm = np.random.default_rng(seed).permutation(scores.shape[1])
    inv = np.argsort(perm)
    permuted = scores[:, perm]
    assert retrieval_from_scores(permuted, inv[t2i], ks=(1,)) == retrieval_from_scores(
        scores, t2i, ks=(1,)
    )
