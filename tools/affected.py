"""Which distributions a change touches: the selection the CI workflow tests, as a JSON list.

Usage::

    python tools/affected.py --base origin/main            # paths of git diff origin/main...HEAD
    python tools/affected.py --base A --head B             # paths of git diff A...B
    python tools/affected.py packages/permucate/README.md  # paths given on the command line
    git diff --name-only A B | python tools/affected.py -  # paths read from stdin
    python tools/affected.py --all                         # everything

Each changed path selects (first rule that matches):

- ``shared/``, ``tools/``, ``.github/``, ``.ci/``, ``noxfile.py``, ``pyproject.toml``: everything,
  i.e. the core, the tools and every library (they all build and test on these);
- ``packages/<dist>/...`` or ``kernels/<dist>/...``: that library, if it exists in the checkout
  (a removed library has nothing left to test; ``kernels/README.md`` is no library either);
- ``README.md``, ``CONTRIBUTING.md``: nothing beyond the lint job, which runs on every change;
- any other path: everything, since no rule says it cannot matter (``.gitignore`` shapes sdists).

Prints the selection as a JSON list for a workflow matrix: ``icml25-core`` first, then ``tools``,
then the libraries in folder order; ``[]`` when nothing needs testing. A ``--base`` git does not
know (a new branch's all-zero "before", a commit gone after a force push) selects everything.
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path, PurePosixPath

from _catalogue import CORE_DIST, REPO_ROOT, distributions

TOOLS = "tools"
EVERYTHING_DIRS = ("shared", "tools", ".github", ".ci")
EVERYTHING_FILES = ("noxfile.py", "pyproject.toml")
LIBRARY_DIRS = ("packages", "kernels")
LINT_ONLY_FILES = ("README.md", "CONTRIBUTING.md")


class AffectedError(ValueError):
    """The changed paths cannot be listed (git failed on the head revision)."""


def everything(root: Path = REPO_ROOT) -> list[str]:
    """The whole selection: the core, the tools, then every library."""
    libraries = [dist for dist in distributions(root) if dist != CORE_DIST]
    return [CORE_DIST, TOOLS, *libraries]


def affected(paths: list[str], root: Path = REPO_ROOT) -> list[str]:
    """The distributions (plus ``tools``) that changes to `paths` call for testing.

    Parameters
    ----------
    paths : list of str
        Changed files relative to the repository root, ``/``-separated (as git prints them).
    root : Path
        The checkout the selection is for (its ``packages/*`` are the libraries).

    Raises
    ------
    TypeError
        If `paths` is a str rather than a list of them.
    """
    if isinstance(paths, str):
        raise TypeError("paths must be a list of paths, not one str")
    full = everything(root)
    selected = set()
    for path in filter(None, (p.strip() for p in paths)):
        parts = PurePosixPath(path).parts
        if parts[0] in EVERYTHING_DIRS or "/".join(parts) in EVERYTHING_FILES:
            return full
        if parts[0] in LIBRARY_DIRS and len(parts) > 1:
            selected.add(parts[1])  # kept below only if it is a library of the checkout
        elif "/".join(parts) not in LINT_ONLY_FILES:
            return full
    return [name for name in full if name in selected]


def changed_paths(base: str, head: str, root: Path = REPO_ROOT) -> list[str] | None:
    """The files ``git diff base...head`` lists (both sides of a rename); ``None`` when git does
    not know `base` (a new branch's all-zero commit, one dropped by a force push).

    Raises
    ------
    AffectedError
        If git fails on `head` or the diff itself.
    """
    known = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    if known.returncode != 0:
        return None
    diff = subprocess.run(
        ["git", "-C", str(root), "diff", "--name-only", "--no-renames", f"{base}...{head}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if diff.returncode != 0:
        raise AffectedError(f"git diff {base}...{head} failed: {diff.stderr.strip()}")
    return diff.stdout.splitlines()


def main(argv=None, root: Path = REPO_ROOT) -> int:
    """Command line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python tools/affected.py",
        description="Print, as a JSON list, the distributions a change calls for testing.",
    )
    parser.add_argument("paths", nargs="*", help="changed paths; '-' reads them from stdin")
    parser.add_argument("--base", help="list the paths of git diff BASE...HEAD")
    parser.add_argument("--head", default="HEAD", help="with --base (default: %(default)s)")
    parser.add_argument("--all", action="store_true", help="select everything")
    parser.add_argument(
        "--root", type=Path, default=root, help="repository root (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    if sum((bool(args.paths), args.base is not None, args.all)) != 1:
        parser.error("give exactly one of: paths (or '-' for stdin), --base REF, --all")
    if args.all:
        paths = None
    elif args.base is not None:
        try:
            paths = changed_paths(args.base, args.head, args.root)
        except AffectedError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        if paths is None:
            print(f"note: git does not know {args.base!r}: selecting everything", file=sys.stderr)
    elif args.paths == ["-"]:
        paths = sys.stdin.read().splitlines()
    else:
        paths = args.paths
    selection = everything(args.root) if paths is None else affected(paths, args.root)
    print(json.dumps(selection))
    return 0


if __name__ == "__main__":
    sys.exit(main())
