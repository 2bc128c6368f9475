"""The API site's static collection and its docstring gate, on a small library written here."""

import textwrap

import pytest

griffe = pytest.importorskip("griffe", reason="the docs tools run in the dev venv (griffe)")

import docs_screenshots  # noqa: E402
import docs_site  # noqa: E402

SOURCES = {
    "demo_lib/__init__.py": '''
        """demo-lib: says hello."""

        from demo_lib._impl import Greeter, greet, undocumented

        __version__ = "1.0"
        __all__ = ["__version__", "Greeter", "greet", "undocumented"]
        ''',
    "demo_lib/_impl.py": '''
        """Implementation."""


        def greet(name: str) -> str:
            """Say hello.

            Parameters
            ----------
            name : str
                Who.
            """
            return "hello " + name


        def undocumented():
            return 1


        class Greeter:
            """Greets.

            Parameters
            ----------
            name : str
                Who.
            Shape: nothing to see, but read as a parameter.
            """

            def __init__(self, name):
                self.name = name

            def greet(self):
                return greet(self.name)

            @property
            def loud(self):
                """The greeting in capitals."""
                return greet(self.name).upper()

            def _private(self):
                return None
        ''',
    "demo_lib/extra.py": '''
        """Needs an extra."""

        from demo_lib._impl import greet

        __all__ = ["greet", "shout"]


        def shout(name):
            """Shout."""
            return greet(name).upper()
        ''',
    "demo_lib/internal.py": '''
        """Only names the package exports."""

        from demo_lib._impl import greet

        __all__ = ["greet"]
        ''',
}


@pytest.fixture
def library(tmp_path):
    for name, text in SOURCES.items():
        path = tmp_path / "src" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (tmp_path / "README.md").write_text("# demo-lib\n")
    return docs_site.Library("demo-lib", tmp_path)


def test_documented_modules_are_the_package_and_modules_with_names_of_their_own(library):
    modules = docs_site.documented_modules(docs_site.load(library))
    assert [m.path for m in modules] == ["demo_lib", "demo_lib.extra"]
    assert docs_site.own_exports(modules[1], modules[0]) == ["shout"]


def test_missing_docstrings_and_unreadable_sections_are_named(library):
    problems = docs_site.missing_docstrings(library)
    assert "demo_lib.undocumented: no docstring" in problems
    assert "demo_lib.Greeter.greet: no docstring" in problems
    assert any(p.startswith("demo_lib.Greeter: docstring: ") and "Shape" in p for p in problems)
    documented = ("demo_lib.greet", "demo_lib.Greeter.loud", "demo_lib.Greeter._private")
    assert not [p for p in problems if p.startswith(documented)]
    assert not [p for p in problems if "extra.greet" in p]  # documented once, on the package


def test_check_exits_1_on_problems_and_0_without(library, capsys, monkeypatch):
    assert docs_site.check([library]) == 1
    assert "problems in 1 distributions" in capsys.readouterr().out
    fixed = {
        "def undocumented():\n": 'def undocumented():\n    """One."""\n',
        "    def greet(self):\n": '    def greet(self):\n        """Greet."""\n',
        "    Shape: nothing to see, but read as a parameter.\n": "",
    }
    path = library.src / "demo_lib" / "_impl.py"
    text = path.read_text()
    for old, new in fixed.items():
        text = text.replace(old, new)
    path.write_text(text)
    assert docs_site.check([library]) == 0


def test_separate_lists_adds_the_blank_line_python_markdown_needs():
    text = "What to pass:\n- a\n- b\n\n```\nx:\n- not a list\n```\n| t |\n- c"
    assert docs_site.separate_lists(text) == (
        "What to pass:\n\n- a\n- b\n\n```\nx:\n- not a list\n```\n| t |\n- c"
    )


def test_page_links_point_into_the_librarys_copied_files(library):
    (library.folder / "examples" / "app").mkdir(parents=True)
    (library.folder / "examples" / "app" / "README.md").write_text("# app\n")
    text = (
        "![fig](docs/a.png) [r](benchmarks/RESULTS.md) [app](examples/app) [w](https://x.y) "
        "[s](#usage)"
    )
    assert docs_site._page_links(text, library) == (
        "![fig](demo-lib/docs/a.png) [r](demo-lib/benchmarks/RESULTS.md) "
        "[app](demo-lib/examples/app/README.md) [w](https://x.y) [s](#usage)"
    )


def test_screenshot_inspection_counts_typeset_and_raw_formulas():
    dom = (
        '<span class="arithmatex"><span class="katex">x</span></span>'
        '<div class="arithmatex">\\[ y \\]</div><table></table><div class="doc doc-object x">'
    )
    assert docs_screenshots.inspect(dom) == {
        "formulas": 2, "typeset": 1, "errors": 0, "tables": 1, "api entries": 1,
    }  # fmt: skip


def test_links_inside_code_are_left_alone(library):
    text = "`net[0](x)` and ![f](docs/a.png)\n```python\ny = net[0](x)\n```\n[r](b/R.md)"
    assert docs_site._page_links(text, library) == (
        "`net[0](x)` and ![f](demo-lib/docs/a.png)\n```python\ny = net[0](x)\n```\n"
        "[r](demo-lib/b/R.md)"
    )


def test_write_refuses_a_katex_folder_without_katex_or_nested_in_the_output(tmp_path):
    with pytest.raises(SystemExit, match=r"no katex\.min\.js"):
        docs_site.write(tmp_path / "out", tmp_path)
    (tmp_path / "katex.min.js").write_text("")
    with pytest.raises(SystemExit, match="must not contain each other"):
        docs_site.write(tmp_path / "out", tmp_path)
    (tmp_path / "site" / "docs").mkdir(parents=True)
    katex = tmp_path / "k"
    katex.mkdir()
    (katex / "katex.min.js").write_text("")
    with pytest.raises(SystemExit, match="not a site this tool wrote"):
        docs_site.write(tmp_path / "site", katex)


def test_a_misspelt_numpydoc_section_is_named_and_own_headings_are_not(library):
    path = library.src / "demo_lib" / "_impl.py"
    text = path.read_text().replace(
        '"""Say hello.\n\n    Parameters\n    ----------',
        '"""Say hello.\n\n    Usage notes\n    -----------\n    Free text.\n\n'
        "    Parametres\n    ----------",
    )
    path.write_text(text)
    problems = docs_site.missing_docstrings(library)
    assert (
        "demo_lib.greet: docstring: section 'Parametres' is not numpydoc's 'Parameters' "
        "(misspelt?)" in problems
    )
    assert not [p for p in problems if "Usage notes" in p]


def test_check_takes_the_core_folder_name(capsys):
    assert docs_site.main(["check", "shared"]) == 0
    assert "complete in 1 distributions" in capsys.readouterr().out
