import argparse
from pathlib import Path

import pytest

from icml25_core.cli import (
    add_reproduce_command,
    console_parser,
    positive_int,
    report_folder,
    shard_spec,
)


def _script():
    parser, commands = console_parser("demo-lib", "1.2.3", "Demo.\n\n  demo-lib reproduce")
    reproduce = add_reproduce_command(commands, full_help="the paper's scale")
    reproduce.add_argument("--seeds", type=positive_int, default=1)
    return parser


def test_version_and_help(capsys):
    with pytest.raises(SystemExit) as info:
        _script().parse_args(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == "demo-lib 1.2.3"
    with pytest.raises(SystemExit):
        _script().parse_args(["--help"])
    out = capsys.readouterr().out
    assert "\n  demo-lib reproduce" in out  # the description's layout is kept
    assert "reproduce" in out
    assert "COMMAND" in out


def test_a_command_is_required(capsys):
    with pytest.raises(SystemExit) as info:
        _script().parse_args([])
    assert info.value.code == 2
    assert "required: COMMAND" in capsys.readouterr().err


def test_reproduce_defaults_and_options(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = _script().parse_args(["reproduce"])
    assert (args.command, args.out, args.full, args.seeds) == (
        "reproduce",
        Path("reports"),
        False,
        1,
    )
    assert (tmp_path / "reports").is_dir()
    args = _script().parse_args(["reproduce", "--out", "a/b", "--full", "--seeds", "3"])
    assert (args.full, args.seeds) == (True, 3)
    assert (tmp_path / "a" / "b").is_dir()


@pytest.mark.parametrize(
    ("value", "message"),
    [("0", "must be >= 1, got 0"), ("-2", "must be >= 1"), ("x", "invalid positive integer")],
)
def test_positive_int_rejects(value, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        positive_int(value)


@pytest.mark.parametrize(
    ("text", "expected"), [("0/1", (0, 1)), ("2/3", (2, 3)), (" 1/ 4", (1, 4))]
)
def test_shard_spec_parses(text, expected):
    assert shard_spec(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [("3/3", "needs 0 <= i < n"), ("-1/2", "needs 0 <= i < n"), ("0/0", "needs 0 <= i < n"),
     ("1", "must look like i/n"), ("a/b", "must look like i/n"), ("1/2/3", "must look like i/n")],
)  # fmt: skip
def test_shard_spec_rejects(text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        shard_spec(text)


def test_bad_report_folder_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit) as info:
        _script().parse_args(["reproduce", "--out", str(tmp_path / "file")])
    assert info.value.code == 2
    assert "argument --out" in capsys.readouterr().err
    with pytest.raises(argparse.ArgumentTypeError, match="cannot be created"):
        report_folder(str(tmp_path / "file" / "sub"))


@pytest.mark.parametrize(("prog", "version"), [("", "1"), ("x", None), (3, "1")])
def test_console_parser_rejects_bad_names(prog, version):
    with pytest.raises(TypeError, match="must be a non-empty str"):
        console_parser(prog, version)
