"""The contract every library's console script, README and top-level import meet.

Not a module of tests to import: the plugin (:mod:`icml25_core.testing`) collects it once per
library whose card declares ``console`` and ``readme``, as ``packages/<dist>/pyproject.toml``
beside the library's own tests; ``card`` is that library's :class:`LibraryCard`.
"""

from __future__ import annotations

import ast
import re
from importlib import metadata

import pytest

from icml25_core.testing.card import LibraryCard
from icml25_core.testing.console import ConsoleResult, run_console
from icml25_core.testing.imports import blocked_import_names, import_without
from icml25_core.testing.readme import CARD_SECTIONS, ReadmeRun, readme_blocks

USAGE_LINES = 15  # CONTRIBUTING.md, "Add a library": usage in at most 15 lines
PROPERTY_TESTS = "tests/test_properties.py"  # CONTRIBUTING.md: hypothesis tests of the maths
_CHOICES = re.compile(r"invalid choice: .*\(choose from (.*)\)")
BAD_ARGUMENTS = {
    "unknown-command": ["no-such-command"],
    "unknown-option": ["--no-such-option"],
    "unknown-reproduce-option": ["reproduce", "--no-such-option"],
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One test per README block (its README line in the id)."""
    if "block" in metafunc.fixturenames:
        card = LibraryCard.load(metafunc.definition.path)
        blocks = readme_blocks(card.readme)
        marks = [pytest.mark.slow] if card.readme_slow else []
        metafunc.parametrize(
            "block", [pytest.param(b, id=b.id, marks=marks) for b in blocks] or [None]
        )


@pytest.fixture(scope="module")
def card(request: pytest.FixtureRequest) -> LibraryCard:
    return LibraryCard.load(request.node.path)


@pytest.fixture(scope="module")
def installed(card: LibraryCard) -> LibraryCard:
    """The card, once its library is found installed here (its tests are skipped otherwise)."""
    try:
        metadata.distribution(card.dist)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{card.dist} is not installed here: its script and metadata are checked")
    return card


@pytest.fixture(scope="module")
def console(installed: LibraryCard):
    """``console(*args)``: the card's console script run once per argument list."""
    runs: dict[tuple[str, ...], ConsoleResult] = {}

    def run(*args: str) -> ConsoleResult:
        if args not in runs:
            runs[args] = run_console(installed.console, *args)
        return runs[args]

    return run


def _commands(console) -> list[str]:
    """The commands the script accepts, as its own unknown-command error lists them."""
    err = console(*BAD_ARGUMENTS["unknown-command"]).err
    found = _CHOICES.search(err)
    assert found, f"the unknown-command error names no commands to choose from:\n{err}"
    return [name.strip().strip("'\"") for name in found.group(1).split(",")]


def test_help_exits_0_and_lists_every_command(console):
    result = console("--help")
    assert result.code == 0, result.err
    commands = _commands(console)
    assert "reproduce" in commands
    unlisted = [c for c in commands if not re.search(rf"^\s+{re.escape(c)}\b", result.out, re.M)]
    assert not unlisted, f"--help lists no line for {unlisted} (add_parser(..., help=...))"


def test_version_prints_the_distributions_version(console, installed):
    result = console("--version")
    assert result.code == 0, result.err
    assert result.out.strip() == f"{installed.console} {metadata.version(installed.dist)}"


@pytest.mark.parametrize("argv", BAD_ARGUMENTS.values(), ids=BAD_ARGUMENTS.keys())
def test_bad_arguments_are_a_one_line_usage_error(console, card, argv):
    result = console(*argv)
    line = result.usage_error()
    assert line.startswith(card.console), result.err
    assert result.err.rstrip().endswith(line), "the error is the last line"
    assert result.out == ""


def test_reproduce_help_lists_out_and_full(console):
    result = console("reproduce", "--help")
    assert result.code == 0, result.err
    assert "--out" in result.out
    assert "--full" in result.out


@pytest.mark.parametrize(
    ("inside", "message"),
    [(False, "is a file"), (True, "cannot be created")],
    ids=["file", "under"],
)
def test_reproduce_refuses_an_out_that_cannot_be_a_folder(installed, tmp_path, inside, message):
    taken = tmp_path / "taken"
    taken.write_text("a file, not a folder\n")
    out = taken / "reports" if inside else taken
    result = run_console(installed.console, "reproduce", "--out", out)
    line = result.usage_error()
    assert "argument --out" in line
    assert message in line


def test_import_needs_no_extra(installed):
    blocked = blocked_import_names(installed.dist)
    done = import_without(installed.import_name, blocked)
    assert done.returncode == 0, (
        f"`import {installed.import_name}` needs a distribution that only an extra installs "
        f"(blocked: {', '.join(sorted(blocked)) or 'none'}):\n{done.stderr}"
    )


def test_readme_has_the_card_sections_in_order(card):
    lines = card.readme.read_text(encoding="utf-8").splitlines()
    missing = [s for s in CARD_SECTIONS if s not in lines]
    assert not missing, f"{card.readme.name} lacks the sections {missing}"
    assert [line for line in lines if line in CARD_SECTIONS] == list(CARD_SECTIONS)


def test_readme_usage_block_is_short(card):
    usage = [b for b in readme_blocks(card.readme) if b.section == "## Usage"]
    assert usage, f"{card.readme.name} has no Python block under ## Usage"
    assert len(usage[0].source.strip().splitlines()) <= USAGE_LINES


def test_readme_block_runs(block, readme_run: ReadmeRun):
    assert block is not None, f"{readme_run.path.name} has no Python block"
    readme_run.run_through(block.index)


def _given_tests(path) -> list[str]:
    """Names of the functions in `path` decorated with hypothesis' ``given``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        for decorator in node.decorator_list
        if isinstance(decorator, ast.Call)
        and (getattr(decorator.func, "id", None) or getattr(decorator.func, "attr", None))
        == "given"
    ]


def test_library_has_property_tests(card):
    """A finished library tests the invariants of its maths with hypothesis."""
    if card.status != "done":
        pytest.skip(f"property tests are required once the card's status is done ({card.status})")
    path = card.pyproject.parent / PROPERTY_TESTS
    assert path.is_file(), f"{card.dist} has no {PROPERTY_TESTS}"
    assert _given_tests(path), f"{path} has no test decorated with hypothesis' @given"
