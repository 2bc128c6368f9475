"""tools/readme_table.py on small fake repositories, and the real catalogue."""

import textwrap

import pytest
import readme_table
from _catalogue import REPO_ROOT, CatalogueError, load_catalogue

CATALOGUE = """
[[library]]
dist = "quest-qat"
paper = "QuEST: Stable Training of LLMs with 1-Bit Weights and Activations"
authors = "Panferov et al."
arxiv = "2502.05003"
field = "LLM quantization"

[[library]]
dist = "wmarkgpt"
paper = "WMarkGPT: Watermarked Image Understanding | MLLMs"
authors = "Tan et al."
arxiv = ""
field = "multimodal LLMs"

[[library]]
dist = "permucate"
paper = "Measuring Variable Importance in Heterogeneous Treatment Effects with Confidence"
authors = "Paillard et al."
arxiv = "2408.13002"
field = "causal inference"
"""

CARD = """
[project]
name = "permucate"

[tool.icml25]
paper = "Measuring Variable Importance in Heterogeneous Treatment Effects with Confidence"
authors = "Paillard et al."
arxiv = "2408.13002"
field = "causal inference"
status = "done"
usage = "PermuCATE(random_state=0).fit(X, T, Y).summary()"
debian = []
"""

README = """# icml25

Intro.

<!-- libraries:start -->
old table
<!-- libraries:end -->

After the table.
"""


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


@pytest.fixture
def repo(tmp_path):
    _write(tmp_path / "tools/libraries.toml", CATALOGUE)
    _write(tmp_path / "packages/permucate/pyproject.toml", CARD)
    _write(tmp_path / "README.md", README)
    return tmp_path


def test_table_rows_follow_catalogue_and_cards(repo):
    lines = readme_table.table(repo).splitlines()
    assert lines[0] == "| Library | Paper | Field | Status | Usage |"
    assert lines[1] == "| --- | --- | --- | --- | --- |"
    assert lines[2] == (
        "| quest-qat | [QuEST: Stable Training of LLMs with 1-Bit Weights and Activations]"
        "(https://arxiv.org/abs/2502.05003) | LLM quantization | planned | — |"
    )
    # No arXiv id: no link; a '|' in a title is escaped.
    assert lines[3] == (
        r"| wmarkgpt | WMarkGPT: Watermarked Image Understanding \| MLLMs | multimodal LLMs"
        " | planned | — |"
    )
    assert lines[4] == (
        "| [permucate](packages/permucate/) | [Measuring Variable Importance in Heterogeneous "
        "Treatment Effects with Confidence](https://arxiv.org/abs/2408.13002) | causal inference"
        " | done | `PermuCATE(random_state=0).fit(X, T, Y).summary()` |"
    )
    assert len(lines) == 5


def test_print_mode_prints_table(repo, capsys):
    assert readme_table.main([], root=repo) == 0
    assert capsys.readouterr().out == readme_table.table(repo) + "\n"


def test_write_replaces_only_the_table(repo):
    assert readme_table.main(["--write"], root=repo) == 0
    text = (repo / "README.md").read_text()
    assert "old table" not in text
    assert text.startswith("# icml25\n\nIntro.\n\n<!-- libraries:start -->\n| Library |")
    assert text.endswith("|\n<!-- libraries:end -->\n\nAfter the table.\n")
    assert readme_table.table(repo) in text


def test_check_passes_after_write_and_write_is_idempotent(repo, capsys):
    assert readme_table.main(["--check"], root=repo) == 1
    assert "stale" in capsys.readouterr().err
    readme_table.main(["--write"], root=repo)
    written = (repo / "README.md").read_text()
    assert readme_table.main(["--check"], root=repo) == 0
    readme_table.main(["--write"], root=repo)
    assert (repo / "README.md").read_text() == written


def test_check_fails_when_a_card_changes(repo, capsys):
    readme_table.main(["--write"], root=repo)
    card = repo / "packages/permucate/pyproject.toml"
    card.write_text(card.read_text().replace('status = "done"', 'status = "in progress"'))
    capsys.readouterr()
    assert readme_table.main(["--check"], root=repo) == 1
    err = capsys.readouterr().err
    assert "stale" in err
    assert "python tools/readme_table.py --write" in err


@pytest.mark.parametrize(
    "text",
    [
        "# icml25\n\nno markers\n",
        "<!-- libraries:start -->\nonly the start\n",
        "<!-- libraries:end -->\n<!-- libraries:start -->\n",
        "<!-- libraries:start -->\n<!-- libraries:end -->\n<!-- libraries:start -->\n",
    ],
    ids=["none", "no-end", "reversed", "repeated"],
)
def test_missing_or_broken_markers_fail_check_and_write(repo, capsys, text):
    (repo / "README.md").write_text(text)
    assert readme_table.main(["--check"], root=repo) == 1
    assert readme_table.main(["--write"], root=repo) == 1
    assert "<!-- libraries:" in capsys.readouterr().err
    assert (repo / "README.md").read_text() == text


def test_missing_readme_fails_check(repo, capsys):
    (repo / "README.md").unlink()
    assert readme_table.main(["--check"], root=repo) == 1
    assert "README.md not found" in capsys.readouterr().err


def test_uncatalogued_package_warns_and_fails_check(repo, capsys):
    readme_table.main(["--write"], root=repo)
    (repo / "packages/stray").mkdir()
    capsys.readouterr()
    assert readme_table.main([], root=repo) == 0
    assert "warning: packages/stray/ is not in tools/libraries.toml" in capsys.readouterr().err
    assert readme_table.main(["--check"], root=repo) == 1
    assert "error: packages/stray/ is not in tools/libraries.toml" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('status = "done"', 'status = "finished"', "status 'finished' must be one of"),
        ('arxiv = "2408.13002"', 'arxiv = "2408.13003"', "arxiv '2408.13003' differs"),
    ],
)
def test_bad_card_fails_check(repo, capsys, old, new, message):
    card = repo / "packages/permucate/pyproject.toml"
    card.write_text(card.read_text().replace(old, new))
    readme_table.main(["--write"], root=repo)
    assert readme_table.main(["--check"], root=repo) == 1
    assert message in capsys.readouterr().err


def test_malformed_catalogue_is_an_error(repo, capsys):
    (repo / "tools/libraries.toml").write_text(CATALOGUE.replace('"wmarkgpt"', '"WMarkGPT"'))
    assert readme_table.main([], root=repo) == 1
    assert "must be lowercase" in capsys.readouterr().err


def test_catalogue_rejects_duplicates_and_missing_keys(repo):
    path = repo / "tools/libraries.toml"
    path.write_text(CATALOGUE + CATALOGUE.split("\n\n")[0])
    with pytest.raises(CatalogueError, match="listed twice"):
        load_catalogue(repo)
    path.write_text('[[library]]\ndist = "x"\n')
    with pytest.raises(CatalogueError, match="missing"):
        load_catalogue(repo)


# The 19 ICML 2025 papers the project set out with; a contributor may add more (CONTRIBUTING).
PLANNED = {
    "quest-qat",
    "comemo-lvlm",
    "causal-pbrs",
    "ranknovo",
    "fedswa",
    "leaps-ctmc",
    "fsl-sage",
    "recap-datacomp",
    "permucate",
    "wmarkgpt",
    "phonepure",
    "monoattn-transducer",
    "laion-c",
    "unimc",
    "finola",
    "janus-secagg",
    "riskaverse-np",
    "fpt-snn",
    "reframe-cache",
}


def test_real_catalogue_keeps_the_19_planned_libraries():
    libraries = load_catalogue(REPO_ROOT)
    assert {library.dist for library in libraries} >= PLANNED
    assert all(library.import_name.isidentifier() for library in libraries)
