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


def test_run_help_shows_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert "(default: 5)" in out
    assert "(default: fsl_sage)" in out


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--clients", "0"], "num_clients"),
        (["--seed", "-3"], "seed"),
        (["--alpha", "inf"], "alpha"),
        (["--widths", "8"], "widths"),
        (["--per-client", "100000"], "per_client"),
        (["--checkpoint", __file__], "checkpoint"),
        (["--flower", "--checkpoint", "ck"], "--checkpoint is not supported with --flower"),
        (["--flower", "--alg", "fedavg"], "--flower runs FSL-SAGE only"),
    ],
)
def test_run_reports_bad_arguments_as_usage_errors(capsys, argv, match):
    base = ["run", "--dataset", "digits", "--clients", "2", "--per-client", "50", "--rounds", "1"]
    with pytest.raises(SystemExit) as exit_info:
        main(base + argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("fsl-sage run: error:")
    assert match in err
    assert "Traceback" not in err


def test_reproduce_rejects_an_out_path_that_is_a_file(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "--out", __file__])
    assert exit_info.value.code == 2
    assert "--out" in capsys.readouterr().err
