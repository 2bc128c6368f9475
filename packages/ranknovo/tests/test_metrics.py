"""Spec test 5: aa_match equals casanovo 5.2.1's denovo/evaluate.py (installed --no-deps, loaded
by file path because `import casanovo.denovo` needs lightning), plus the hand values."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from ranknovo.metrics import aa_match, evaluate
from ranknovo.simulate import BaseModelSimulator


@pytest.fixture(scope="module")
def casanovo_eval():
    spec = importlib.util.find_spec("casanovo")
    if spec is None or spec.origin is None:
        pytest.skip("casanovo 5.2.1 is not installed (nox installs it --no-deps)")
    path = Path(spec.origin).parent / "denovo" / "evaluate.py"
    mod_spec = importlib.util.spec_from_file_location("casanovo_evaluate", path)
    assert mod_spec is not None
    assert mod_spec.loader is not None
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    return mod


def test_aa_match_equals_casanovo_on_500_simulated_pairs(vocab, real_spectra, casanovo_eval):
    sim = BaseModelSimulator(vocab=vocab)
    rng = np.random.default_rng(5)
    preds, trues = [], []
    while len(preds) < 500:
        s = real_spectra[len(preds) % len(real_spectra)]
        cands, _ = sim.candidates(s.peptide, s.charge, rng)
        preds.append(cands[int(rng.integers(len(cands)))])
        trues.append(vocab.tokenize(s.peptide))
    md = vocab.mass_dict()
    for mode in ("best", "forward", "backward"):
        theirs, _n1, _n2 = casanovo_eval.aa_match_batch(preds, trues, md, 0.5, 0.1, mode)
        for (tm, tp), p, t in zip(theirs, preds, trues, strict=True):
            mm, mp = aa_match(p, t, vocab, mode=mode)
            np.testing.assert_array_equal(mm, tm)
            assert mp == bool(tp)
    theirs, n_pred, n_true = casanovo_eval.aa_match_batch(preds, trues, md)
    prec, rec, pep = casanovo_eval.aa_match_metrics(theirs, n_aa_true=n_true, n_aa_pred=n_pred)
    ours = evaluate(preds=preds, trues=trues, vocab=vocab)
    assert ours["aa_precision"] == pytest.approx(prec, abs=1e-7)
    assert ours["aa_recall"] == pytest.approx(rec, abs=1e-7)
    assert ours["peptide_recall"] == pytest.approx(pep, abs=1e-7)
    # the official evaluation's argument swap (DECISIONS 7): n_true and n_pred exchanged
    o_prec, o_rec, _ = casanovo_eval.aa_match_metrics(theirs, n_pred, n_true)
    off = evaluate(preds=preds, trues=trues, vocab=vocab, compat="official")
    assert off["aa_precision"] == pytest.approx(o_prec, abs=1e-7)
    assert off["aa_recall"] == pytest.approx(o_rec, abs=1e-7)


def test_hand_value_precision_and_recall(vocab):
    res = evaluate(preds=["AAGGKR"], trues=["AANKR"], vocab=vocab)
    assert res["aa_precision"] == pytest.approx(4 / 6)
    assert res["aa_recall"] == pytest.approx(4 / 5)
    assert res["peptide_recall"] == 0.0
    off = evaluate(preds=["AAGGKR"], trues=["AANKR"], vocab=vocab, compat="official")
    assert off["aa_precision"] == pytest.approx(4 / 5)


def test_isobaric_and_nterm_tokens(vocab):
    assert aa_match("PEPTLDEK", "PEPTIDEK", vocab)[1]
    m, ok = aa_match("+42.011PEPK", "PEPK", vocab)
    assert not ok
    assert m.size == 5
    m, ok = aa_match(None, "PEPK", vocab)
    assert not ok
    assert not m.any()


def test_metrics_bad_input(vocab):
    with pytest.raises(ValueError, match="preds"):
        evaluate(preds=["PEPK"], trues=["PEPK", "K"], vocab=vocab)
    with pytest.raises(ValueError, match="trues"):
        evaluate(preds=[], trues=[], vocab=vocab)
    with pytest.raises(ValueError, match="mode"):
        aa_match("K", "K", vocab, mode="sideways")
    with pytest.raises(ValueError, match="cum_tol"):
        aa_match("K", "K", vocab, cum_tol=-1)
    with pytest.raises(ValueError, match="compat"):
        evaluate(preds=["K"], trues=["K"], compat="x")
    with pytest.raises(ValueError, match="unknown token"):
        aa_match("PEPX", "K", vocab)
