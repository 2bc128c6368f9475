"""Spec tests 9-10: read_mgf (pyteomics) and preprocess (= spectrum_utils)."""

import numpy as np
import pytest
from ranknovo.data import CandidateSet, Spectrum, collate, preprocess, read_mgf


def test_read_mgf_real_file(real_spectra, vocab):
    assert len(real_spectra) == 128
    assert sum(s.charge == 2 for s in real_spectra) == 127
    lengths = [len(vocab.tokenize(s.peptide)) for s in real_spectra]
    assert min(lengths) == 6
    assert max(lengths) == 19
    for s in real_spectra:
        assert abs(s.precursor_mass - vocab.peptide_mass(s.peptide)) < 0.02


def test_read_mgf_pepmass_with_intensity_and_charge_float(tmp_path):
    f = tmp_path / "x.mgf"
    f.write_text(
        "BEGIN IONS\nTITLE=a\nPEPMASS=352.1888 836632.25 2+\n100 1\nEND IONS\n"
        "BEGIN IONS\nTITLE=b\nPEPMASS=352.1888\nCHARGE=1.0\n100 1\nEND IONS\n"
    )
    a, b = read_mgf(f)
    assert (a.precursor_mz, a.charge, b.charge) == (352.1888, 2, 1)


def test_read_mgf_errors_name_file_and_index(tmp_path):
    f = tmp_path / "bad.mgf"
    f.write_text(
        "BEGIN IONS\nPEPMASS=300\nCHARGE=2+\n100 1\nEND IONS\n"
        "BEGIN IONS\nPEPMASS=300\n100 1\nEND IONS\n"
    )
    with pytest.raises(ValueError, match=r"bad.mgf, spectrum 1: no CHARGE"):
        read_mgf(f)
    assert read_mgf(f, default_charge=3)[1].charge == 3
    f.write_text("BEGIN IONS\nPEPMASS=300\nCHARGE=2+\n100 nan\nEND IONS\n")
    with pytest.raises(ValueError, match=r"bad.mgf, spectrum 0: NaN"):
        read_mgf(f)
    with pytest.raises(FileNotFoundError, match="path"):
        read_mgf(tmp_path / "missing.mgf")


@pytest.mark.slow  # spectrum_utils compiles its numba kernels on first use (~20-40 s)
def test_preprocess_equals_spectrum_utils_on_128_spectra(real_spectra):
    sus = pytest.importorskip("spectrum_utils.spectrum")
    for s in real_spectra:
        ours = preprocess(s)
        ref = sus.MsmsSpectrum("x", s.precursor_mz, s.charge, s.mz.copy(), s.intensity.copy())
        ref.set_mz_range(50.5, 4500).remove_precursor_peak(2.0, "Da")
        ref.filter_intensity(0, 300).scale_intensity("root", 1)
        inten = ref.intensity / np.linalg.norm(ref.intensity)
        assert ours.shape == (len(ref.mz), 2)
        np.testing.assert_allclose(ours[:, 0], ref.mz, atol=1e-6 * ref.mz.max())
        np.testing.assert_allclose(ours[:, 1], inten, atol=1e-6)


def test_preprocess_top_k_and_empty():
    s = Spectrum(np.arange(100.0, 1100.0), np.arange(1.0, 1001.0), 2000.0, 2)
    assert preprocess(s, n_peaks=50).shape == (50, 2)
    empty = Spectrum(np.array([10.0]), np.array([1.0]), 500.0, 2)
    np.testing.assert_array_equal(preprocess(empty), [[0.0, 1.0]])


def test_preprocess_bad_input():
    s = Spectrum(np.array([100.0, np.nan]), np.array([1.0, 1.0]), 500.0, 2)
    with pytest.raises(ValueError, match=r"spec\.mz"):
        preprocess(s)
    with pytest.raises(TypeError, match="spec"):
        preprocess([1, 2])
    ok = Spectrum(np.array([100.0]), np.array([1.0]), 500.0, 2)
    with pytest.raises(ValueError, match="n_peaks"):
        preprocess(ok, n_peaks=0)


def test_candidate_set_labels_and_collate(real_spectra, vocab):
    s = real_spectra[:3]
    ds = CandidateSet(
        [preprocess(x) for x in s], [[x.precursor_mz, x.charge] for x in s],
        [[x.peptide, "PEPTIDEK"] for x in s], truths=[x.peptide for x in s],
    )  # fmt: skip
    b = collate([ds[i] for i in range(3)])
    assert b["tokens"].shape[:2] == (3, 2)
    assert b["tokens"].dtype.is_floating_point is False
    assert b["pmd"][:, 0].abs().max() < 1e-6
    assert (b["pmd"][:, 1] > 0).all()
    assert b["rmd_mask"][:, :, 0].any().item() is False
    with pytest.raises(ValueError, match="empty"):
        CandidateSet([preprocess(s[0])], [[s[0].precursor_mz, 2]], [[]])
    with pytest.raises(ValueError, match="precursors"):
        CandidateSet([preprocess(s[0])], [[s[0].precursor_mz, 0]], [["PEPK"]])
    with pytest.raises(ValueError, match="max_len"):
        CandidateSet([preprocess(s[0])], [[500.0, 2]], [["A" * 30]], max_len=20)
