"""Print the Debian packages that the cards of the named distributions list (``debian = [...]``).

The CI workflow installs them with ``sudo apt-get`` before nox runs, since the nox sessions
install them only as root. ``icml25-core`` and ``tools`` have no card and need none.

Usage::

    python tools/debian_packages.py fedswa laion-c   # -> dataset-fashion-mnist opencv-doc
"""

import argparse
import sys
from pathlib import Path

from _catalogue import REPO_ROOT, CatalogueError, card, distributions

NO_CARD = ("icml25-core", "tools")


def debian_packages(names: list[str], root: Path = REPO_ROOT) -> list[str]:
    """The ``debian`` packages of the named libraries' cards, each once, in order.

    Raises
    ------
    CatalogueError
        If a name is neither a library under ``packages/`` nor ``icml25-core`` / ``tools``, or a
        card's ``debian`` is not a list of str.
    """
    libraries = distributions(root)
    packages = []
    for name in names:
        if name in NO_CARD:
            continue
        if name not in libraries:
            known = ", ".join(sorted({*NO_CARD, *libraries}))
            raise CatalogueError(f"unknown distribution {name!r}; known: {known}")
        listed = card(libraries[name] / "pyproject.toml").get("debian", [])
        if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
            raise CatalogueError(
                f"packages/{name}/pyproject.toml [tool.icml25] debian must be a list of str"
            )
        packages.extend(listed)
    return list(dict.fromkeys(packages))


def main(argv=None, root: Path = REPO_ROOT) -> int:
    """Command line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python tools/debian_packages.py",
        description="Print the Debian packages the libraries' cards list, space-separated.",
    )
    parser.add_argument("names", nargs="+", help="distributions, e.g. fedswa icml25-core tools")
    parser.add_argument(
        "--root", type=Path, default=root, help="repository root (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    try:
        packages = debian_packages(args.names, args.root)
    except CatalogueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(" ".join(packages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
