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


def test_corpus_without_speech_extra_names_the_extra(capsys, monkeypatch, tmp_path):
    # trial 23 M4: a raw ModuleNotFoundError traceback for num2words
    from monoattn_transducer.data import spoken_numbers

    def missing(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'num2words'", name="num2words")

    monkeypatch.setattr(spoken_numbers, "build_corpus", missing)
    assert main(["corpus", "--cache", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "num2words" in err
    assert "[speech]" in err


def test_ctrl_c_exits_130_with_a_resume_hint(capsys, monkeypatch, tmp_path):
    # trial 23 L7: Ctrl-C printed a KeyboardInterrupt traceback
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(reproduce, "main", interrupted)
    assert main(["reproduce", "--out", str(tmp_path)]) == 130
    assert "resume" in capsys.readouterr().err


def test_help_does_not_call_the_tts_corpus_real_speech():
    # trial 23 L8
    from monoattn_transducer import cli

    assert "real speech" not in (cli.__doc__ or "")
    assert "real speech" not in (reproduce.__doc__ or "")


def test_reproduce_store_config_names_the_seeded_corpus():
    # results of the clock-seeded corpus (version 1) are not resumed into a new run
    import inspect

    assert '"version": 2' in inspect.getsource(reproduce.run)


def test_reproduce_training_is_deterministic():
    # trial 23 L9: given the corpus, a rerun trains the same model (seeded init, dropout, batches)
    rng = np.random.default_rng(0)
    n = 12
    data = {
        "feats": [rng.standard_normal((int(rng.integers(20, 40)), 80)).astype(np.float32)
                  for _ in range(n)],
        "targets": [[int(rng.integers(1, 10))] for _ in range(n)],
    }  # fmt: skip
    cfg = {**reproduce.QUICK, "steps": 3, "batch": 4, "d_model": 16, "enc_layers": 1}
    runs = [reproduce._train("monoattn", data, np.arange(n), cfg, 0, 1)[1] for _ in range(2)]
    assert runs[0] == runs[1]
