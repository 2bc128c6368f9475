"""The console script: help, version, the server commands, bench and reproduce."""

import pytest
from janus_secagg import __version__
from janus_secagg.cli import main


def test_help_lists_commands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for command in ("reproduce", "bench", "serve-a", "serve-b"):
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


def test_serve_needs_peer_settings(capsys):
    assert main(["serve-a", "--dim", "4"]) == 2
    assert "--b-port" in capsys.readouterr().err
    assert main(["serve-b", "--dim", "4"]) == 2
    assert "--a-pub" in capsys.readouterr().err


def test_bench_prints_constant_bytes(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert main(["bench", "--dim", "50", "--clients", "3,8"]) == 0
    rows = [
        line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("| 3") or line.startswith("| 8")
    ]
    assert len(rows) == 2
    assert rows[0].split("|")[3:5] == rows[1].split("|")[3:5]  # same up/down bytes


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["serve-a", "--dim", "0", "--b-port", "1"], "dim"),
        (["bench", "--dim", "0", "--clients", "3"], "dim"),
    ],
)
def test_cli_rejects_bad_numbers(argv, match):
    with pytest.raises(ValueError, match=match):
        main(argv)
