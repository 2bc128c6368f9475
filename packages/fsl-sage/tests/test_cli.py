"""The console script's own command: `run` on digits and its errors (the shared contract checks
help, version and usage errors)."""

import json

import pytest
from fsl_sage.cli import main


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


def test_run_help_shows_defaults(run_main):
    out = run_main(main, "run", "--help").out
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
def test_run_reports_bad_arguments_as_usage_errors(run_main, argv, match):
    base = ["run", "--dataset", "digits", "--clients", "2", "--per-client", "50", "--rounds", "1"]
    result = run_main(main, *base, *argv)
    assert match in result.usage_error()
    assert result.err.startswith("fsl-sage run: error:")
