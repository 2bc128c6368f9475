"""The console script: help, `run`, `bench`'s functions, `reproduce` on a tiny setting."""

import dataclasses

import pytest
from fedswa import __version__, reproduce
from fedswa.cli import main


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert all(word in out for word in ("reproduce", "run", "bench"))


def test_reproduce_help_lists_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert all(option in out for option in ("--out", "--full", "--engine"))


def test_version_is_printed(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    assert __version__ in capsys.readouterr().out


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
def test_cli_rejects_bad_choices(argv, match, capsys):
    with pytest.raises(SystemExit):
        main(argv)
    assert match in capsys.readouterr().err


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
def test_cli_run_rejects_out_of_range_values_without_a_traceback(argv, match, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("fedswa run: error:")
    assert match in err
    assert "Traceback" not in err


def test_cli_run_help_shows_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert "(default: 10)" in out
    assert "scikit-learn" in out


def test_cli_run_missing_dependency_is_one_line(monkeypatch, capsys):
    import fedswa.data

    def _missing():
        raise ImportError("load_digits needs scikit-learn: pip install scikit-learn")

    monkeypatch.setattr(fedswa.data, "load_digits", _missing)
    with pytest.raises(SystemExit):
        main(["run", "--rounds", "1"])
    assert "fedswa run: error: load_digits needs scikit-learn" in capsys.readouterr().err
