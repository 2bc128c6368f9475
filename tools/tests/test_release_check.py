"""tools/release_check.py: the release workflow's checks, on the fake repository."""

import json

import pytest
from release_check import (
    ReleaseError,
    check,
    check_core,
    core_requirement,
    main,
    published_versions,
    split_tag,
)


def _index(**releases):
    """PyPI's JSON of a project: each version with its files' yanked flags."""
    return {"info": {}, "releases": {v: [{"yanked": y} for y in ys] for v, ys in releases.items()}}


CORE_0_1_3 = _index(**{"0.1.0": [False, False], "0.1.3": [False]})


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("alpha-lib-v0.2.0", ("alpha-lib", "0.2.0")),
        ("beta-v2-v1.0.0rc2", ("beta-v2", "1.0.0rc2")),
        ("icml25-core-v0.1.0.post1", ("icml25-core", "0.1.0.post1")),
    ],
)
def test_tags_split_into_distribution_and_version(release_repo, tag, expected):
    assert split_tag(tag, release_repo) == expected


@pytest.mark.parametrize(
    ("tag", "message"),
    [
        ("gamma-v0.1.0", "not <dist>-v<version> for a distribution"),
        ("alpha-lib-0.1.0", "not <dist>-v<version> for a distribution"),
        ("alpha-lib-v", "not <dist>-v<version> for a distribution"),
        ("alpha-lib-v0.2.0-rc1", "not <dist>-v<version> for a distribution"),
        ("alpha-lib-v0.2.0RC1", "normalised PEP 440"),
    ],
)
def test_bad_tags_are_refused(release_repo, tag, message):
    with pytest.raises(ReleaseError, match=message):
        split_tag(tag, release_repo)


def test_core_requirement_is_read_from_the_dependencies(release_repo):
    assert core_requirement(release_repo / "packages/alpha-lib") == ">=0.1,<0.2"
    assert core_requirement(release_repo / "packages/beta-v2") is None


@pytest.mark.parametrize(
    ("dependency", "expected"),
    [
        ("icml25_core[torch] >= 0.1 ; python_version >= '3.11'", ">= 0.1"),
        ("ICML25-Core", ""),
        ("icml25-core (>=0.1,<0.3)", ">=0.1,<0.3"),
        ("icml25-core-extra>=1", None),  # another distribution
    ],
)
def test_core_requirement_spellings(release_repo, dependency, expected):
    pyproject = release_repo / "packages/alpha-lib/pyproject.toml"
    text = pyproject.read_text().replace('"icml25-core>=0.1,<0.2"', json.dumps(dependency))
    pyproject.write_text(text)
    assert core_requirement(pyproject.parent) == expected


def test_core_listed_twice_is_refused(release_repo):
    pyproject = release_repo / "packages/alpha-lib/pyproject.toml"
    text = pyproject.read_text().replace('"numpy>=1.26"]', '"icml25-core>=0.1.2"]')
    pyproject.write_text(text)
    with pytest.raises(ReleaseError, match="lists icml25-core 2 times"):
        core_requirement(pyproject.parent)


def test_published_versions_leave_out_yanked_and_empty_releases():
    index = _index(**{"0.1.0": [False], "0.1.1": [True], "0.1.2": [True, False], "0.1.3": []})
    assert published_versions(index) == ["0.1.0", "0.1.2"]


@pytest.mark.parametrize("index", [{}, {"releases": []}, ["0.1.0"]])
def test_an_index_without_releases_is_refused(index):
    with pytest.raises(ReleaseError, match="not PyPI's JSON"):
        published_versions(index)


def test_check_core_gives_the_highest_satisfying_release():
    assert check_core("alpha-lib", ">=0.1,<0.2", ["0.1.0", "0.1.3", "0.2.0"]) == "0.1.3"


def test_check_core_says_to_release_the_core_first():
    with pytest.raises(ReleaseError) as error:
        check_core("alpha-lib", ">=0.2,<0.3", ["0.1.3", "0.1.0", "0.2.0rc1"])
    message = str(error.value)
    assert "alpha-lib requires icml25-core>=0.2,<0.3" in message
    assert "(published: 0.1.0, 0.1.3, 0.2.0rc1)" in message
    assert "release icml25-core first" in message
    with pytest.raises(ReleaseError, match="published: none"):
        check_core("alpha-lib", ">=0.1", [])


def test_check_passes_a_library_whose_core_is_published(release_repo):
    assert check("alpha-lib-v0.1.0", CORE_0_1_3, release_repo) == {
        "dist": "alpha-lib",
        "folder": "packages/alpha-lib",
        "version": "0.1.0",
    }


def test_check_refuses_a_tag_other_than_the_version_file(release_repo):
    with pytest.raises(ReleaseError, match=r"says 0\.2\.0 but .*_version\.py says 0\.1\.0:"):
        check("alpha-lib-v0.2.0", CORE_0_1_3, release_repo)
    with pytest.raises(ReleaseError, match=r"says 0\.1 but"):  # the same version, another spelling
        check("alpha-lib-v0.1", CORE_0_1_3, release_repo)


def test_check_refuses_a_library_whose_core_is_not_published(release_repo):
    with pytest.raises(ReleaseError, match="release icml25-core first"):
        check("alpha-lib-v0.1.0", _index(**{"0.1.3": [True], "0.2.0": [False]}), release_repo)
    with pytest.raises(ReleaseError, match="give --core-index"):
        check("alpha-lib-v0.1.0", None, release_repo)


def test_core_and_core_free_libraries_need_no_index(release_repo):
    assert check("icml25-core-v0.1.0", None, release_repo)["folder"] == "shared"
    assert check("beta-v2-v1.0.0rc1", None, release_repo)["dist"] == "beta-v2"


def test_a_missing_or_broken_version_file_is_named(release_repo):
    version = release_repo / "packages/alpha-lib/src/alpha_lib/_version.py"
    version.write_text('__version__ = "0.1.0"\n__version__ = "0.1.1"\n')
    with pytest.raises(ReleaseError, match="exactly one line __version__"):
        check("alpha-lib-v0.1.0", CORE_0_1_3, release_repo)
    version.unlink()
    with pytest.raises(ReleaseError, match=r"_version\.py not found"):
        check("alpha-lib-v0.1.0", CORE_0_1_3, release_repo)


def test_command_line_prints_github_output_lines(release_repo, tmp_path, capsys):
    index = tmp_path / "core.json"
    index.write_text(json.dumps(CORE_0_1_3))
    assert main(["alpha-lib-v0.1.0", "--core-index", str(index)], root=release_repo) == 0
    captured = capsys.readouterr()
    assert captured.out == "dist=alpha-lib\nfolder=packages/alpha-lib\nversion=0.1.0\n"
    assert "needs icml25-core>=0.1,<0.2: PyPI has 0.1.3" in captured.err


def test_command_line_fails_with_one_error_line(release_repo, tmp_path, capsys):
    assert main(["alpha-lib-v9.0.0", "--core-index", str(tmp_path / "none.json")]) == 1
    assert capsys.readouterr().err.startswith("error: --core-index")
    (tmp_path / "bad.json").write_text("{")
    assert main(["alpha-lib-v0.1.0", "--core-index", str(tmp_path / "bad.json")]) == 1
    assert "error: --core-index" in capsys.readouterr().err
    assert main(["alpha-lib-v9.0.0"], root=release_repo) == 1
    assert capsys.readouterr().err.startswith("error: tag alpha-lib-v9.0.0 says 9.0.0")
