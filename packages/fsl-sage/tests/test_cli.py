"""The console script: help, version, `run` on digits and `bench`-free parsing."""

import json

import pytest
from fsl_sage import __version__
from fsl_sage.cli import main


def test_help_lists_commands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for command in ("reproduce", "run", "bench"):
        assert command in out


def test_reproduce_help_lists_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--out" in out
    assert "--full" in out


def test_version_is_printed(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    assert __version__ in capsys.readouterr().out


@pytest.mark.parametrize("alg", ["fsl_sage", "splitfed_v2"])
def test_run_on_digits_prints_accuracy_and_bytes(capsys, alg):
    argv = ["run", "--alg", alg, "--dataset", "digits", "--clients", "2", "--per-client", "80",
            "--widths", "4,8", "--rounds", "1", "--batch-size", "16"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["algorithm"] == alg
    assert 0.0 <= out["accuracy"] <= 1.0
    assert out["official_bytes"] > 0


def test_run_rejects_unknown_algorithm():
    with pytest.raises(SystemExit):
        main(["run", "--alg", "sgd"])
