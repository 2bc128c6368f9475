"""The console script: help, convergence table, bench, reproduce wiring."""

import subprocess
import sys

import pytest
from fpt_snn import __version__
from fpt_snn.cli import main


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for command in ("reproduce", "convergence", "bench"):
        assert command in out


def test_reproduce_help_lists_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for option in ("--out", "--full", "--seed"):
        assert option in out


def test_version_is_printed(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    assert __version__ in capsys.readouterr().out


def test_convergence_prints_zero_mismatch_at_K_eq_T(capsys):
    main(["convergence", "--T", "4", "--K-max", "4", "--neurons", "2000"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == "| 4 | 0.000 | - |"
    assert len(lines) == 2 + 4 + 1


@pytest.mark.slow
def test_bench_prints_a_table(capsys):
    main(["bench", "--T", "4", "--sizes", "64", "--repeats", "1"])
    out = capsys.readouterr().out
    assert "fpt-dense vs loop" in out
    assert "| 4 | 2^6 |" in out


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["convergence", "--T", "0"], "must be >= 1"),
        (["convergence", "--convention", "norse"], "invalid choice"),
        (["bench", "--repeats", "0"], "must be >= 1"),
    ],
)
def test_bad_arguments_exit_with_a_message(argv, match, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert match in capsys.readouterr().err


def test_convergence_bad_tau_is_a_clean_exit():
    with pytest.raises(SystemExit, match="`tau`"):
        main(["convergence", "--T", "3", "--neurons", "10", "--tau", "0.5"])


def test_console_script_module_runs():
    done = subprocess.run(
        [sys.executable, "-m", "fpt_snn.cli", "convergence", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0
    assert "--K-max" in done.stdout


def test_reproduce_without_its_extra_exits_with_the_install_line(monkeypatch, tmp_path):
    from fpt_snn import reproduce

    def missing(*args, **kwargs):
        raise ImportError("digits_sequences needs scikit-learn: pip install fpt-snn[data]")

    monkeypatch.setattr(reproduce, "main", missing)
    with pytest.raises(SystemExit, match=r"pip install 'fpt-snn\[reproduce\]'"):
        main(["reproduce", "--out", str(tmp_path)])
