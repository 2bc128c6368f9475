"""The reproduce: real input as specified, and verdicts that follow the fixed pass rules."""

import math

import numpy as np
import pytest
from fsl_sage import History, reproduce

from icml25_core import Report, Verdict


def test_reproduce_input_is_real_fashion_mnist_split():
    cfg = reproduce.QUICK
    partitions, (x_test, _) = reproduce._data(cfg)
    assert len(partitions) == 5
    assert all(x.shape == (1200, 1, 28, 28) for x, _ in partitions)
    assert x_test.shape == (2000, 1, 28, 28)
    labels = np.concatenate([y.numpy() for _, y in partitions])
    assert set(np.unique(labels)) == set(range(10))


def _history(accs, step=100, align=None):
    records = []
    for t, a in enumerate(accs):
        records.append(
            {"round": t, "accuracy": a, "official_bytes": step * (t + 1), "align": align or []}
        )
    return History(records)


def _judge(sage, cse, sf2, align_ratio=0.1):
    align = [{"client": 0, "nmse_before": 1.0, "nmse_after": align_ratio, "nmse_random": 1.0}]
    hist = {
        "fsl_sage": _history(sage, 10, align),
        "cse_fsl": _history(cse, 10),
        "splitfed_v1": _history(sf2, 100),
        "splitfed_v2": _history(sf2, 100),
        "fedavg": _history(sf2, 50),
    }
    report = Report(library="fsl-sage", title="t")
    reproduce._judge(report, hist, {"rounds": len(sage)})
    return report.claims


def test_verdicts_pass_when_rules_hold():
    claims = _judge([0.5, 0.81, 0.85], [0.5, 0.6, 0.81], [0.81, 0.85, 0.86])
    assert [c.verdict for c in claims] == [Verdict.REPRODUCED] * 3


def test_verdicts_fail_with_reason_when_fsl_sage_never_reaches_target():
    claims = _judge([0.5, 0.6, 0.7], [0.5, 0.6, 0.81], [0.81, 0.85, 0.86], align_ratio=0.3)
    assert claims[0].verdict == Verdict.NOT_REPRODUCED  # 0.3 > 0.2
    assert claims[1].verdict == Verdict.NOT_REPRODUCED
    assert "never reached 80 %" in claims[1].note
    assert claims[2].verdict == Verdict.NOT_REPRODUCED  # 70 vs 86: gap -16 pt


def test_bytes_to_accuracy_is_inf_when_never_reached():
    assert math.isinf(_history([0.1, 0.2]).bytes_to_accuracy(0.8))
    assert _history([0.1, 0.9]).bytes_to_accuracy(0.8) == pytest.approx(200)
