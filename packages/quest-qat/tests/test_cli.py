"""The console script's own commands: grid, bench and reproduce's data (the shared contract
checks help, version and usage errors)."""

import pytest
from quest_qat.cli import main


def test_reproduce_help_lists_the_data(run_main):
    result = run_main(main, "reproduce", "--help")
    assert result.code == 0
    assert "--data" in result.out


def test_grid_prints_the_table(capsys):
    assert main(["grid"]) == 0
    out = capsys.readouterr().out
    assert "2.5139305786" in out
    assert "0.0115429" in out


def test_bench_prints_both_layers(capsys):
    assert main(["bench", "--m", "64", "--k", "128"]) == 0
    out = capsys.readouterr().out
    assert "nn.Linear" in out
    assert "QuESTLinear" in out
    assert "overhead" in out


def test_reproduce_without_corpus_exits_cleanly(tmp_path):
    with pytest.raises(SystemExit, match="not found"):
        main(["reproduce", "--out", str(tmp_path), "--data", str(tmp_path / "missing.txt")])


def test_reproduce_with_unusable_data_exits_cleanly(tmp_path):
    """A short file or a directory gave a traceback (or 'not found' for an existing directory)."""
    short = tmp_path / "short.txt"
    short.write_text("hello world\n")
    with pytest.raises(SystemExit, match="at least 10,000 bytes, got 12"):
        main(["reproduce", "--out", str(tmp_path), "--data", str(short)])
    with pytest.raises(SystemExit, match="directory"):
        main(["reproduce", "--out", str(tmp_path), "--data", str(tmp_path)])


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["bench", "--k", "-5"], "must be >= 1, got -5"),
        (["bench", "--k", "100"], "multiple of 128"),
        (["bench", "--m", "0"], "must be >= 1, got 0"),
        (["bench", "--m", "abc"], "invalid positive integer value: 'abc'"),
    ],
)
def test_bench_rejects_bad_sizes(argv, match, run_main):
    assert match in run_main(main, *argv).usage_error()
