"""Scaffold a new library under ``packages/<dist>/``, prefilled from the catalogue.

The layout follows CONTRIBUTING.md and the exemplar ``packages/permucate``: a hatchling
pyproject with its ``[tool.icml25]`` card, the README card's sections, a changelog, the package
with its console script and a ``reproduce`` stub that says it is not written yet, a test of the
console script and a benchmark results template. A library new to the catalogue gets its
``[[library]]`` entry there, and the root README's table is refreshed, so ``nox -s lint`` passes
on the scaffold as it is. The file templates are in
``tools/templates/library/`` (``string.Template``: ``$dist``, ``$import_name``, ``$paper``, ...).

Usage::

    python tools/new_library.py quest-qat
    python tools/new_library.py my-method --paper "Title" --arxiv 2501.00001 --authors "Doe et al."
"""

import argparse
import json
import keyword
import sys
import textwrap
from pathlib import Path
from string import Template

import readme_table
from _catalogue import (
    ARXIV_ID,
    CATALOGUE,
    CORE_DIST,
    DIST_NAME,
    FIELDS,
    REPO_ROOT,
    CatalogueError,
    Library,
    import_name,
    load_catalogue,
)

TEMPLATES = Path(__file__).resolve().parent / "templates" / "library"
SUFFIX = ".tmpl"
DOC_WIDTH = 96  # docstring lines stay within ruff's line-length of 100
MAX_NAME = 32  # longer names would push the generated files past the line-length


class ScaffoldError(ValueError):
    """The library cannot be scaffolded (bad name, existing folder, unknown paper)."""


def validate_name(dist: str) -> None:
    """Refuse names that are not ``lowercase-words-with-digits`` or would shadow a module.

    Raises
    ------
    ScaffoldError
        If `dist` is not lowercase letters, digits and single '-' (starting with a letter), is
        longer than ``MAX_NAME``, or its import name is a Python keyword, a standard library
        module or the core's.
    """
    if not DIST_NAME.fullmatch(dist):
        raise ScaffoldError(
            f"library name {dist!r} must be lowercase letters and digits in words joined by "
            "single '-', starting with a letter (e.g. 'quest-qat')"
        )
    if len(dist) > MAX_NAME:
        raise ScaffoldError(f"library name {dist!r} is longer than {MAX_NAME} characters")
    name = import_name(dist)
    if keyword.iskeyword(name) or name in sys.stdlib_module_names:
        raise ScaffoldError(
            f"library name {dist!r} would import as {name!r}, which shadows Python's own module "
            "or keyword; choose another name"
        )
    if dist in (CORE_DIST, "icml25", "shared", "tools"):
        raise ScaffoldError(
            f"{dist!r} is reserved for the repository's core and tooling (nox, CI selection)"
        )


def _toml(text: str) -> str:
    """A TOML basic string (JSON's escapes are valid TOML)."""
    return json.dumps(text, ensure_ascii=False)


def _doc(text: str, indent: str = "") -> str:
    """`text` wrapped for a docstring, with backslashes and quote runs escaped."""
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return textwrap.fill(
        text,
        DOC_WIDTH,
        initial_indent=indent,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def _bibtex_authors(authors: str) -> str:
    """``'Li, Zhang & Bareinboim'`` -> ``'Li and Zhang and Bareinboim'``; et al. -> and others."""
    text = authors.strip()
    others = text.endswith("et al.")
    if others:
        text = text[: -len("et al.")].strip()
    names = [n.strip() for n in text.replace("&", ",").replace(" and ", ",").split(",")]
    names = [n for n in names if n] + (["others"] if others else [])
    return " and ".join(names)


def _bibtex(library: Library) -> str:
    key = library.dist.replace("-", "") + "2025"
    fields = [
        ("title", "{" + library.paper + "}"),
        ("author", _bibtex_authors(library.authors)),
        ("booktitle", "Proceedings of the 42nd International Conference on Machine Learning"),
        ("year", "2025"),
    ]
    if library.arxiv:
        fields.append(("eprint", library.arxiv))
        fields.append(("archivePrefix", "arXiv"))
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
    return f"@inproceedings{{{key},\n{body}\n}}"


def substitutions(library: Library) -> dict[str, str]:
    """The template variables for `library`."""
    arxiv_url = f"https://arxiv.org/abs/{library.arxiv}" if library.arxiv else ""
    paper_link = f'"[{library.paper}]({arxiv_url})"' if arxiv_url else f'"{library.paper}"'
    reference = f'{library.authors}, "{library.paper}", ICML 2025'
    reference += f", arXiv:{library.arxiv} ({arxiv_url})." if arxiv_url else "."
    urls = f'\n[project.urls]\nPaper = "{arxiv_url}"\n' if arxiv_url else ""
    return {
        "dist": library.dist,
        "import_name": library.import_name,
        "paper": library.paper,
        "authors": library.authors,
        "arxiv": library.arxiv,
        "field": library.field,
        "paper_link": paper_link,
        "paper_toml": _toml(library.paper),
        "authors_toml": _toml(library.authors),
        "arxiv_toml": _toml(library.arxiv),
        "field_toml": _toml(library.field),
        "description_toml": _toml(f"{library.paper} (ICML 2025)"),
        "urls": urls,
        "docstring_title": _doc(f"{library.paper}."),
        "docstring_reference": _doc(reference),
        "cli_docstring": _doc(
            f'Console script of {library.dist}, the library for "{library.paper}" (ICML 2025).'
        ),
        "bibtex": _bibtex(library),
    }


def render(library: Library) -> dict[Path, str]:
    """Relative path -> content of every file of the new library.

    Raises
    ------
    KeyError
        If a template uses a variable :func:`substitutions` does not define.
    """
    values = substitutions(library)
    files = {}
    for template in sorted(TEMPLATES.rglob(f"*{SUFFIX}")):
        relative = template.relative_to(TEMPLATES).as_posix()[: -len(SUFFIX)]
        path = Path(Template(relative).substitute(values))
        files[path] = Template(template.read_text(encoding="utf-8")).substitute(values)
    return files


def resolve_library(
    dist: str,
    root: Path = REPO_ROOT,
    paper: str | None = None,
    arxiv: str | None = None,
    authors: str | None = None,
    field: str | None = None,
) -> tuple[Library, bool]:
    """The library's card from the catalogue, overridden by the given values.

    Returns
    -------
    tuple of (Library, bool)
        The card and whether `dist` is in the catalogue.

    Raises
    ------
    ScaffoldError
        If the name is invalid, or not in the catalogue and `paper` is not given, or `arxiv` is
        not an arXiv id.
    """
    validate_name(dist)
    try:
        catalogue = {library.dist: library for library in load_catalogue(root)}
    except CatalogueError as error:
        raise ScaffoldError(str(error)) from error
    known = dist in catalogue
    if not known and not paper:
        raise ScaffoldError(
            f"{dist!r} is not in {CATALOGUE}; check the spelling (known: "
            f"{', '.join(sorted(catalogue))}), or give --paper (and --arxiv, --authors, --field) "
            "for a library not planned there"
        )
    if arxiv and not ARXIV_ID.fullmatch(arxiv):
        raise ScaffoldError(f"--arxiv {arxiv!r} is not an arXiv id such as '2502.05003'")
    base = catalogue.get(dist) or Library(dist, "", "TODO: authors", "", "TODO: field")
    library = Library(
        dist=dist,
        paper=paper or base.paper,
        authors=authors or base.authors,
        arxiv=base.arxiv if arxiv is None else arxiv,
        field=field or base.field,
    )
    return library, known


def scaffold(library: Library, root: Path = REPO_ROOT) -> list[Path]:
    """Write the new library under ``packages/<dist>/``; return the files created.

    Raises
    ------
    ScaffoldError
        If ``packages/<dist>/`` already exists.
    """
    validate_name(library.dist)
    folder = Path(root) / "packages" / library.dist
    if folder.exists():
        raise ScaffoldError(f"{folder} already exists; refusing to overwrite it")
    files = render(library)
    created = []
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        created.append(path)
    return created


def add_to_catalogue(library: Library, root: Path = REPO_ROOT) -> None:
    """Append `library`'s ``[[library]]`` entry to the catalogue (for a name not in it yet)."""
    path = Path(root) / CATALOGUE
    text = path.read_text(encoding="utf-8").rstrip("\n")
    lines = ["[[library]]", *(f"{key} = {_toml(getattr(library, key))}" for key in FIELDS)]
    entry = "\n".join(lines) + "\n"
    path.write_text(f"{text}\n\n{entry}" if text else entry, encoding="utf-8")


def refresh_readme_table(root: Path = REPO_ROOT) -> str:
    """Rewrite the root README's table of libraries; return what was done, for the user."""
    readme = Path(root) / "README.md"
    if not readme.is_file():
        return f"no {readme.name} at {root}: table not written"
    text = readme.read_text(encoding="utf-8")
    try:
        new_table = readme_table.table(root)
        if readme_table.is_current(text, new_table):
            return "README.md's table of libraries is up to date"
        readme.write_text(readme_table.replace_table(text, new_table), encoding="utf-8")
    except (CatalogueError, ValueError) as error:
        return f"README.md's table not updated: {error}"
    return "updated README.md's table of libraries (it lists the new library as 'in progress')"


def next_steps(library: Library, in_catalogue: bool) -> str:
    dist, name = library.dist, library.import_name
    steps = [
        f"Add the field's dependencies to packages/{dist}/pyproject.toml (ranges, not pins; "
        "heavy or optional parts behind extras).",
        f"Write src/{name}/ with modules named after the paper's concepts, export them in "
        f"__init__.py's __all__, and their tests in tests/test_<concept>.py.",
        f"Write src/{name}/reproduce.py's run() on real input and replace the two "
        "'not written yet' tests in tests/test_cli.py.",
        "Fill README.md's TODO sections, the card's usage line and the CHANGELOG.",
        f"nox -s tests -- {dist}",
        f"nox -s reproduce -- {dist}",
        "nox -s lint   (ruff, tools/check_imports.py, tools/readme_table.py --check)",
        f"nox -s build -- {dist}",
        "After editing the card ([tool.icml25]: usage, status): "
        "python tools/readme_table.py --write",
    ]
    if not in_catalogue:
        steps.insert(
            0, f"Complete {dist!r}'s entry in {CATALOGUE} (authors, arxiv, field) and the card."
        )
    return "\n".join(f"  {number}. {step}" for number, step in enumerate(steps, start=1))


def main(argv=None, root: Path = REPO_ROOT) -> int:
    """Command line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python tools/new_library.py",
        description="Scaffold packages/<dist>/ for a paper of tools/libraries.toml.",
    )
    parser.add_argument("dist", help="distribution name, e.g. quest-qat (import name quest_qat)")
    parser.add_argument("--paper", help="paper title (required if dist is not in the catalogue)")
    parser.add_argument("--arxiv", help="arXiv id, e.g. 2502.05003 ('' for none)")
    parser.add_argument("--authors", help="e.g. 'Doe et al.'")
    parser.add_argument("--field", help="e.g. 'LLM quantization'")
    parser.add_argument(
        "--root", type=Path, default=root, help="repository root (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    root = Path(args.root)
    try:
        library, known = resolve_library(
            args.dist, root, args.paper, args.arxiv, args.authors, args.field
        )
        created = scaffold(library, root)
    except ScaffoldError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if not known:  # every file is written before anything is printed
        add_to_catalogue(library, root)
    table_news = refresh_readme_table(root)
    print(f"created packages/{library.dist}/ for {library.paper!r}:")
    for path in created:
        print(f"  {path.relative_to(root).as_posix()}")
    if not known:
        print(f"added a [[library]] entry for {library.dist!r} to {CATALOGUE}")
    print(table_news)
    if known and any(v is not None for v in (args.paper, args.arxiv, args.authors, args.field)):
        print(f"note: update {CATALOGUE} to match the values given on the command line")
    print("next steps:")
    print(next_steps(library, known))
    return 0


if __name__ == "__main__":
    sys.exit(main())
