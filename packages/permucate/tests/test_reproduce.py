import json

import numpy as np
import pytest
from permucate import reproduce
from permucate.reproduce import METHODS, Settings

TINY = Settings(ns=(800,), seeds=3, n_permutations=2, ihdp_seeds=2, ihdp_loco_full_seeds=1)


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


@pytest.fixture
def fakes(monkeypatch):
    calls = []

    def hines(*args):
        calls.append(("hines", args[:2]))
        return fake_hines(*args)

    def ihdp(*args):
        calls.append(("ihdp", args[0]))
        return fake_ihdp(*args)

    monkeypatch.setattr(reproduce, "hines_unit", hines)
    monkeypatch.setattr(reproduce, "ihdp_unit", ihdp)
    return calls


def test_interrupted_run_resumes_without_redoing_finished_units(tmp_path, fakes, monkeypatch):
    original = reproduce.hines_unit

    def dies_on_seed_2(n, seed, settings):
        if seed == 2:
            raise KeyboardInterrupt
        return original(n, seed, settings)

    monkeypatch.setattr(reproduce, "hines_unit", dies_on_seed_2)
    with pytest.raises(KeyboardInterrupt):
        reproduce.collect(TINY, tmp_path, n_jobs=1)
    done_before = len(fakes)
    monkeypatch.setattr(reproduce, "hines_unit", original)
    results, reused = reproduce.collect(TINY, tmp_path, n_jobs=1)
    assert reused == 2
    redone = fakes[done_before:]
    assert ("hines", (800, 0)) not in redone
    assert ("hines", (800, 1)) not in redone
    assert ("hines", (800, 2)) in redone
    assert len(results) == TINY.seeds + TINY.ihdp_seeds
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
    # 0.9 / 0.8 clear the 0.85 / 0.75 rules.
    assert verdicts == ["not reproduced at this scale"] + ["reproduced"] * 5
    md, js = report.write(tmp_path)
    assert "LOCO-full tau risk" in md.read_text()
    assert "1 of 5 units were reused" in md.read_text()
    assert json.loads(js.read_text())["library"] == "permucate"


def test_other_settings_start_a_fresh_checkpoint(tmp_path, fakes):
    reproduce.collect(TINY, tmp_path, n_jobs=1)
    other = Settings(ns=(800,), seeds=2, n_permutations=2, ihdp_seeds=1)
    with pytest.warns(UserWarning, match="starting over"):
        reproduce.collect(other, tmp_path, n_jobs=1)
