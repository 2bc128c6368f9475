"""Spec tests 1-3: PMD / RMD hand values, metric properties, batched backends = reference."""

import numpy as np
import pytest
from ranknovo import mass
from ranknovo.mass import pack, pmd, pmd_batch, rmd, rmd_batch
from ranknovo.vocab import Vocab


def test_pmd_hand_values_match_spec():
    assert pmd("PEPTIDEK", "PEPTIDEK") == 0.0
    assert pmd("PEPTIDEK", "PEPTLDEK") == pytest.approx(0.0, abs=1e-12)  # I/L isobaric
    assert pmd("NGK", "GGGK") == pytest.approx(2.108854, abs=1e-6)
    assert pmd("AGK", "QK") == pytest.approx(2.108854, abs=1e-6)
    assert pmd("SAK", "ASK") == pytest.approx(0.622082, abs=1e-6)
    assert pmd("+42.011PEPTIDEK", "PEPTIDEK") == pytest.approx(1.0, abs=1e-12)
    assert pmd("", "PEPTIDEK") == 8.0


def test_rmd_hand_values_match_spec():
    np.testing.assert_allclose(rmd("ASK", "SAK"), [-0.311041, 0, 0], atol=1e-6)
    assert rmd("+42.011PEPTIDEK", "PEPTIDEK")[0] == pytest.approx(-1.070364, abs=1e-6)
    want = np.cumsum([97.05276, 129.04259, 97.05276, 128.09496]) / 51.4238
    np.testing.assert_allclose(rmd("PEPK", ""), want, atol=1e-5)


def test_pmd_symmetry_and_triangle_inequality_on_random_triples(vocab, make_peptides):
    rng = np.random.default_rng(1)
    peps = make_peptides(vocab, 3000, rng, max_len=12)
    q, ql = pack(peps[:1000])
    t, tl = pack(peps[1000:2000])
    u, ul = pack(peps[2000:])
    m = vocab.masses
    d_qt = pmd_batch(q, ql, t, tl, m, backend="numpy")
    d_tq = pmd_batch(t, tl, q, ql, m, backend="numpy")
    d_tu = pmd_batch(t, tl, u, ul, m, backend="numpy")
    d_qu = pmd_batch(q, ql, u, ul, m, backend="numpy")
    np.testing.assert_allclose(d_qt, d_tq, atol=1e-9, rtol=0)
    assert (d_qu <= d_qt + d_tu + 1e-9).all()


@pytest.fixture(scope="module")
def ref_pairs(vocab, make_peptides):
    """5000 random pairs plus edge cases (empty, length 1 and 100, -17.027, +43.006-17.027)
    with their Python-reference PMD / RMD."""
    n = 5000
    rng = np.random.default_rng(2)
    edges = [[], ["G"], ["A"] * 100, ["-17.027", "P", "E", "K"], ["+43.006-17.027", "K"]]
    peps = edges + make_peptides(vocab, 2 * n - 2 * len(edges), rng, max_len=30) + edges[::-1]
    q, ql = pack(peps[:n])
    t, tl = pack(peps[n:])
    assert (ql == 0).any()
    assert (ql == 1).any()
    assert (ql == 100).any()
    args = (q, ql, t, tl, vocab.masses)
    return args, pmd_batch(*args, backend="reference"), rmd_batch(*args, backend="reference")


def _check(ref_pairs, backend):
    args, ref_p, ref_r = ref_pairs
    np.testing.assert_allclose(pmd_batch(*args, backend=backend), ref_p, atol=1e-9, rtol=0)
    np.testing.assert_allclose(rmd_batch(*args, backend=backend), ref_r, atol=1e-9, rtol=0)


def test_numpy_batched_equals_reference_on_5000_pairs(ref_pairs):
    _check(ref_pairs, "numpy")


def test_native_batched_equals_reference_on_5000_pairs(ref_pairs):
    pytest.importorskip("ranknovo_kernels", reason="kernels/ranknovo not installed")
    _check(ref_pairs, "native")


def test_batched_matches_single_pair_functions(vocab):
    peps = ["PEPTIDEK", "+43.006-17.027NGK", "SAK", "C+57.021M+15.995K"]
    q, ql = pack(peps)
    t, tl = pack(peps[::-1])
    got = pmd_batch(q, ql, t, tl, vocab.masses, backend="numpy")
    want = [pmd(a, b) for a, b in zip(peps, peps[::-1], strict=True)]
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_auto_backend_falls_back_to_numpy_without_native(monkeypatch, vocab):
    monkeypatch.setattr(mass, "native_module", lambda: None)
    assert mass.resolve_backend("auto") == "numpy"
    with pytest.raises(RuntimeError, match="ranknovo-kernels"):
        mass.resolve_backend("native")
    q, ql = pack(["NGK"])
    t, tl = pack(["GGGK"])
    assert pmd_batch(q, ql, t, tl, vocab.masses)[0] == pytest.approx(2.108854, abs=1e-6)


def test_auto_backend_falls_back_when_import_fails(monkeypatch):
    import builtins

    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "ranknovo_kernels":
            raise ImportError("simulated absence")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    assert mass.resolve_backend("auto") == "numpy"


def test_legacy_nterm_mass_changes_only_that_token():
    new, old = Vocab.massivekb(), Vocab.massivekb(legacy_nterm_mass=True)
    i = new.index["+43.006-17.027"]
    assert old.masses[i] - new.masses[i] == pytest.approx(0.001, abs=1e-9)
    assert pmd("+43.006-17.027PEPK", "+43.006-17.027PEPK", vocab=old) == 0.0
    assert (np.delete(old.masses, i) == np.delete(new.masses, i)).all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(q_ids=np.zeros((2, 3), np.float64)), "q_ids"),
        (dict(q_ids=np.zeros(3, np.int64)), "q_ids"),
        (dict(q_len=np.array([5, 1])), "q_len"),
        (dict(t_len=np.array([1])), "t_len"),
        (dict(masses=np.array([np.nan] * 40)), "masses"),
        (dict(q_ids=np.full((2, 3), 99, np.int64)), "q_ids"),
        (dict(unit=0.0), "unit"),
        (dict(unit=float("nan")), "unit"),
    ],
)
def test_batched_bad_input_raises_naming_argument(vocab, kwargs, match):
    args = dict(
        q_ids=np.ones((2, 3), np.int64), q_len=np.array([3, 2]), t_ids=np.ones((2, 2), np.int64),
        t_len=np.array([2, 2]), masses=vocab.masses, unit=51.4238,
    )  # fmt: skip
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        pmd_batch(**args)
    with pytest.raises((ValueError, TypeError), match=match):
        rmd_batch(**args)


def test_batched_bad_backend_raises(vocab):
    q, ql = pack(["K"])
    with pytest.raises(ValueError, match="backend"):
        pmd_batch(q, ql, q, ql, vocab.masses, backend="gpu")


def test_single_pair_bad_input_raises():
    with pytest.raises(ValueError, match="X"):
        pmd("PEPX", "PEPK")
    with pytest.raises(ValueError, match="unit"):
        rmd("PEPK", "PEPK", unit=-1)
    with pytest.raises(TypeError, match="q"):
        pmd(3, "PEPK")


def test_empty_batch_returns_empty(vocab):
    z = np.zeros((0, 1), np.int64)
    e = np.zeros(0, np.int64)
    assert pmd_batch(z, e, z, e, vocab.masses, backend="numpy").shape == (0,)
