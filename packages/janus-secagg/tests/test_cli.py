"""The console script's own commands: the servers and bench (the shared contract checks help,
version and usage errors)."""

import re

import pytest
from janus_secagg import ServerKeys
from janus_secagg.cli import main
from janus_secagg.net import parse_public_key


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
        (["bench", "--dim", "0", "--clients", "3"], "dim"),
    ],
)
def test_cli_rejects_bad_numbers(argv, match):
    with pytest.raises(ValueError, match=match):
        main(argv)


A_PUB = ServerKeys.generate().public


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["serve-a", "--dim", "0", "--b-port", "1"], "dim"),
        (["serve-a", "--dim", "4", "--b-port", "1", "--clip", "-1"], "clip"),
        # trial findings F16-F18: a clear error and exit status 2, never a traceback
        (["serve-b", "--dim", "4", "--a-pub", "zz"], "--a-pub.*hex"),
        (["serve-b", "--dim", "4", "--a-pub", "00"], "--a-pub.*1 bytes"),
        (["serve-a", "--dim", "4", "--b-port", "70000"], "--b-port"),
        (["serve-a", "--dim", "4", "--b-port", "-1"], "--b-port"),
        (["serve-a", "--dim", "4", "--b-port", "1", "--port", "70000"], "--port"),
        (["serve-a", "--dim", "4", "--b-port", "1", "--rounds", "0"], "--rounds"),
        (["serve-a", "--dim", "4", "--b-port", "1", "--linger", "-5"], "--linger"),
        (["serve-a", "--dim", "4", "--b-port", "1", "--key-file", "{missing}"], "path"),
        (["serve-b", "--dim", "4", "--a-pub", A_PUB.sign.hex(), "--key-file", "{a_key}"], "box"),
        (["serve-a", "--dim", "4", "--b-port", "1", "--host", "999.1.1.1"], "--host 999.1.1.1"),
    ],
)
def test_serve_rejects_bad_arguments(argv, match, tmp_path, capsys):
    ServerKeys.generate().save(tmp_path / "a.key")
    paths = {"missing": tmp_path / "missing.key", "a_key": tmp_path / "a.key"}
    assert main([arg.format(**paths) for arg in argv]) == 2
    err = capsys.readouterr().err
    assert re.search(match, err), err
    assert "Traceback" not in err


def test_a_pub_takes_both_key_forms():
    keys = ServerKeys.generate()
    for text in (keys.public.sign.hex(), keys.public.to_bytes().hex()):
        assert parse_public_key(text, "--a-pub") == keys.public


def test_serve_help_shows_only_its_own_options(run_main):
    for command, own, other in (
        ("serve-a", "--b-port", "--a-pub"),
        ("serve-b", "--a-pub", "--b-port"),
    ):
        out = run_main(main, command, "--help").out
        assert own in out
        assert other not in out
