"""Render the root README's table of libraries from the catalogue and the libraries' cards.

The rows come from ``tools/libraries.toml`` (one per planned library, in its order); a library
that exists (``packages/<dist>/pyproject.toml``) adds the status and one-line usage of its
``[tool.icml25]`` card. The table lives in README.md between ``<!-- libraries:start -->`` and
``<!-- libraries:end -->``.

Usage::

    python tools/readme_table.py            # print the table
    python tools/readme_table.py --write    # update README.md
    python tools/readme_table.py --check    # exit 1 if README.md's table is stale (nox -s lint)
"""

import argparse
import sys
from pathlib import Path

from _catalogue import (
    CATALOGUE,
    REPO_ROOT,
    STATUSES,
    CatalogueError,
    card,
    load_catalogue,
    package_dirs,
)

START = "<!-- libraries:start -->"
END = "<!-- libraries:end -->"
HEADER = ("Library", "Paper", "Field", "Status", "Usage")
NO_USAGE = "—"
# Card keys that restate the catalogue; they must agree with it.
RESTATED = ("paper", "authors", "arxiv", "field")


def _cell(text: str) -> str:
    """Make `text` safe inside a markdown table cell."""
    return str(text).replace("|", r"\|").replace("\n", " ").strip()


def _code(text: str) -> str:
    """Inline code that survives backticks inside `text`."""
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def collect(root: Path = REPO_ROOT) -> tuple[list[list[str]], list[str]]:
    """Build the table rows and the list of problems found on the way.

    Problems: a ``packages/*`` folder missing from the catalogue, a card whose status is not one
    of ``done``, ``in progress``, ``planned``, or whose paper / authors / arxiv / field disagree
    with the catalogue.

    Raises
    ------
    CatalogueError
        If the catalogue or a pyproject cannot be read.
    """
    root = Path(root)
    libraries = load_catalogue(root)
    problems = []
    known = {library.dist for library in libraries}
    for folder in package_dirs(root):
        if folder.name not in known:
            problems.append(
                f"packages/{folder.name}/ is not in {CATALOGUE}: add a [[library]] entry "
                "(dist, paper, authors, arxiv, field) so it appears in the README table"
            )
    rows = []
    for library in libraries:
        folder = root / "packages" / library.dist
        pyproject = folder / "pyproject.toml"
        name = f"[{library.dist}](packages/{library.dist}/)" if folder.is_dir() else library.dist
        status, usage = "planned", ""
        if pyproject.is_file():
            info = card(pyproject)
            where = f"packages/{library.dist}/pyproject.toml [tool.icml25]"
            status = info.get("status", "")
            usage = str(info.get("usage", "")).strip()
            if status not in STATUSES:
                problems.append(
                    f"{where}: status {status!r} must be one of {', '.join(map(repr, STATUSES))}"
                )
                status = status or "in progress"
            for key in RESTATED:
                if key in info and info[key] != getattr(library, key):
                    problems.append(
                        f"{where}: {key} {info[key]!r} differs from {CATALOGUE} "
                        f"({getattr(library, key)!r}); make them agree"
                    )
        paper = _cell(library.paper)
        if library.arxiv:
            paper = f"[{paper}](https://arxiv.org/abs/{library.arxiv})"
        rows.append(
            [
                name,
                paper,
                _cell(library.field),
                _cell(status),
                _cell(_code(usage)) if usage else NO_USAGE,
            ]
        )
    return rows, problems


def render(rows: list[list[str]]) -> str:
    """The markdown table, without a trailing newline."""
    lines = [HEADER, ["---"] * len(HEADER), *rows]
    return "\n".join(f"| {' | '.join(line)} |" for line in lines)


def table(root: Path = REPO_ROOT) -> str:
    """The markdown table of the libraries under `root`."""
    return render(collect(root)[0])


def _split(text: str) -> tuple[str, str, str]:
    """Split README text into (before, table, after) around the markers.

    Raises
    ------
    ValueError
        If a marker is missing, repeated or out of order.
    """
    starts, ends = text.count(START), text.count(END)
    if starts != 1 or ends != 1:
        raise ValueError(
            f"README.md must hold exactly one {START} and one {END} (found {starts} and {ends}); "
            "put the pair where the table goes, then run `python tools/readme_table.py --write`"
        )
    before, rest = text.split(START)
    if END not in rest:
        raise ValueError(f"README.md: {END} comes before {START}; swap them")
    inside, after = rest.split(END)
    return before, inside, after


def replace_table(text: str, new_table: str) -> str:
    """Return README `text` with the table between the markers replaced by `new_table`."""
    before, _, after = _split(text)
    return f"{before}{START}\n{new_table}\n{END}{after}"


def is_current(text: str, new_table: str) -> bool:
    """Whether README `text` already holds `new_table` between its markers."""
    return _split(text)[1].strip() == new_table.strip()


def main(argv=None, root: Path = REPO_ROOT) -> int:
    """Command line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python tools/readme_table.py",
        description="Render the root README's table of libraries from tools/libraries.toml and "
        "the [tool.icml25] cards of packages/*/pyproject.toml.",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="update the table in README.md")
    mode.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if README.md's table is stale, its markers are missing, "
        "or a packages/* folder is not in the catalogue",
    )
    parser.add_argument(
        "--root", type=Path, default=root, help="repository root (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    root = Path(args.root)
    readme = root / "README.md"
    try:
        rows, problems = collect(root)
    except CatalogueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    new_table = render(rows)
    for problem in problems:
        print(f"{'error' if args.check else 'warning'}: {problem}", file=sys.stderr)
    if not (args.write or args.check):
        print(new_table)
        return 0
    if not readme.is_file():
        print(
            f"error: {readme} not found; create it with a {START} / {END} pair where the "
            "table goes, then run `python tools/readme_table.py --write`",
            file=sys.stderr,
        )
        return 1
    text = readme.read_text(encoding="utf-8")
    try:
        current = is_current(text, new_table)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.write:
        if not current:
            readme.write_text(replace_table(text, new_table), encoding="utf-8")
            print(f"updated the table of libraries in {readme}")
        else:
            print(f"{readme}: the table of libraries is up to date")
        return 0
    if not current:
        print(
            "error: README.md's table of libraries is stale (the catalogue or a library's "
            "[tool.icml25] card changed); run `python tools/readme_table.py --write`",
            file=sys.stderr,
        )
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
