"""tools/debian_packages.py: the Debian packages the CI workflow installs before nox runs."""

import pytest
from _catalogue import CatalogueError
from debian_packages import debian_packages, main


def test_packages_of_the_named_cards_each_once_in_order(release_repo):
    assert debian_packages(["alpha-lib", "beta-v2"], release_repo) == [
        "fortunes",
        "dataset-fashion-mnist",
    ]
    assert debian_packages(["beta-v2"], release_repo) == ["dataset-fashion-mnist"]


def test_core_and_tools_need_none(release_repo):
    assert debian_packages(["icml25-core", "tools"], release_repo) == []


def test_unknown_name_is_refused_naming_the_known_ones(release_repo):
    with pytest.raises(CatalogueError, match="unknown distribution 'alpha'; known: alpha-lib"):
        debian_packages(["alpha"], release_repo)


def test_debian_must_be_a_list_of_str(release_repo):
    pyproject = release_repo / "packages/beta-v2/pyproject.toml"
    text = pyproject.read_text().replace('debian = ["dataset-fashion-mnist"]', 'debian = "x"')
    pyproject.write_text(text)
    with pytest.raises(CatalogueError, match=r"beta-v2/pyproject.toml \[tool.icml25\] debian"):
        debian_packages(["beta-v2"], release_repo)


def test_command_line_prints_them_space_separated(release_repo, capsys):
    assert main(["alpha-lib"], root=release_repo) == 0
    assert capsys.readouterr().out == "fortunes dataset-fashion-mnist\n"
    assert main(["tools"], root=release_repo) == 0
    assert capsys.readouterr().out == "\n"
    assert main(["nope"], root=release_repo) == 1
    assert "error: unknown distribution 'nope'" in capsys.readouterr().err
