"""Bad input found by new-user trial 19: each case raises the right exception type naming the
argument (or, for float16 spectra, gives the float32 result)."""

import math

import numpy as np
import pytest
import torch
from ranknovo import CandidateSet, RankNovo, collate, evaluate, pmd, read_mgf, rmd
from ranknovo.data import encode_candidates

TINY = dict(dim=32, heads=2, ff=64, enc_layers=1, dec_layers=1)
PEAKS = np.array([[100.0, 1.0], [200.0, 0.5]], np.float32)  # exact in float16


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return RankNovo(**TINY).eval()


@pytest.fixture(scope="module")
def batch():
    ds = CandidateSet([PEAKS], [[500.0, 2]], [["PEPTIDEK", "PEPTIDER"]])
    return collate([ds[0]])


# ---- H1: float16 spectra must not round the precursor mass ---------------------------------
def test_float16_spectra_score_as_float32(model, batch):
    s, p, t = batch["spectra"], batch["precursors"], batch["tokens"]
    assert torch.equal(s.half().float(), s)
    assert float(p[0, 0]) != float(p[0, 0].half())  # 998.0145 Da is not exact in float16
    want = model.rerank(s, p, t)[1]
    for dtype in (torch.float16, torch.bfloat16, torch.float64):
        torch.testing.assert_close(model.rerank(s.to(dtype), p, t)[1], want, atol=0, rtol=0)


def test_half_precision_precursors_are_rejected(model, batch):
    s, p, t = batch["spectra"], batch["precursors"], batch["tokens"]
    with pytest.raises(ValueError, match=r"`precursors`.*float32 or float64"):
        model.rerank(s, p.half(), t)


# ---- M1: charges ---------------------------------------------------------------------------
@pytest.mark.parametrize("z", [0, 2.5, 11])
def test_candidate_set_rejects_bad_charges(z):
    with pytest.raises(ValueError, match=r"`precursors\[0\]`: charge .* integer in \[1, max_c"):
        CandidateSet([PEAKS], [[500.0, z]], [["PEPTIDEK"]])


def test_candidate_set_max_charge_and_positive_mz():
    CandidateSet([PEAKS], [[500.0, 12]], [["PEPTIDEK"]], max_charge=12)
    with pytest.raises(ValueError, match=r"`precursors\[1\]`: precursor m/z"):
        CandidateSet([PEAKS, PEAKS], [[500.0, 2], [-500.0, 2]], [["K"], ["K"]])


def test_model_names_fractional_charge_as_not_integer(model, batch):
    p = batch["precursors"].clone()
    p[0, 1] = 2.5
    with pytest.raises(ValueError, match=r"`precursors` charge 2\.5 must be an integer"):
        model.rerank(batch["spectra"], p, batch["tokens"])


# ---- M2 / L5: a str or None where a list of peptides is expected ---------------------------
def test_str_instead_of_list_of_candidates():
    with pytest.raises(TypeError, match=r"`candidates\[i\]`.*str 'PEPTIDEK'.*`candidates\[0\]`"):
        CandidateSet([PEAKS], [[500.0, 2]], ["PEPTIDEK"])
    with pytest.raises(TypeError, match="`candidates` must be a list"):
        CandidateSet([PEAKS], [[500.0, 2]], "K")
    with pytest.raises(TypeError, match="`truths` must be a list"):
        CandidateSet([PEAKS], [[500.0, 2]], [["K"]], truths="K")
    from ranknovo import Vocab

    with pytest.raises(TypeError, match="`candidates` must be a list of peptides"):
        encode_candidates("PEPTIDEK", Vocab.massivekb())


def test_none_truth_is_a_type_error():
    with pytest.raises(TypeError, match=r"`truths\[0\]`.*NoneType"):
        CandidateSet([PEAKS], [[500.0, 2]], [["PEPTIDEK"]], truths=[None])


def test_evaluate_rejects_str_and_none_truths():
    for kw in (dict(preds="PEPTIDEK", trues=["PEPTIDEK"]), dict(preds=["K"], trues="K")):
        name = "preds" if isinstance(kw["preds"], str) else "trues"
        with pytest.raises(TypeError, match=f"`{name}` must be a list"):
            evaluate(**kw)
    with pytest.raises(TypeError, match=r"`trues\[0\]` is None"):
        evaluate(preds=["PEPTIDEK"], trues=[None])
    assert evaluate(preds=[None], trues=["PEPTIDEK"])["peptide_recall"] == 0.0  # no prediction


# ---- M3 / L2: MGF errors name file and spectrum --------------------------------------------
@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("BEGIN IONS\nPEPMASS=500\nCHARGE=2+\n100 1\n", "no END IONS"),
        ("BEGIN IONS\nPEPMASS=nan\nCHARGE=2+\n100 1\nEND IONS\n", "PEPMASS nan"),
        ("BEGIN IONS\nPEPMASS=-500\nCHARGE=2+\n100 1\nEND IONS\n", "PEPMASS -500"),
        ("BEGIN IONS\nPEPMASS=500\nCHARGE=2+ and 3+\n100 1\nEND IONS\n", "several charges"),
    ],
)
def test_read_mgf_bad_records(tmp_path, body, message):
    f = tmp_path / "bad.mgf"
    ok = "BEGIN IONS\nPEPMASS=300\nCHARGE=2+\n100 1\nEND IONS\n"
    f.write_text(ok + body)
    with pytest.raises(ValueError, match=f"bad.mgf, spectrum 1: {message}"):
        read_mgf(f)


def test_read_mgf_garbage_text_is_an_error_empty_file_is_not(tmp_path):
    f = tmp_path / "g.mgf"
    f.write_text("hello world\n")
    with pytest.raises(ValueError, match=r"`path`: g.mgf holds no BEGIN IONS"):
        read_mgf(f)
    f.write_text("\n")
    assert read_mgf(f) == []


# ---- M4: loading a file that is not a model ------------------------------------------------
def test_load_non_model_file_is_a_value_error(tmp_path, model):
    f = tmp_path / "c.tsv"
    f.write_text("spectrum\tmodel\tpeptide\n0\tx\tPEPTIDEK\n")
    with pytest.raises(ValueError, match=r"`path`: .*c.tsv.* is not a ranknovo model file"):
        RankNovo.load(f)
    torch.save({"config": {"dim": 32, "heads": 2}, "state_dict": {}}, tmp_path / "e.pt")
    with pytest.raises(ValueError, match=r"`path`: .*e.pt.* is not a ranknovo model file"):
        RankNovo.load(tmp_path / "e.pt")


# ---- L3 / L4: unit and max_len checked up front ---------------------------------------------
def test_unit_must_be_positive_and_finite():
    for bad in (math.inf, -1.0, 0.0):
        with pytest.raises(ValueError, match="`unit`"):
            pmd("PEPTIDEK", "PEPTLDEK", unit=bad)
        with pytest.raises(ValueError, match="`unit`"):
            rmd("PEPTIDEK", "PEPTLDEK", unit=bad)
        with pytest.raises(ValueError, match="`unit`"):
            CandidateSet([PEAKS], [[500.0, 2]], [["K"]], truths=["K"], unit=bad)
    with pytest.raises(ValueError, match="`max_len`"):
        CandidateSet([PEAKS], [[500.0, 2]], [["K"]], max_len=0)


def test_empty_peptides_follow_the_documented_convention():
    assert pmd("", "PEPK") == 4.0
    np.testing.assert_allclose(rmd("K", ""), [128.09496 / 51.4238], atol=1e-6)
    assert pmd("PEPTIDEK ", "PEPTIDEK") == 0.0  # surrounding whitespace is ignored


# ---- L6: isotope_errors ----------------------------------------------------------------------
def test_isotope_errors_checked(model, batch):
    s, p, t = batch["spectra"], batch["precursors"], batch["tokens"]
    with pytest.raises(TypeError, match="`isotope_errors` must be a tuple"):
        model.rerank(s, p, t, precursor_tol_ppm=20, isotope_errors=None)
    with pytest.raises(TypeError, match="`isotope_errors` must hold ints"):
        model.rerank(s, p, t, precursor_tol_ppm=20, isotope_errors=(0.5,))
    with pytest.raises(ValueError, match="`isotope_errors` is empty"):
        model.rerank(s, p, t, precursor_tol_ppm=20, isotope_errors=())
    best, _ = model.rerank(s, p, t, precursor_tol_ppm=20, isotope_errors=[0, 1, 2])
    assert best.shape == (1,)


# ---- L7: NaN scores are not silently argmin'ed -----------------------------------------------
def test_nan_scores_raise(model, batch):
    s = batch["spectra"].clone()
    s[..., 1] *= 1e30
    with pytest.raises(FloatingPointError, match="`spectra` preprocessed"):
        model.rerank(s, batch["precursors"], batch["tokens"])
