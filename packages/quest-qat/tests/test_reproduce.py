"""The reproduction pipeline end to end on a tiny budget, and its resume from stored runs."""

import json

import numpy as np
import pytest
from quest_qat import reproduce
from quest_qat.cli import main
from quest_qat.data import load_fortunes, split_bytes


def test_fortunes_corpus_as_specified():
    text = load_fortunes()
    assert len(text) == 2_546_284
    assert len(set(text)) == 114
    train, val = split_bytes(text)
    counts = np.bincount(train, minlength=256).astype(float)
    p = counts / counts.sum()
    vc = np.bincount(val, minlength=256)
    unigram = -(vc * np.log(np.where(p > 0, p, 1e-12))).sum() / vc.sum()
    assert unigram == pytest.approx(3.356, abs=1e-3)


@pytest.mark.slow
def test_reproduce_writes_report_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setattr(reproduce, "QUICK", dict(steps=3, seeds=(0,), batch=4, seq=32, lr=3e-3))
    data = tmp_path / "text.txt"
    data.write_bytes(load_fortunes()[:200_000])
    out = tmp_path / "reports"
    assert main(["reproduce", "--out", str(out), "--data", str(data)]) == 0
    first = json.loads((out / "quest-qat.json").read_text())
    assert len(first["claims"]) == 7
    assert all(c["verdict"] for c in first["claims"])
    stored = (out / ".checkpoints" / "quest-qat" / "runs.jsonl").read_text().splitlines()
    assert len(stored) == 1 + 5  # config line + five runs

    def no_training(*args, **kwargs):
        raise AssertionError("a stored run was trained again")

    monkeypatch.setattr(reproduce, "train", no_training)
    second = reproduce.run(data=data, out=out)
    assert [c.measured_value for c in second.claims[:3]] == [
        c["measured_value"] for c in first["claims"][:3]
    ]
