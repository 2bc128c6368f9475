"""Spec test 11: noise-free b/y m/z = pyteomics fast_mass; precursor-consistent errors keep the
mass within 0.05 Da; the simulator's calibration targets."""

import numpy as np
import pytest
from pyteomics import mass as pm
from ranknovo.metrics import aa_match
from ranknovo.simulate import (
    ERROR_KINDS,
    BaseModelSimulator,
    ErrorModel,
    digest_fasta,
    fragment_mz,
    synthetic_spectrum,
)


@pytest.mark.parametrize("pep", ["PEPTIDEK", "SAMPLERK", "GGNQDEHWYK"])
def test_noise_free_by_ions_equal_pyteomics(vocab, pep):
    b, y = fragment_mz(list(pep), vocab)
    want_b = [pm.fast_mass(pep[:i], ion_type="b", charge=1) for i in range(1, len(pep))]
    want_y = [pm.fast_mass(pep[-i:], ion_type="y", charge=1) for i in range(1, len(pep))]
    np.testing.assert_allclose(b, want_b, atol=1e-6)
    np.testing.assert_allclose(y, want_y, atol=1e-6)
    s = synthetic_spectrum(pep, 2, vocab, 0, dropout=0.0, noise_peaks=(0, 0), mz_noise=0.0)
    np.testing.assert_allclose(np.sort(s.mz), np.sort(np.r_[want_b, want_y]), atol=1e-6)
    assert s.precursor_mz == pytest.approx(pm.fast_mass(pep, charge=2), abs=1e-6)


@pytest.mark.parametrize("kind", [k for k in ERROR_KINDS if k != "random"])
def test_precursor_consistent_errors_keep_mass_and_are_wrong(vocab, real_spectra, kind):
    em = ErrorModel({kind: 1.0}, vocab)
    rng = np.random.default_rng(3)
    applied = 0
    for s in real_spectra:
        toks = vocab.tokenize(s.peptide)
        out = em._apply(toks, kind, rng)
        if out is None or aa_match(out, toks, vocab)[1]:
            continue
        applied += 1
        assert abs(vocab.peptide_mass(out) - vocab.peptide_mass(toks)) < 0.05
    assert applied > 0


def test_simulator_candidates_and_correlation(vocab, real_spectra):
    sim = BaseModelSimulator(vocab=vocab)
    rng = np.random.default_rng(0)
    oks = []
    for s in real_spectra[:64]:
        cands, ok = sim.candidates(s.peptide, s.charge, rng)
        assert len(cands) == 6
        for c, k in zip(cands, ok, strict=True):
            assert aa_match(c, s.peptide, vocab)[1] == bool(k)
        oks.append(ok)
    oks = np.array(oks)
    # shared difficulty: successes of two models are positively correlated
    assert np.corrcoef(oks[:, 0], oks[:, 1])[0, 1] > 0


def test_digest_fasta_tryptic(tmp_path):
    f = tmp_path / "x.fasta"
    f.write_text(">p\nMAAAAAKGGGGGGRPCCCCCCKXAAAAAAK\n")
    peps = digest_fasta(f, min_len=6)
    assert "GGGGGGRPC+57.021C+57.021C+57.021C+57.021C+57.021C+57.021K" in peps  # no cut before P
    assert "MAAAAAK" in peps
    assert all("X" not in p for p in peps)
    with pytest.raises(FileNotFoundError):
        digest_fasta(tmp_path / "none.fasta")


def test_simulate_bad_input(vocab):
    with pytest.raises(ValueError, match="weights"):
        ErrorModel({"teleport": 1.0}, vocab)
    with pytest.raises(ValueError, match="weights"):
        ErrorModel({"random": 0.0}, vocab)
    with pytest.raises(ValueError, match="charge"):
        synthetic_spectrum("PEPK", 0, vocab)
    with pytest.raises(ValueError, match="empty"):
        ErrorModel({"random": 1.0}, vocab).corrupt([])
    with pytest.raises(ValueError, match="models"):
        BaseModelSimulator(models=[])
