"""Property tests (hypothesis) of ranknovo's invariants."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from ranknovo.kernels.pmd_ref import pmd_ref, rmd_ref
from ranknovo.mass import pack, pmd, pmd_batch, rmd, rmd_batch
from ranknovo.metrics import aa_match
from ranknovo.vocab import AMINO_ACIDS, Vocab

VOCAB = Vocab.massivekb()
RES = [*AMINO_ACIDS, "C+57.021", "M+15.995", "N+0.984", "Q+0.984"]
peptide = st.lists(st.sampled_from(RES), min_size=0, max_size=15)
masses = st.lists(st.floats(-1.0, 5.0, allow_nan=False), min_size=0, max_size=12)


@given(peptide, peptide)
def test_pmd_is_symmetric_nonnegative_and_bounded(q, t):
    d = pmd(q, t)
    assert d >= 0
    assert abs(d - pmd(t, q)) < 1e-9
    assert d <= max(len(q), len(t)) + sum(
        abs(VOCAB.masses[VOCAB.index[x]] / 51.4238) for x in q + t
    )


@given(peptide)
def test_pmd_of_a_peptide_with_itself_is_zero_and_rmd_zero(q):
    assert pmd(q, q) == 0
    assert not rmd(q, q).any()


@given(peptide, peptide, peptide)
@settings(max_examples=50)
def test_pmd_triangle_inequality(a, b, c):
    assert pmd(a, c) <= pmd(a, b) + pmd(b, c) + 1e-9


@given(peptide, peptide)
def test_empty_query_costs_target_length(q, t):
    assert pmd([], t) == len(t)
    assert pmd(q, []) == len(q)


@given(masses, masses)
def test_rmd_deviation_is_the_smallest_prefix_distance(a, b):
    out = rmd_ref(a, b)
    assert len(out) == len(a)
    pq = np.cumsum(a) if a else np.array([])
    pt = np.cumsum(b) if b else np.array([])
    for i, v in enumerate(out):
        best = np.min(np.abs(pq[i] - pt)) if len(b) else abs(pq[i])
        assert abs(abs(v) - best) < 1e-9
    assert pmd_ref(a, a) == 0.0


@given(st.lists(st.tuples(peptide, peptide), min_size=1, max_size=8))
@settings(max_examples=40)
def test_batched_numpy_equals_reference(pairs):
    q, ql = pack([p for p, _ in pairs])
    t, tl = pack([p for _, p in pairs])
    for fn in (pmd_batch, rmd_batch):
        a = fn(q, ql, t, tl, VOCAB.masses, backend="numpy")
        b = fn(q, ql, t, tl, VOCAB.masses, backend="reference")
        np.testing.assert_allclose(a, b, atol=1e-9, rtol=0)


@given(peptide.filter(len))
def test_aa_match_of_identical_peptides_matches_everything(q):
    m, ok = aa_match(q, q, VOCAB)
    assert ok
    assert m.all()
    assert m.size == len(q)


@given(peptide.filter(len))
def test_tokenize_round_trips_through_both_spellings(q):
    assert VOCAB.tokenize(VOCAB.to_massivekb(q)) == q
    assert VOCAB.tokenize(VOCAB.to_proforma(q)) == q
