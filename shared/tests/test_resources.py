import sys

import pytest

from icml25_core import data_path

PACKAGE = "icml25_demo_data_pkg"


@pytest.fixture
def demo_package(tmp_path, monkeypatch):
    """An importable package with data/prompts.txt inside, removed after the test."""
    folder = tmp_path / PACKAGE
    (folder / "data").mkdir(parents=True)
    (folder / "__init__.py").write_text("", encoding="utf-8")
    (folder / "data" / "prompts.txt").write_text("hello\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield folder
    sys.modules.pop(PACKAGE, None)


def test_data_path_finds_file_in_package(demo_package):
    path = data_path(PACKAGE, "data", "prompts.txt")
    assert path == demo_package / "data" / "prompts.txt"
    assert path.read_text(encoding="utf-8") == "hello\n"


def test_data_path_finds_folder_in_package(demo_package):
    assert data_path(PACKAGE, "data").is_dir()


def test_data_path_finds_file_in_installed_core():
    assert data_path("icml25_core", "py.typed").is_file()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"package": PACKAGE, "parts": ("data", "missing.txt")},
            FileNotFoundError,
            f"^'data/missing.txt' not found in package '{PACKAGE}' \\(looked in .*{PACKAGE}\\)$",
        ),
        (
            {"package": "icml25_no_such_package", "parts": ("x.txt",)},
            FileNotFoundError,
            "^package 'icml25_no_such_package' is not installed$",
        ),
        (
            {"package": f"{PACKAGE}.nope", "parts": ("x.txt",)},
            FileNotFoundError,
            f"package '{PACKAGE}.nope' is not installed",
        ),
        ({"package": 3, "parts": ("x",)}, TypeError, r"^`package` must be an import name \(str\)"),
        ({"package": PACKAGE, "parts": ("data", 1)}, TypeError, "^`parts` must be str, got int$"),
        ({"package": PACKAGE, "parts": ("..", "x")}, ValueError, "^`parts` must stay inside"),
        ({"package": PACKAGE, "parts": ("data/../../x",)}, ValueError, "must stay inside"),
        ({"package": PACKAGE, "parts": ("/etc/passwd",)}, ValueError, "must stay inside"),
    ],
)
def test_data_path_raises_on_bad_input(demo_package, kwargs, error, match):
    with pytest.raises(error, match=match):
        data_path(kwargs["package"], *kwargs["parts"])
