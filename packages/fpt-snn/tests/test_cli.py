"""The console script's own commands: convergence table, bench, reproduce wiring (the shared
contract checks help, version and usage errors)."""

import pytest
from fpt_snn.cli import main


def test_reproduce_help_lists_the_seed(run_main):
    result = run_main(main, "reproduce", "--help")
    assert result.code == 0
    assert "--seed" in result.out


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
        (["convergence", "--T", "abc"], "invalid positive integer value: 'abc'"),
    ],
)
def test_bad_arguments_exit_with_a_message(argv, match, run_main):
    assert match in run_main(main, *argv).usage_error()


def test_convergence_bad_tau_is_a_clean_exit():
    with pytest.raises(SystemExit, match="`tau`"):
        main(["convergence", "--T", "3", "--neurons", "10", "--tau", "0.5"])


def test_module_runs_the_convergence_command(run_console):
    result = run_console("fpt_snn.cli", "convergence", "--help", module=True)
    assert result.code == 0
    assert "--K-max" in result.out


def test_reproduce_without_its_extra_exits_with_the_install_line(monkeypatch, tmp_path):
    from fpt_snn import reproduce

    def missing(*args, **kwargs):
        raise ImportError("digits_sequences needs scikit-learn: pip install fpt-snn[data]")

    monkeypatch.setattr(reproduce, "main", missing)
    with pytest.raises(SystemExit, match=r"pip install 'fpt-snn\[reproduce\]'"):
        main(["reproduce", "--out", str(tmp_path)])


def test_bad_argument_message_hides_internal_names(run_main):
    result = run_main(main, "bench", "--sizes", "x")
    assert result.code == 2
    assert "_positive_int" not in result.err


def test_convergence_takes_v_threshold(capsys):
    main(["convergence", "--T", "4", "--K-max", "4", "--neurons", "200", "--v-threshold", "0.5"])
    out = capsys.readouterr().out
    assert "v_threshold=0.5" in out
    assert out.strip().splitlines()[-1] == "| 4 | 0.000 | - |"
    with pytest.raises(SystemExit, match="`v_threshold`"):
        main(["convergence", "--T", "3", "--neurons", "10", "--v-threshold", "0"])


def test_bench_and_convergence_help_document_options(run_main):
    out = run_main(main, "bench", "--help").out
    assert "N*T" in out
    assert "default: 5" in out
    assert "N(0.6, 0.8^2)" in run_main(main, "convergence", "--help").out


def test_convergence_on_your_own_currents(tmp_path, capsys):
    import numpy as np
    import torch

    x = torch.randn(6, 3, 4, dtype=torch.float64) + 0.6
    np.save(tmp_path / "x.npy", x.numpy())
    torch.save(x.float(), tmp_path / "x.pt")
    for name in ("x.npy", "x.pt"):
        main(["convergence", "--input", str(tmp_path / name), "--K-max", "6"])
        lines = capsys.readouterr().out.strip().splitlines()
        assert "shape (6, 3, 4)" in lines[0]
        assert lines[-1] == "| 6 | 0.000 | - |"


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (None, "is not a file"),
        (b"junk", "could not be read"),
        ({"x": 1}, "one float tensor"),
        ("int", "one float tensor"),
        ("nan", "NaN"),
    ],
)
def test_bad_input_is_rejected_convergence_input(tmp_path, content, match):
    import numpy as np
    import torch

    path = tmp_path / ("x.npy" if content in ("int", "nan") else "x.pt")
    if content == "int":
        np.save(path, np.ones((3, 2), dtype=np.int64))
    elif content == "nan":
        np.save(path, np.array([[np.nan]]))
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        torch.save(content, path)
    with pytest.raises(SystemExit, match=f"--input.*{match}|{match}.*--input"):
        main(["convergence", "--input", str(path)])
