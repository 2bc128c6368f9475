"""The console script's own commands and the reproduce's statistics helpers. Help, version and
usage errors are checked by the shared contract (icml25_core.testing)."""

import numpy as np
import pytest
from monoattn_transducer import reproduce
from monoattn_transducer.cli import main


def test_reproduce_subsets_match_the_spec():
    m = reproduce._subset_masks(np.arange(1, 100))
    assert m["non-monotonic"].sum() == 72
    assert m["monotonic"].sum() == 27  # 1-20 and the tens 30-90 (100 is out of range)


def test_bootstrap_ci_covers_the_known_difference():
    rng = np.random.default_rng(0)
    a = (rng.random(2000) < 0.3).astype(float)
    b = (rng.random(2000) < 0.5).astype(float)
    lo, hi = reproduce._bootstrap_gain(a, b)
    assert lo < 20 < hi  # the true gain is 20 points


def test_pass_rules_are_the_specs():
    assert reproduce.C1_GAIN_POINTS == 10.0
    assert reproduce.C1_CI_LEVEL == 0.95
    assert reproduce.C2_MIN_GAIN_POINTS == -3.0
    assert reproduce.C3_MAX_AL_DIFF_MS == 160.0


@pytest.mark.parametrize("argv", [["reproduce", "--seed", "-1"], ["bench", "--repeats", "0"]])
def test_bad_arguments_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2


def test_bench_command_prints_ratios(capsys, monkeypatch):
    from monoattn_transducer import bench

    monkeypatch.setattr(bench, "bench_cpu", lambda repeats: ["ratio ok"])
    assert main(["bench", "--repeats", "1"]) == 0
    assert "ratio ok" in capsys.readouterr().out
