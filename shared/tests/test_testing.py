"""icml25_core.testing: the contract on a small installed library, its fixtures and helpers."""

import os
import shutil
import subprocess
import sys

import pytest

from icml25_core.testing import CardError, LibraryCard, readme_blocks
from icml25_core.testing.imports import blocked_import_names, extras_only_distributions

pytest_plugins = ["pytester"]

CLI = '''
"""demo-lib: says hello."""

import sys

from icml25_core.cli import add_reproduce_command, console_parser

from demo_lib import __version__


def main(argv=None):
    parser, commands = console_parser("demo-lib", __version__, __doc__)
    add_reproduce_command(commands)
    greet = commands.add_parser("greet", help="say hello")
    greet.add_argument("--name", default="world")
    args = parser.parse_args(argv)
    if args.command == "greet":
        print(f"hello {args.name}")
    return 0
'''
README = """\
# demo-lib

Says hello.

## Install

## Usage

```python
from pathlib import Path

greeting = "hello " + Path("name.txt").read_text().strip()
```

```python
print(greeting)
```

## How it works
## Hyper-parameters
## Reproduction
## Performance
## Limits and differences from the official code
## Citation
"""
PYPROJECT = """\
[project]
name = "demo-lib"
dependencies = ["demo-core"]

[project.scripts]
demo-lib = "demo_lib.cli:main"

[tool.icml25]
{card}
"""
CARD = 'console = "demo-lib"\nreadme = "README.md"\nstatus = "done"'
CONFTEST = """
import pytest


@pytest.fixture(scope="session")
def readme_folder(readme_folder):
    (readme_folder / "name.txt").write_text("readers\\n")
    return readme_folder
"""
OWN_TESTS = """
from demo_lib.cli import main


def test_greet_prints_the_name(run_main):
    assert run_main(main, "greet", "--name", "you") == (0, "hello you\\n", "")


def test_readme_greets_the_readers(readme):
    assert readme.namespace["greeting"] == "hello readers"
    assert readme.stdout == "hello readers\\n"
"""
PROPERTIES = """
from hypothesis import given, strategies as st


@given(st.text())
def test_greeting_keeps_the_name(name):
    assert ("hello " + name).removeprefix("hello ") == name
"""
# name -> (Requires-Dist lines, top-level package); demo-shared is needed by the core and by the
# extra, so only demo-fancy is the extra's own.
DISTRIBUTIONS = {
    "demo-lib": (
        ["demo-core", 'demo-fancy; extra == "fancy"', 'demo-shared; extra == "fancy"'],
        "demo_lib",
    ),
    "demo-core": (["demo-shared"], "demo_core"),
    "demo-shared": ([], "demo_shared"),
    "demo-fancy": (["demo-shared"], "demo_fancy"),
}


def _install(site, dist, requires, package, version="1.2.3"):
    """What pip leaves for `dist`: the package and its .dist-info (metadata, top-level name)."""
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text(f'__version__ = "{version}"\n')
    info = site / f"{package}-{version}.dist-info"
    info.mkdir()
    extras = sorted({r.split('extra == "')[1][:-1] for r in requires if "extra ==" in r})
    lines = [f"Name: {dist}", f"Version: {version}", *(f"Provides-Extra: {e}" for e in extras)]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("Metadata-Version: 2.1\n" + "\n".join(lines) + "\n")
    (info / "top_level.txt").write_text(package + "\n")


@pytest.fixture
def library(pytester, monkeypatch):
    """demo-lib 1.2.3 installed (package, metadata and console script) beside its extras, and
    its folder ``demo-lib/`` with the card, the README and its own tests."""
    site, bin_dir = pytester.path / "site", pytester.path / "bin"
    for dist, (requires, package) in DISTRIBUTIONS.items():
        _install(site, dist, requires, package)
    (site / "demo_lib" / "cli.py").write_text(CLI)
    bin_dir.mkdir()
    script = bin_dir / "demo-lib"
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom demo_lib.cli import main\n"
                      "sys.exit(main())\n")  # fmt: skip
    script.chmod(0o755)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    folder = pytester.mkdir("demo-lib")
    (folder / "pyproject.toml").write_text(PYPROJECT.format(card=CARD))
    (folder / "README.md").write_text(README)
    (folder / "tests").mkdir()
    (folder / "tests" / "conftest.py").write_text(CONFTEST)
    (folder / "tests" / "test_own.py").write_text(OWN_TESTS)
    (folder / "tests" / "test_properties.py").write_text(PROPERTIES)
    return folder


def _edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_the_contract_runs_beside_the_librarys_own_tests(pytester, library):
    result = pytester.runpytest("demo-lib/tests", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=17)
    result.stdout.fnmatch_lines(
        [
            "*test_own.py::test_readme_greets_the_readers PASSED*",
            "*test_properties.py::test_greeting_keeps_the_name PASSED*",
            "*demo-lib/pyproject.toml::test_help_exits_0_and_lists_every_command PASSED*",
            "*::test_bad_arguments_are_a_one_line_usage_error[[]unknown-reproduce-option] PASSED*",
            "*::test_import_needs_no_extra PASSED*",
            "*demo-lib/pyproject.toml::test_readme_block_runs[[]line10] PASSED*",
            "*demo-lib/pyproject.toml::test_readme_block_runs[[]line16] PASSED*",
            "*demo-lib/pyproject.toml::test_library_has_property_tests PASSED*",
        ]
    )


def test_the_contract_is_left_out_when_test_files_are_named(pytester, library):
    pytester.runpytest("demo-lib/tests/test_own.py").assert_outcomes(passed=2)


def test_an_uninstalled_library_gets_the_readme_checks_and_skips_the_rest(pytester, library):
    shutil.rmtree(pytester.path / "site" / "demo_lib-1.2.3.dist-info")
    result = pytester.runpytest("demo-lib/tests", "-k", "pyproject", "-rs")
    result.assert_outcomes(passed=5, skipped=9)
    result.stdout.fnmatch_lines(["*demo-lib is not installed here*"])


def test_the_plugin_does_nothing_without_the_cards_fields(pytester, library):
    (library / "pyproject.toml").write_text(PYPROJECT.format(card='status = "done"'))
    result = pytester.runpytest("demo-lib/tests", "--collect-only", "-q")
    assert "pyproject.toml" not in result.stdout.str()
    result.stdout.fnmatch_lines(["3 tests collected*"])  # its own: test_own.py, test_properties.py


def test_a_card_naming_no_script_is_a_collection_error(pytester, library):
    _edit(library / "pyproject.toml", 'console = "demo-lib"', 'console = "demo"')
    result = pytester.runpytest("demo-lib/tests")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*console = 'demo' must name a script of [[]project.scripts]*"])


BREAKAGES = {
    "a-command-without-help": (
        "site/demo_lib/cli.py",
        'commands.add_parser("greet", help="say hello")',
        'commands.add_parser("greet")',
        ["test_help_exits_0_and_lists_every_command"],
    ),
    "a-stale-version": (
        "site/demo_lib/__init__.py",
        '"1.2.3"',
        '"1.2.4"',
        ["test_version_prints_the_distributions_version"],
    ),
    "a-traceback-for-unknown-options": (
        "site/demo_lib/cli.py",
        "args = parser.parse_args(argv)",
        "args, rest = parser.parse_known_args(argv)\n    assert not rest, rest",
        ["test_bad_arguments_are_a_one_line_usage_error[[]unknown-reproduce-option]"],
    ),
    "an-import-of-an-extra": (
        "site/demo_lib/__init__.py",
        "__version__",
        "import demo_fancy\n__version__",
        ["test_import_needs_no_extra"],
    ),
    "a-missing-section": (
        "demo-lib/README.md",
        "## Performance\n",
        "",
        ["test_readme_has_the_card_sections_in_order"],
    ),
    "a-long-usage-block": (
        "demo-lib/README.md",
        "from pathlib import Path\n",
        "from pathlib import Path\n" + "pass\n" * 14,
        ["test_readme_usage_block_is_short"],
    ),
    "no-property-tests": (
        "demo-lib/tests/test_properties.py",
        "@given(st.text())",
        "",
        ["test_library_has_property_tests"],
    ),
    "a-failing-block": (
        "demo-lib/README.md",
        'Path("name.txt")',
        'Path("missing.txt")',
        ["test_readme_block_runs[[]line10]", "test_readme_block_runs[[]line16]"],
    ),
}


@pytest.mark.parametrize(("file", "old", "new", "failing"), BREAKAGES.values(), ids=BREAKAGES)
def test_each_contract_test_catches_its_breakage(pytester, library, file, old, new, failing):
    _edit(pytester.path / file, old, new)
    result = pytester.runpytest("demo-lib/tests", "-k", "pyproject")
    result.assert_outcomes(failed=len(failing), passed=14 - len(failing))
    result.stdout.fnmatch_lines([f"FAILED *::{name}*" for name in failing], consecutive=False)


def test_a_failing_block_names_the_readme_line_and_stops_the_later_blocks(pytester, library):
    _edit(library / "README.md", 'Path("name.txt")', 'Path("missing.txt")')
    result = pytester.runpytest("demo-lib/tests", "-k", "block_runs or readme_greets")
    result.assert_outcomes(failed=2, errors=1)  # the library's own test needs the README run
    result.stdout.fnmatch_lines(
        [
            "*README.md:12: in <module>",
            "*the block on line 10 failed, and the blocks after it run in its namespace*",
        ],
        consecutive=False,
    )


def test_extras_only_distributions_leave_out_what_the_requirements_need(library):
    assert extras_only_distributions("demo-lib") == {"demo-fancy"}
    assert blocked_import_names("demo-lib") == {"demo_fancy"}


def test_blocked_names_leave_out_the_standard_library(monkeypatch):
    """An extra that pulls a backport named like a standard module (resemblyzer -> typing)."""
    from icml25_core.testing import imports

    monkeypatch.setattr(imports, "extras_only_distributions", lambda d: {"typing", "demo-fancy"})
    monkeypatch.setattr(imports, "_closure", lambda d, e: set())
    providers = {"typing": ["typing"], "demo_fancy": ["demo-fancy"]}
    monkeypatch.setattr(imports.metadata, "packages_distributions", lambda: providers)
    assert blocked_import_names("demo-lib") == {"demo_fancy"}


def test_run_main_takes_the_exit_status_as_the_interpreter_does(run_main):
    def main(argv):
        print("working")
        sys.exit(argv[0] if argv[0] != "none" else None)

    assert run_main(main, "none") == (0, "working\n", "")
    assert run_main(main, "stopped: bad input") == (1, "working\n", "stopped: bad input\n")
    assert run_main(lambda argv: int(argv[0]), 3).code == 3


def test_run_console_runs_modules_and_names_a_missing_script(run_console, tmp_path):
    result = run_console("icml25_core", tmp_path, module=True)
    assert result.code == 1
    assert "no reproduce reports" in result.err
    with pytest.raises(FileNotFoundError, match="'no-such-script' is not installed"):
        run_console("no-such-script")


def test_readme_blocks_have_their_line_and_section(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(README)
    first, second = readme_blocks(readme)
    assert (first.index, first.line, first.section) == (0, 10, "## Usage")
    assert first.source.startswith("from pathlib import Path\n\ngreeting =")
    assert (second.line, second.source) == (16, "print(greeting)\n")
    readme.write_text("text\n```python\nx = 1\n")
    with pytest.raises(ValueError, match="opened on line 2 is not closed"):
        readme_blocks(readme)


@pytest.mark.parametrize(
    ("card", "match"),
    [
        ('readme = "README.md"', "console = None must name a script"),
        ('console = "demo-lib"\nreadme = "NOTES.md"', "readme = 'NOTES.md' must name an existing"),
        (CARD + "\nreadme-slow = 1", "readme-slow must be true or false"),
    ],
)
def test_card_rejects_bad_contract_fields(tmp_path, card, match):
    (tmp_path / "pyproject.toml").write_text(PYPROJECT.format(card=card))
    (tmp_path / "README.md").write_text(README)
    with pytest.raises(CardError, match=match):
        LibraryCard.load(tmp_path / "pyproject.toml")


def test_import_icml25_core_does_not_import_pytest():
    code = "import sys, icml25_core; print({'pytest', 'icml25_core.testing'} & set(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "set()"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"CI": "true"}, (50, True)),
        ({}, (100, False)),
        ({"CI": "true", "HYPOTHESIS_PROFILE": "dev"}, (100, False)),
        ({"HYPOTHESIS_PROFILE": "ci"}, (50, True)),
    ],
)
def test_hypothesis_profile_follows_ci_and_the_variable(env, expected):
    """The plugin loads the derandomized ``ci`` profile on CI (or when named), else ``dev``."""
    clean = {k: v for k, v in os.environ.items() if k not in ("CI", "HYPOTHESIS_PROFILE")}
    code = (
        "import icml25_core.testing; from hypothesis import settings; "
        "print(settings.default.max_examples, settings.default.derandomize)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True,
        check=True,
    ).stdout.split()  # fmt: skip
    assert (int(out[0]), out[1] == "True") == expected


def test_an_unfinished_library_may_lack_property_tests(pytester, library):
    _edit(library / "pyproject.toml", 'status = "done"', 'status = "in progress"')
    (library / "tests" / "test_properties.py").unlink()
    result = pytester.runpytest("demo-lib/tests", "-k", "property_tests", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*property tests are required once the card's status is done*"])
