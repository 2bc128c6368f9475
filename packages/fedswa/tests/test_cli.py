"""The console script's own commands: `run`, `bench`'s functions, `reproduce` on a tiny setting
(the shared contract checks help, version and usage errors)."""

import dataclasses
import re

import pytest
from fedswa import reproduce
from fedswa.cli import main


def test_reproduce_help_lists_the_engine(run_main):
    result = run_main(main, "reproduce", "--help")
    assert result.code == 0
    assert "--engine" in result.out


def test_run_prints_accuracy_per_round(capsys):
    argv = ["run", "--alg", "fedmoswa", "--data", "digits", "--clients", "4", "--per-round", "2"]
    main([*argv, "--rounds", "2", "--local-steps", "5"])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("round")]
    assert len(lines) == 2
    assert "test acc" in lines[-1]


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["run", "--alg", "fedprox"], "invalid choice"),
        (["run", "--data", "cifar"], "invalid choice"),
        (["reproduce", "--engine", "ray"], "invalid choice"),
    ],
)
def test_cli_rejects_bad_choices(argv, match, run_main):
    assert match in run_main(main, *argv).usage_error()


def test_bench_functions_report_ratios():
    from fedswa.bench import bench_local_step, resnet18_shapes

    assert len(resnet18_shapes()) == 62
    rows = bench_local_step(repeats=1)
    assert {r["case"] for r in rows} == {"ResNet-18 (62 tensors)", "MLP 784-200-10"}
    assert all(r["ratio"] > 0 for r in rows)


TINY = dataclasses.replace(
    reproduce.QUICK, num_clients=4, client_size=60, clients_per_round=2, rounds=2,
    local_steps=3, seeds=(0,), hessian_images=20, quad_rounds=5,
)  # fmt: skip


def test_run_unit_on_real_fashion_mnist():
    out = reproduce.run_unit(TINY, "fedmoswa", 2.0, 0)
    assert len(out["test_acc"]) == 2
    assert all(0.0 <= a <= 1.0 for a in out["test_acc"])
    assert out["lambda_max"] > 0


@pytest.mark.slow
def test_reproduce_writes_the_report_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setattr(reproduce, "QUICK", TINY)
    md, js = reproduce.main(tmp_path)
    text = md.read_text()
    assert "FedSWA and FedMoSWA generalise" in text
    assert "Drift-correction quadratic" in text
    assert js.exists()
    report = reproduce.run(out_dir=tmp_path)  # everything comes from the checkpoint
    assert report.setup["reused_runs"] == 10


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["run", "--clients", "0"], "--clients"),
        (["run", "--per-round", "50"], "--per-round"),
        (["run", "--rounds", "0"], "--rounds"),
        (["run", "--local-steps", "-1"], "--local-steps"),
        (["run", "--batch-size", "0"], "--batch-size"),
        (["run", "--eta0", "nan"], "--eta0"),
        (["run", "--eta0", "-1"], "--eta0"),
        (["run", "--dirichlet-alpha", "0"], "--dirichlet-alpha"),
        (["run", "--seed", "-3"], "--seed"),
    ],
)
def test_cli_run_rejects_out_of_range_values_without_a_traceback(argv, match, run_main):
    result = run_main(main, *argv)
    assert match in result.usage_error()
    assert result.err.startswith("fedswa run: error:")


def test_cli_run_help_shows_defaults(run_main):
    out = " ".join(run_main(main, "run", "--help").out.split())  # one line, however wrapped
    assert "(default: 10)" in out
    assert "scikit-learn" in out
    # new-user trial 34: options without a help text showed no default
    for option, default in (("--alg", "fedswa"), ("--data", "digits"), ("--batch-size", "32"),
                            ("--seed", "0")):  # fmt: skip
        # the option, its metavar, then its help up to the default, without another option
        assert re.search(rf"{option} \S+ (?:(?!--)[^(])*\(default: {default}\)", out), option


def test_cli_run_missing_dependency_is_one_line(monkeypatch, run_main):
    import fedswa.data

    def _missing():
        raise ImportError("load_digits needs scikit-learn: pip install scikit-learn")

    monkeypatch.setattr(fedswa.data, "load_digits", _missing)
    result = run_main(main, "run", "--rounds", "1")
    assert result.code == 2
    assert "fedswa run: error: load_digits needs scikit-learn" in result.err
