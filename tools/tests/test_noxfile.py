"""The noxfile's selection of libraries and the sessions' handling of a failing library, run with a
stand-in for nox's session object (no venv is built, no command is run)."""

import importlib.util
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
    """Records what a session would run; commands whose program contains a `fail` part fail."""

    def __init__(self, *posargs, fail=()):
        self.posargs, self.fail, self.runs, self.logs = list(posargs), fail, [], []

    def run(self, *command, **kwargs):
        self.runs.append(command)
        if any(part in command[0] for part in self.fail):
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
    with pytest.raises(SessionError, match=r"tests failed for: a$"):
        noxfile.tests(session)
    assert [Path(command[3]).parent.name for command in session.runs] == ["a", "b"]
    assert not (two_libraries / "venvs" / "tests-a").exists()
    assert not (two_libraries / "venvs" / "tests-b").exists()
    assert "test time per library" in session.logs[-1]
