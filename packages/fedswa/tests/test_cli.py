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
