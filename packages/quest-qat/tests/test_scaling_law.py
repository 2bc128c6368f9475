"""Spec test 12: the scaling-law refit on the official 104 runs, and on synthetic runs."""

import numpy as np
import pytest
from quest_qat import PAPER_SCALING_LAW, ScalingLaw, load_paper_runs
from quest_qat.scaling_law import _PAPER_EFF

PAPER_SSE = 0.0014769


@pytest.fixture(scope="module")
def refit():
    return ScalingLaw("quick").fit(load_paper_runs())


def test_paper_runs_are_labelled_as_the_notebook():
    runs = load_paper_runs()
    assert len(runs) == 104
    labels = [r["P"] for r in runs]
    assert labels.count("16") == 6
    assert labels.count("2.5") == 6
    assert labels.count("fp4") == 4
    assert sum(lab.endswith("NOH") for lab in labels) == 24
    assert sum(lab.endswith("WO") for lab in labels) == 16
    assert sum(lab in {"1", "2", "3", "4", "8"} for lab in labels) == 48


def test_refit_recovers_every_efficiency(refit):
    for label, eff in _PAPER_EFF.items():
        assert abs(refit.eff_[label] - eff) <= 2e-3, label


def test_refit_recovers_exponents_and_sse(refit):
    assert refit.alpha_ == pytest.approx(PAPER_SCALING_LAW.alpha_, rel=0.01)
    assert refit.beta_ == pytest.approx(PAPER_SCALING_LAW.beta_, rel=0.01)
    assert refit.sse_ <= 1.0005 * PAPER_SSE


def test_efficiency_per_bit_peaks_at_four(refit):
    per_bit = refit.efficiency_per_bit()
    per_bit.pop("16")
    assert max(per_bit, key=per_bit.get) == "4"


def test_paper_law_prediction():
    assert PAPER_SCALING_LAW.predict(30_482_560, 2_999_975_936, 16) == pytest.approx(
        3.20714, rel=1e-3
    )


def test_synthetic_runs_recover_known_constants():
    rng = np.random.default_rng(0)
    truth = dict(A=20.0, alpha=0.3, B=400.0, beta=0.28, E=1.7, eff={"16": 1.0, "4": 0.7, "2": 0.2})
    runs = []
    for n in (1e7, 3e7, 1e8, 3e8):
        for d in (1e9, 3e9, 1e10):
            for p, e in truth["eff"].items():
                loss = truth["A"] / (n * e) ** truth["alpha"] + truth["B"] / d ** truth["beta"]
                runs.append(
                    {"N": n, "D": d, "P": p, "L": (loss + truth["E"]) * np.exp(rng.normal(0, 1e-5))}
                )
    law = ScalingLaw(np.array([[3.0, 0.5, 6.0, 0.5, 0.0], [1.0, 0.2, 5.0, 0.2, 0.5]])).fit(runs)
    assert law.alpha_ == pytest.approx(0.3, rel=0.02)
    assert law.beta_ == pytest.approx(0.28, rel=0.02)
    assert law.eff_["4"] == pytest.approx(0.7, rel=0.02)
    assert law.eff_["2"] == pytest.approx(0.2, rel=0.02)
