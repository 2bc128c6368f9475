"""The reproduce pipeline on tiny settings: report structure, figure, checkpoint and resume."""

import json

import pytest
from fpt_snn import reproduce

from icml25_core import Verdict

TINY = reproduce.Settings(
    dwell=1,
    seeds=1,
    epochs=2,
    finetune_epochs=1,
    batch=256,
    eval_draws=2,
    fidelity_dwells=(1,),
    fidelity_digits=20,
    timing_dwells=(1, 2),
    timing_batches=1,
)


@pytest.mark.slow
def test_tiny_run_writes_report_and_resumes(tmp_path, monkeypatch):
    results = reproduce.collect(TINY, tmp_path)
    assert set(results) == {"bptt-d1-s0", "fpt-K3-d1-s0", "timing-d1", "timing-d2"}
    fid = results["fpt-K3-d1-s0"]["fidelity"]["8"]["mismatch"]
    assert fid["8"] == 0.0  # K = T is exact on real currents
    figures = reproduce.plot(results, TINY, tmp_path)
    assert (tmp_path / figures[0]).exists()
    report = reproduce.build_report(results, TINY, 1.0, figures)
    assert [c.claim[:2] for c in report.claims] == ["F1", "F2", "F3", "F4", "F5"]
    assert 0.0 <= results["fpt-K3-d1-s0"]["acc_finetuned_lif"] <= 100.0
    assert all(isinstance(c.verdict, Verdict) for c in report.claims)
    md, js = report.write(tmp_path)
    assert json.loads(js.read_text())["library"] == "fpt-snn"
    assert "Accuracy" in md.read_text()

    def fail(*args):
        raise AssertionError("a finished unit was recomputed")

    monkeypatch.setattr(reproduce, "train_unit", fail)
    monkeypatch.setattr(reproduce, "timing_unit", fail)
    assert reproduce.collect(TINY, tmp_path) == results


def test_pass_rules_are_the_spec_constants():
    assert reproduce.F1_K3_MAX == 0.05
    assert (reproduce.F2_REPRODUCED, reproduce.F2_PARTIAL) == (2.0, 4.0)
    assert reproduce.F3_MAX_LOSS == 2.0
    assert reproduce.F4_MIN_RATIO == 1.0
    assert (reproduce.F5_REPRODUCED, reproduce.F5_PARTIAL) == (2.0, 4.0)
    assert reproduce.FINETUNE_EPOCHS == 3


def test_finetune_branch_trains_exact_lif_on_the_same_batches(monkeypatch):
    # The F5 branch starts from the FPT net after epochs − finetune_epochs with its Adam state
    # and batch order, and trains with exact-LIF layers: recorded by a spy on _train_step.
    settings = reproduce.Settings(
        dwell=1, seeds=1, epochs=3, finetune_epochs=2, batch=1024, eval_draws=1,
        fidelity_dwells=(1,), fidelity_digits=5,
    )  # fmt: skip
    calls = []
    real_step = reproduce._train_step

    def spy(model, opt, xb, yb):
        calls.append((model.lif1.sample, xb.shape[1], float(xb.sum())))
        return real_step(model, opt, xb, yb)

    monkeypatch.setattr(reproduce, "_train_step", spy)
    reproduce.train_unit("fpt", 0, 1, 3, settings)
    fpt = [c for c in calls if c[0] == "bernoulli"]
    lif = [c for c in calls if c[0] == "lif"]
    assert len(fpt) == 3 * 2  # 1437 training digits: 2 batches an epoch
    assert len(lif) == 2 * 2
    assert lif == [("lif", n, pytest.approx(v)) for _, n, v in fpt[2:]]


def test_bad_seed_is_rejected(tmp_path):
    with pytest.raises(TypeError, match="`seed`"):
        reproduce.run(out=tmp_path, seed=0.5)
