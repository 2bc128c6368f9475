"""The console script's own commands: the servers and bench (the shared contract checks help,
version and usage errors; keygen and enrol are in test_enrolment.py, TLS set-ups in test_tls.py)."""

import re

import pytest
from janus_secagg import JanusParams, ServerKeys
from janus_secagg.cli import main
from janus_secagg.serving import parse_public_key
from janus_secagg.testing import Deployment


@pytest.fixture
def serve_argv(tmp_path):
    """serve-<role> arguments of a throwaway deployment, without the leading ``-m module``."""
    deployment = Deployment(tmp_path / "dep", JanusParams(dim=4), 3)

    def argv(role, *extra):
        return deployment.serve_args(role, *extra)[2:]

    return argv


def test_serve_a_needs_b_port(serve_argv, capsys):
    assert main(serve_argv("a")) == 2
    assert "--b-port" in capsys.readouterr().err


def test_bench_prints_bytes_against_n(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert main(["bench", "--dim", "50", "--clients", "3,8"]) == 0
    rows = [
        line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("| 3") or line.startswith("| 8")
    ]
    assert len(rows) == 2
    (up3, down3), (up8, down8) = (row.split("|")[3:5] for row in rows)
    assert up3 == up8  # same upload; download carries U, 16 bytes per participant
    assert int(down8) - int(down3) == 16 * (8 - 3)


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["bench", "--dim", "0", "--clients", "3"], "dim"),
    ],
)
def test_cli_rejects_bad_numbers(argv, match):
    with pytest.raises(ValueError, match=match):
        main(argv)


@pytest.mark.parametrize(
    ("role", "extra", "match"),
    [
        # trial findings F16-F18: a clear error and exit status 2, never a traceback
        ("a", ["--b-port", "70000"], "--b-port"),
        ("a", ["--b-port", "-1"], "--b-port"),
        ("a", ["--b-port", "1", "--port", "70000"], "--port"),
        ("a", ["--b-port", "1", "--rounds", "0"], "--rounds"),
        ("a", ["--b-port", "1", "--linger", "-5"], "--linger"),
        ("a", ["--b-port", "1", "--key-file", "{missing}"], "--key-file"),
        ("b", ["--enrolment", "{missing}"], "not an enrolment file"),
        ("b", ["--operator", "zz"], "hex verify key"),
        ("a", ["--b-port", "1", "--host", "999.1.1.1"], "--host 999.1.1.1"),
    ],
)
def test_serve_rejects_bad_arguments(serve_argv, role, extra, match, tmp_path, capsys):
    argv = serve_argv(role, *[arg.format(missing=tmp_path / "missing") for arg in extra])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert re.search(match, err), err
    assert "Traceback" not in err


def test_a_pub_takes_both_key_forms():
    keys = ServerKeys.generate()
    for text in (keys.public.sign.hex(), keys.public.to_bytes().hex()):
        assert parse_public_key(text, "--a-pub") == keys.public


def test_serve_help_shows_only_its_own_options(run_main):
    a_help, b_help = (run_main(main, command, "--help").out for command in ("serve-a", "serve-b"))
    assert "--b-port" in a_help
    assert "--client-cert" in a_help
    assert "--state-file" in b_help
    assert "--b-port" not in b_help
    assert "--client-cert" not in b_help
