"""tools/new_library.py: scaffolds into temporary repositories."""

import importlib.util
import shutil
import subprocess
import sys
import tomllib

import check_imports
import new_library
import pytest
import readme_table
from _catalogue import REPO_ROOT, Library, load_catalogue

FILES = [
    "CHANGELOG.md",
    "README.md",
    "benchmarks/RESULTS.md",
    "pyproject.toml",
    "src/{name}/__init__.py",
    "src/{name}/_version.py",
    "src/{name}/cli.py",
    "src/{name}/py.typed",
    "src/{name}/reproduce.py",
    "tests/test_cli.py",
]
# Stands in for icml25-core so that the generated tests run without numpy.
CORE_STUB = """class Report:
    def write(self, out):
        raise AssertionError("the skeleton must not write a report")
"""


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "tools").mkdir()
    shutil.copy(REPO_ROOT / "tools/libraries.toml", tmp_path / "tools/libraries.toml")
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")  # ruff's config
    core = tmp_path / "shared"
    (core / "src/icml25_core").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "shared/pyproject.toml", core / "pyproject.toml")
    (core / "src/icml25_core/__init__.py").write_text(CORE_STUB)
    cli = "src/icml25_core/cli.py"  # the real one: the scaffold's console script builds on it
    shutil.copy(REPO_ROOT / "shared" / cli, core / cli)
    testing = "src/icml25_core/testing"  # the real pytest plugin: the scaffold's tests use it
    shutil.copytree(REPO_ROOT / "shared" / testing, core / testing)
    return tmp_path


def _ruff():
    if importlib.util.find_spec("ruff"):
        return [sys.executable, "-m", "ruff"]
    if shutil.which("ruff"):
        return [shutil.which("ruff")]
    pytest.skip("ruff is not installed in this environment")


def test_scaffold_creates_the_layout_and_prints_next_steps(repo, capsys):
    assert new_library.main(["quest-qat"], root=repo) == 0
    folder = repo / "packages/quest-qat"
    created = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert created == sorted(f.format(name="quest_qat") for f in FILES)
    out = capsys.readouterr().out
    assert "created packages/quest-qat/" in out
    assert "packages/quest-qat/src/quest_qat/reproduce.py" in out
    assert "nox -s tests -- quest-qat" in out
    assert "python tools/readme_table.py --write" in out


def test_pyproject_follows_permucate_and_carries_the_card(repo):
    new_library.main(["quest-qat"], root=repo)
    data = tomllib.loads((repo / "packages/quest-qat/pyproject.toml").read_text())
    project = data["project"]
    assert project["name"] == "quest-qat"
    assert project["dynamic"] == ["version"]
    assert project["dependencies"] == ["icml25-core>=0.1,<0.2", "numpy>=1.26"]
    assert project["optional-dependencies"] == {
        "reproduce": [],
        "test": ["pytest>=8", "icml25-core[testing]"],
    }
    assert project["scripts"] == {"quest-qat": "quest_qat.cli:main"}
    assert project["urls"] == {"Paper": "https://arxiv.org/abs/2502.05003"}
    assert data["build-system"]["build-backend"] == "hatchling.build"
    assert data["tool"]["hatch"]["version"] == {"path": "src/quest_qat/_version.py"}
    assert data["tool"]["icml25"] == {
        "paper": "QuEST: Stable Training of LLMs with 1-Bit Weights and Activations",
        "authors": "Panferov et al.",
        "arxiv": "2502.05003",
        "field": "LLM quantization",
        "status": "in progress",
        "usage": "",
        "console": "quest-qat",
        "readme": "README.md",
        "debian": [],
        "compose-extras": [],
    }


def test_readme_names_the_paper(repo):
    # its sections, their order and its usage block: the contract of the generated tests (below)
    new_library.main(["fedswa"], root=repo)
    text = (repo / "packages/fedswa/README.md").read_text()
    assert text.startswith("# fedswa\n\nTODO: one paragraph")
    assert "https://arxiv.org/abs/2507.20016" in text
    assert "@inproceedings{fedswa2025," in text
    assert "author = {Liu and others}" in text


def test_package_sources_cite_the_paper_and_stub_reproduce(repo):
    new_library.main(["leaps-ctmc"], root=repo)
    src = repo / "packages/leaps-ctmc/src/leaps_ctmc"
    init = (src / "__init__.py").read_text()
    assert "LEAPS: A discrete neural sampler" in init
    assert "arXiv:2502.10843 (https://arxiv.org/abs/2502.10843)" in init
    assert '__all__ = [\n    "__version__",' in init
    assert (src / "_version.py").read_text() == '__version__ = "0.0.1"\n'
    reproduce = (src / "reproduce.py").read_text()
    assert "def run(full: bool = False) -> Report:" in reproduce
    assert "raise RuntimeError(" in reproduce
    assert "NotImplementedError" not in reproduce
    changelog = (repo / "packages/leaps-ctmc/CHANGELOG.md").read_text()
    assert "## Unreleased" in changelog


def test_every_catalogued_scaffold_passes_check_imports_and_ruff(repo):
    for library in load_catalogue(repo):
        new_library.scaffold(library, repo)
    for target in check_imports.find_targets([], repo):
        assert check_imports.check_target(target, repo) == [], target.dist
    ruff = _ruff()
    for command in (
        ["check", "--no-cache", "packages"],
        ["format", "--check", "--no-cache", "packages"],
    ):
        result = subprocess.run(
            [*ruff, *command], cwd=repo, capture_output=True, text=True, check=False
        )
        assert result.returncode == 0, result.stdout + result.stderr


def test_generated_tests_pass_and_say_reproduce_is_not_written(repo):
    new_library.main(["unimc"], root=repo)
    folder = repo / "packages/unimc"
    env = {"PYTHONPATH": f"{repo / 'shared/src'}:{folder / 'src'}", "PATH": ""}
    plugin = ["-p", "icml25_core.testing", "-p", "no:cacheprovider", "-rA"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *plugin, "tests"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # not installed here, so the contract checks the README only and skips the console script;
    # property tests are required once the library is done
    assert "5 passed, 10 skipped" in result.stdout
    assert "property tests are required once the card's status is done" in result.stdout
    for test in ("test_readme_has_the_card_sections_in_order", "test_readme_block_runs[line"):
        assert f"PASSED pyproject.toml::{test}" in result.stdout


def test_awkward_titles_stay_valid_toml_and_python(repo):
    paper = 'A "quoted" \\ title with $dollar and a very long tail ' + "that goes on " * 8
    library = Library("odd-title", paper, "Doe, Roe & Poe", "", "testing")
    new_library.scaffold(library, repo)
    folder = repo / "packages/odd-title"
    card = tomllib.loads((folder / "pyproject.toml").read_text())["tool"]["icml25"]
    assert card["paper"] == paper
    assert "urls" not in tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    for path in (folder / "src/odd_title").glob("*.py"):
        compile(path.read_text(), str(path), "exec")
    assert max(len(line) for line in (folder / "src/odd_title/__init__.py").open()) <= 101


@pytest.mark.parametrize(
    "name",
    ["Quest-qat", "quest_qat", "1quest", "-quest", "quest-", "quest--qat", "quest qat", "json",
     "class", "icml25-core", "tools", "a" * 33],
)  # fmt: skip
def test_bad_names_are_refused(repo, capsys, name):
    assert new_library.main(["--paper", "Some title", "--", name], root=repo) == 1
    assert capsys.readouterr().err.startswith("error: ")
    assert not (repo / "packages" / name).exists()


def test_name_outside_the_catalogue_needs_a_paper(repo, capsys):
    assert new_library.main(["my-method"], root=repo) == 1
    assert "not in tools/libraries.toml" in capsys.readouterr().err
    assert not (repo / "packages/my-method").exists()
    argv = ["my-method", "--paper", "My Method", "--arxiv", "2501.00001", "--authors", "Doe"]
    assert new_library.main(argv, root=repo) == 0
    assert "added a [[library]] entry for 'my-method'" in capsys.readouterr().out
    card = tomllib.loads((repo / "packages/my-method/pyproject.toml").read_text())["tool"]
    assert card["icml25"]["paper"] == "My Method"
    assert card["icml25"]["arxiv"] == "2501.00001"
    entry = {library.dist: library for library in load_catalogue(repo)}["my-method"]
    assert entry == Library("my-method", "My Method", "Doe", "2501.00001", "TODO: field")


@pytest.mark.parametrize(
    "argv",
    [["wmarkgpt"], ["my-method", "--paper", 'A "quoted" \\ title', "--field", "demo"]],
    ids=["catalogued", "new-to-the-catalogue"],
)
def test_scaffold_passes_the_readme_table_check_at_once(repo, capsys, argv):
    # the lint session's last check; a README with the markers and the table before the scaffold
    (repo / "README.md").write_text(
        f"# icml25\n\n{readme_table.START}\n{readme_table.table(repo)}\n{readme_table.END}\n"
    )
    assert new_library.main(argv, root=repo) == 0
    assert "updated README.md's table of libraries" in capsys.readouterr().out
    assert readme_table.main(["--check"], root=repo) == 0
    row = next(line for line in (repo / "README.md").read_text().splitlines() if argv[0] in line)
    assert f"[{argv[0]}](packages/{argv[0]}/)" in row
    assert "| in progress |" in row


def test_bad_arxiv_id_is_refused(repo, capsys):
    assert new_library.main(["quest-qat", "--arxiv", "arXiv:2502.05003"], root=repo) == 1
    assert "not an arXiv id" in capsys.readouterr().err


def test_existing_folder_is_refused(repo, capsys):
    (repo / "packages/quest-qat").mkdir(parents=True)
    (repo / "packages/quest-qat/keep.txt").write_text("mine")
    assert new_library.main(["quest-qat"], root=repo) == 1
    assert "already exists" in capsys.readouterr().err
    assert [p.name for p in (repo / "packages/quest-qat").iterdir()] == ["keep.txt"]
