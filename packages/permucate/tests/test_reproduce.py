import json

import numpy as np
import pytest
from permucate import reproduce
from permucate.reproduce import METHODS, Settings

TINY = Settings(
    ns=(800,),
    seeds=3,
    n_permutations=2,
    ihdp_seeds=2,
    ihdp_loco_full_seeds=1,
    calibration_seeds=4,
    calibration_repeats=2,
)


def fake_hines(n, seed, settings):
    psi = np.array([0.75, 3.0, 0.75, 0.0, 0.0, 0.0])
    return {
        m: {"importance": psi + 0.1 * seed * (i + 1), "pvalue": np.where(psi > 0, 0.01, 0.5)}
        for i, m in enumerate(METHODS)
    }


def fake_ihdp(seed, settings, with_loco_full):
    out = {"PermuCATE-tau": 0.9, "PermuCATE-dr": 0.8}
    if with_loco_full:
        out["LOCO-full-tau"] = 0.7
    return out


def fake_calibration(seed, settings):
    """One null rejection in 12 tests with one split (8%), none with repeats."""
    single = np.array([0.01, 0.01, 0.01, 0.5, 0.5, 0.01 if seed == 0 else 0.5])
    return {"single": single, "repeated": np.where(np.arange(6) < 3, 0.01, 0.5)}


@pytest.fixture
def fakes(monkeypatch):
    calls = []

    def hines(*args):
        calls.append(("hines", args[:2]))
        return fake_hines(*args)

    def ihdp(*args):
        calls.append(("ihdp", args[0]))
        return fake_ihdp(*args)

    def calibration(*args):
        calls.append(("calibration", args[0]))
        return fake_calibration(*args)

    monkeypatch.setitem(reproduce.UNITS, "hines", hines)
    monkeypatch.setitem(reproduce.UNITS, "ihdp", ihdp)
    monkeypatch.setitem(reproduce.UNITS, "calibration", calibration)
    return calls


def test_interrupted_run_resumes_without_redoing_finished_units(tmp_path, fakes, monkeypatch):
    original = reproduce.UNITS["hines"]

    def dies_on_seed_2(n, seed, settings):
        if seed == 2:
            raise KeyboardInterrupt
        return original(n, seed, settings)

    monkeypatch.setitem(reproduce.UNITS, "hines", dies_on_seed_2)
    with pytest.raises(KeyboardInterrupt):
        reproduce.collect(TINY, tmp_path, n_jobs=1)
    done_before = len(fakes)
    monkeypatch.setitem(reproduce.UNITS, "hines", original)
    results, reused = reproduce.collect(TINY, tmp_path, n_jobs=1)
    assert reused == TINY.ihdp_seeds + 2  # the IHDP units run first, then Hines seeds 0 and 1
    redone = fakes[done_before:]
    assert ("hines", (800, 0)) not in redone
    assert ("hines", (800, 1)) not in redone
    assert ("hines", (800, 2)) in redone
    assert len(results) == TINY.seeds + TINY.ihdp_seeds + TINY.calibration_seeds
    # A third run computes nothing.
    count = len(fakes)
    reproduce.collect(TINY, tmp_path, n_jobs=1)
    assert len(fakes) == count


def test_report_applies_the_written_thresholds(tmp_path, fakes):
    results, _ = reproduce.collect(TINY, tmp_path, n_jobs=1)
    report = reproduce.build_report(results, TINY, runtime_s=1.0, figures=[], reused=1)
    verdicts = [c.verdict.value for c in report.claims]
    # Fake p-values: every method rejects the signals -> no power gap: the power claim fails.
    # LOCO's spread is 4x PermuCATE's, nulls are never rejected, the bias is 0.1 and the AUCs
    # 0.9 / 0.8 clear the 0.85 / 0.75 rules. Calibration over 3·4 null tests: bound
    # .05 + 2·sqrt(.05·.95/12) = .176; one split rejects 1/12 = .083 (passes), repeats 0.
    assert verdicts == ["not reproduced at this scale"] + ["reproduced"] * 7
    md, js = report.write(tmp_path)
    assert "LOCO-full tau risk" in md.read_text()
    assert "1 of 9 units were reused" in md.read_text()
    assert "rejection rate 0.083 (x4, x5, x6 = 0.00, 0.00, 0.25" in md.read_text()
    assert json.loads(js.read_text())["library"] == "permucate"


def test_other_settings_start_a_fresh_checkpoint(tmp_path, fakes):
    reproduce.collect(TINY, tmp_path, n_jobs=1)
    other = Settings(ns=(800,), seeds=2, n_permutations=2, ihdp_seeds=1)
    with pytest.warns(UserWarning, match="starting over"):
        reproduce.collect(other, tmp_path, n_jobs=1)


def test_a_miscalibrated_repeated_test_is_reported_as_failed(tmp_path, fakes, monkeypatch):
    """Null rejections above 5% + 2 s.e. fail the calibration claim (threshold not moved)."""
    monkeypatch.setitem(
        reproduce.UNITS, "calibration", lambda seed, settings: {"single": np.full(6, 0.5),
                                                                "repeated": np.full(6, 0.01)}
    )  # fmt: skip
    results, _ = reproduce.collect(TINY, tmp_path, n_jobs=1)
    report = reproduce.build_report(results, TINY, runtime_s=1.0, figures=[])
    single, repeated = (c.verdict.value for c in report.claims[-2:])
    assert (single, repeated) == ("reproduced", "not reproduced at this scale")
