"""The noxfile's selection of libraries and the sessions' handling of a failing library, run with a
stand-in for nox's session object (no venv is built, no command is run)."""

import importlib.util
import textwrap
from pathlib import Path

import pytest
from nox.command import CommandFailed

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def noxfile():
    spec = importlib.util.spec_from_file_location("icml25_noxfile", ROOT / "noxfile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class SessionError(Exception):
    pass


class FakeSession:
    """Records what a session would run; commands with an argument containing a `fail` part
    fail."""

    def __init__(self, *posargs, fail=()):
        self.posargs, self.fail, self.runs, self.logs = list(posargs), fail, [], []

    def run(self, *command, **kwargs):
        self.runs.append(command)
        if any(part in str(arg) for part in self.fail for arg in command):
            raise CommandFailed(f"{command[0]} failed")

    def error(self, message):
        raise SessionError(message)

    def log(self, message):
        self.logs.append(message)


POOL = {"icml25-core": ROOT / "shared", "permucate": Path("p"), "fedswa": Path("f")}


def test_select_defaults_to_all_and_passes_options_on(noxfile):
    assert noxfile.select(FakeSession(), POOL) == (POOL, [])
    names, rest = noxfile.select(FakeSession("fedswa", "-k", "slow", "--fresh"), POOL)
    assert (list(names), rest) == (["fedswa"], ["-k", "slow"])


def test_select_takes_the_core_folder_name(noxfile):
    names, _ = noxfile.select(FakeSession("shared"), POOL)
    assert list(names) == ["icml25-core"]


def test_select_refuses_a_typo_and_suggests_the_name(noxfile):
    with pytest.raises(SessionError, match=r"'permucat' \(did you mean 'permucate'\?\)"):
        noxfile.select(FakeSession("permucat"), POOL)
    with pytest.raises(SessionError, match=r"unknown: 'zzz'; known: icml25-core, permucate"):
        noxfile.select(FakeSession("zzz"), POOL)


def test_every_library_folder_is_discovered(noxfile):
    found = noxfile.libraries()
    assert "permucate" in found
    assert all((folder / "pyproject.toml").is_file() for folder in found.values())


@pytest.fixture
def two_libraries(noxfile, monkeypatch, tmp_path):
    """Two finished libraries `a` and `b` whose venvs are fake folders."""
    folders = {"a": tmp_path / "a", "b": tmp_path / "b"}
    monkeypatch.setattr(noxfile, "libraries", lambda: folders)
    monkeypatch.setattr(noxfile, "card", lambda folder: {"status": "done"})
    monkeypatch.setattr(noxfile, "ensure_debian", lambda session, packages: None)

    def venv(session, kind, dist, folder, extras):
        path = tmp_path / "venvs" / f"{kind}-{dist}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    monkeypatch.setattr(noxfile, "library_venv", venv)
    return tmp_path


def test_reproduce_runs_the_others_after_a_failure_then_names_it(noxfile, two_libraries):
    session = FakeSession(fail=("reproduce-a/",))
    with pytest.raises(SessionError, match=r"reproduce failed for: a \("):
        noxfile.reproduce(session)
    programs = [Path(command[0]).name for command in session.runs]
    assert programs == ["a", "b", "python"]  # b ran, then the summary table
    assert session.runs[-1][1:3] == ("-m", "icml25_core")


def test_reproduce_names_the_failure_when_the_summary_fails_too(noxfile, two_libraries):
    session = FakeSession(fail=("reproduce-a/", "reproduce-b/"))
    with pytest.raises(SessionError, match=r"reproduce failed for: a, b"):
        noxfile.reproduce(session)


def test_tests_run_every_library_and_drop_venvs_when_asked(noxfile, two_libraries, monkeypatch):
    monkeypatch.setenv("ICML25_DROP_VENVS", "1")
    session = FakeSession("a", "b", fail=("tests-a/",))
    with pytest.raises(SessionError, match=r"tests failed for: a \(types\), a$"):
        noxfile.tests(session)
    tools = [(command[2], Path(command[0]).parents[1].name) for command in session.runs]
    # mypy (the library's src and the core's), then pytest (the library's tests), per library
    assert tools == [
        ("mypy", "tests-a"),
        ("pytest", "tests-a"),
        ("mypy", "tests-b"),
        ("pytest", "tests-b"),
    ]
    mypy_b = session.runs[2]
    assert mypy_b[-2:] == (str(two_libraries / "b" / "src"), str(noxfile.ROOT / "shared" / "src"))
    assert str(two_libraries / "venvs" / "tests-b" / ".mypy_cache") in mypy_b
    assert not (two_libraries / "venvs" / "tests-a").exists()
    assert not (two_libraries / "venvs" / "tests-b").exists()
    assert "test time per library" in session.logs[-1]


def test_typecheck_checks_each_named_library_in_its_test_venv(noxfile, two_libraries):
    session = FakeSession("a", "b", fail=("tests-b/",))
    with pytest.raises(SessionError, match=r"type errors in: b$"):
        noxfile.typecheck(session)
    assert [command[1:3] for command in session.runs] == [("-m", "mypy")] * 2
    assert [Path(command[0]).parents[1].name for command in session.runs] == ["tests-a", "tests-b"]


def test_lint_queues_the_type_check_unless_told_not_to(noxfile, monkeypatch, tmp_path):
    monkeypatch.setattr(noxfile, "dev_tools", lambda session, *names: tmp_path)
    notified = []
    for posargs, expected in (((), ["typecheck"]), (("--no-typecheck",), [])):
        session = FakeSession(*posargs)
        session.notify = lambda name, posargs=None: notified.append(name)
        noxfile.lint(session)
        assert notified == expected
        notified.clear()


def test_dev_specs_come_from_the_root_dev_group(noxfile):
    specs = noxfile.dev_specs("mypy", "mkdocstrings")
    assert specs[0].startswith("mypy>=")
    assert specs[1].startswith("mkdocstrings[python]>=")
    with pytest.raises(ValueError, match="not all of"):
        noxfile.dev_specs("no-such-tool")


PIP_LOG = """\
2026-12-05T07:30:52,216 ERROR: Cannot install a==0.1 and b==0.1 because these package versions \
have conflicting dependencies.
2026-12-05T07:30:52,217 The conflict is caused by:
2026-12-05T07:30:52,217     a 0.1 depends on packaging<24
2026-12-05T07:30:52,217     b 0.1 depends on packaging>=24
2026-12-05T07:30:52,217     The user requested (constraint) packaging==23.2
2026-12-05T07:30:52,217
2026-12-05T07:30:52,217 To fix this you could try to:
2026-12-05T07:30:52,217 1. loosen the range of package versions you've specified
"""


def test_resolver_conflict_lists_the_blamed_requirements(noxfile):
    assert noxfile.resolver_conflict(PIP_LOG) == [
        "a 0.1 depends on packaging<24",
        "b 0.1 depends on packaging>=24",
        "The user requested (constraint) packaging==23.2",
    ]
    assert noxfile.resolver_conflict("2026-12-05T07:30:52,216 Successfully installed a-0.1") == []


@pytest.fixture
def composed(noxfile, monkeypatch, tmp_path):
    """Libraries `a` (compose-extras flower, plot; a no-deps requirement) and `b`, two example
    scripts, and a make_venv that records its calls instead of installing."""
    cards = {
        "a": """
            [project.optional-dependencies]
            flower = ["flwr"]
            plot = []
            test = []
            [tool.icml25]
            compose-extras = ["flower", "plot"]
            debian = ["opencv-doc"]
            no-deps = ["spikingjelly"]
            optional-modules = { "a.flower" = "flower", "a.t" = "test" }
            """,
        "b": """
            [tool.icml25]
            debian = ["fortunes", "opencv-doc"]
            """,
    }
    folders = {}
    for dist, text in cards.items():
        folders[dist] = tmp_path / dist
        (folders[dist] / "src").mkdir(parents=True)
        (folders[dist] / "pyproject.toml").write_text(textwrap.dedent(text))
    examples = tmp_path / "examples"
    examples.mkdir()
    for name in ("one.py", "two.py"):
        (examples / name).write_text("")
    calls = {"debian": [], "venvs": []}

    def make_venv(session, name, requirements, **kwargs):
        calls["venvs"].append((name, requirements, kwargs))
        (tmp_path / name).mkdir(exist_ok=True)
        return tmp_path / name

    monkeypatch.setattr(noxfile, "libraries", lambda: folders)
    monkeypatch.setattr(
        noxfile, "ensure_debian", lambda session, pkgs: calls["debian"].append(pkgs)
    )
    monkeypatch.setattr(noxfile, "make_venv", make_venv)
    monkeypatch.setattr(noxfile, "COMPOSE_EXAMPLES", examples)
    monkeypatch.setattr(noxfile, "COMPOSE_PIP_LOG", tmp_path / "pip.log")
    return folders, calls


def test_compose_installs_every_library_with_its_compose_extras_in_one_venv(noxfile, composed):
    folders, calls = composed
    session = FakeSession()
    noxfile.compose(session)
    assert calls["debian"] == [["fortunes", "opencv-doc"]]
    [(name, requirements, kwargs)] = calls["venvs"]
    assert name == "compose"
    assert requirements[2:] == [
        str(noxfile.ROOT / "shared"),
        f"{folders['a']}[flower,plot]",
        str(folders["b"]),
    ]
    assert "no_deps" not in kwargs  # a's no-deps requirement stays out
    assert folders["a"] / "pyproject.toml" in kwargs["stamp_files"]
    pip_check, imports, *examples = session.runs
    assert pip_check[1:] == ("-m", "pip", "check")
    assert imports[3:] == ("a", "b", "a.flower")  # not a.t: its extra is not composed
    assert [Path(command[1]).name for command in examples] == ["one.py", "two.py"]
    assert "compose time" in session.logs[-1]
    assert "one.py" in session.logs[-1]


def test_compose_runs_every_example_then_names_the_failed_and_drops_the_venv(
    noxfile, composed, monkeypatch, tmp_path
):
    monkeypatch.setenv("ICML25_DROP_VENVS", "1")
    session = FakeSession(fail=("one.py",))
    with pytest.raises(SessionError, match=r"examples/compose/ failed: one.py$"):
        noxfile.compose(session)
    assert Path(session.runs[-1][1]).name == "two.py"
    assert not (tmp_path / "compose").exists()


def test_compose_names_the_conflicting_requirements(noxfile, composed, tmp_path, monkeypatch):
    def make_venv(session, name, requirements, **kwargs):
        Path(requirements[requirements.index("--log") + 1]).write_text(PIP_LOG)
        raise CommandFailed("pip failed")

    monkeypatch.setattr(noxfile, "make_venv", make_venv)
    message = r"requirements conflict:\n    a 0.1 depends on packaging<24\n    b 0.1 depends on"
    with pytest.raises(SessionError, match=message):
        noxfile.compose(FakeSession())


def test_compose_passes_on_an_install_failure_that_is_no_conflict(noxfile, composed, monkeypatch):
    def make_venv(session, name, requirements, **kwargs):
        raise CommandFailed("no matching distribution")

    monkeypatch.setattr(noxfile, "make_venv", make_venv)
    with pytest.raises(CommandFailed, match="no matching distribution"):
        noxfile.compose(FakeSession())


def test_compose_refuses_an_extra_the_library_does_not_declare(noxfile, composed):
    folders, _ = composed
    pyproject = folders["b"] / "pyproject.toml"
    pyproject.write_text('[tool.icml25]\ncompose-extras = ["plto"]\n')
    with pytest.raises(
        SessionError, match=r"b/pyproject.toml: compose-extras names no extra .*: plto"
    ):
        noxfile.compose(FakeSession())
