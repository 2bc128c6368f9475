"""tools/affected.py: changed paths -> the distributions the CI workflow tests."""

import io
import json
import shutil
import subprocess

import pytest
from affected import affected, changed_paths, everything, main

EVERYTHING = ["icml25-core", "tools", "alpha-lib", "beta-v2"]


def test_everything_is_the_core_the_tools_then_the_libraries(release_repo):
    assert everything(release_repo) == EVERYTHING


@pytest.mark.parametrize(
    ("paths", "expected"),
    [
        (["packages/alpha-lib/src/alpha_lib/fit.py"], ["alpha-lib"]),
        (
            ["packages/beta-v2/README.md", "packages/alpha-lib/tests/test_fit.py"],
            ["alpha-lib", "beta-v2"],
        ),
        (["kernels/alpha-lib/csrc/gemm.cu"], ["alpha-lib"]),
        (["packages/gone-lib/src/gone_lib/x.py"], []),  # a removed library: nothing to test
        (["kernels/README.md", "packages/README.md"], []),
        (["README.md", "CONTRIBUTING.md"], []),  # docs: the lint job only
        ([], []),
        (["", "  "], []),
        (["shared/src/icml25_core/seed.py"], EVERYTHING),
        (["tools/affected.py"], EVERYTHING),
        (["noxfile.py"], EVERYTHING),
        (["pyproject.toml"], EVERYTHING),
        ([".github/workflows/ci.yml"], EVERYTHING),
        ([".ci/run"], EVERYTHING),
        (["./noxfile.py"], EVERYTHING),
        ([".gitignore"], EVERYTHING),  # no rule says it cannot matter: hatch reads it
        (["examples/compose/run.py", "packages/alpha-lib/x.py"], EVERYTHING),
        (["packages/alpha-lib/pyproject.toml", "README.md"], ["alpha-lib"]),
    ],
)
def test_paths_select_their_distributions(release_repo, paths, expected):
    assert affected(paths, release_repo) == expected


def test_a_nested_readme_is_no_lint_only_file(release_repo):
    assert affected(["docs/README.md"], release_repo) == EVERYTHING


def test_paths_must_be_a_list(release_repo):
    with pytest.raises(TypeError, match="list of paths"):
        affected("packages/alpha-lib/x.py", release_repo)


def test_command_line_prints_a_json_list(release_repo, capsys):
    assert main(["packages/beta-v2/x.py", "README.md"], root=release_repo) == 0
    assert json.loads(capsys.readouterr().out) == ["beta-v2"]
    assert main(["README.md"], root=release_repo) == 0
    assert capsys.readouterr().out == "[]\n"  # what ci.yml compares to skip the matrix
    assert main(["--all"], root=release_repo) == 0
    assert json.loads(capsys.readouterr().out) == EVERYTHING


def test_dash_reads_the_paths_from_stdin(release_repo, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("packages/alpha-lib/a.py\nREADME.md\n"))
    assert main(["-"], root=release_repo) == 0
    assert json.loads(capsys.readouterr().out) == ["alpha-lib"]


@pytest.mark.parametrize("argv", [[], ["--all", "README.md"], ["--base", "HEAD", "--all"]])
def test_exactly_one_source_of_paths(release_repo, capsys, argv):
    with pytest.raises(SystemExit) as stop:
        main(argv, root=release_repo)
    assert stop.value.code == 2
    assert "give exactly one of" in capsys.readouterr().err


def _git(repo, *args):
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def git_repo(release_repo):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    _git(release_repo, "init", "-q", "-b", "main")
    _git(release_repo, "add", ".")
    _git(release_repo, "commit", "-q", "-m", "base")
    return release_repo


def test_base_selects_what_the_branch_changed(git_repo, capsys):
    base = _git(git_repo, "rev-parse", "HEAD")
    _git(git_repo, "checkout", "-q", "-b", "topic")
    (git_repo / "packages/beta-v2/NOTES.md").write_text("notes\n")
    _git(git_repo, "add", ".")
    _git(git_repo, "commit", "-q", "-m", "beta notes")
    # main moves on meanwhile: base...head lists only the branch's own changes
    _git(git_repo, "checkout", "-q", "main")
    (git_repo / "shared/NEWS.md").write_text("news\n")
    _git(git_repo, "add", ".")
    _git(git_repo, "commit", "-q", "-m", "core news")
    _git(git_repo, "checkout", "-q", "topic")
    assert changed_paths("main", "HEAD", git_repo) == ["packages/beta-v2/NOTES.md"]
    assert main(["--base", base, "--head", "topic"], root=git_repo) == 0
    assert json.loads(capsys.readouterr().out) == ["beta-v2"]


def test_a_rename_selects_both_sides(git_repo):
    _git(git_repo, "mv", "packages/beta-v2/CHANGELOG.md", "packages/alpha-lib/OLD.md")
    _git(git_repo, "commit", "-q", "-m", "move")
    paths = changed_paths("HEAD~1", "HEAD", git_repo)
    assert sorted(paths) == ["packages/alpha-lib/OLD.md", "packages/beta-v2/CHANGELOG.md"]


@pytest.mark.parametrize("base", ["0" * 40, "deadbeef" * 5, "no-such-branch"])
def test_a_base_git_does_not_know_selects_everything(git_repo, capsys, base):
    assert changed_paths(base, "HEAD", git_repo) is None
    assert main(["--base", base], root=git_repo) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == EVERYTHING
    assert "selecting everything" in captured.err


def test_a_head_git_does_not_know_is_an_error(git_repo, capsys):
    assert main(["--base", "HEAD", "--head", "no-such-branch"], root=git_repo) == 1
    assert "git diff HEAD...no-such-branch failed" in capsys.readouterr().err


def test_every_library_of_the_repository_is_selectable():
    # the real checkout: a change to one library's folder selects exactly that library
    for dist in everything()[2:]:
        assert affected([f"packages/{dist}/pyproject.toml"]) == [dist]
