"""Prepare the release of one distribution: bump its version, date its changelog, print the tag.

Usage::

    python tools/release.py permucate 0.2.0             # a library under packages/
    python tools/release.py icml25-core 0.2.0           # the core
    python tools/release.py permucate 0.2.0 --dry-run   # say what would change, write nothing

Refuses a name that is neither ``icml25-core`` nor a library under ``packages/``, a version that
is not a normalised PEP 440 version greater than the current one, and a ``CHANGELOG.md`` without
a non-empty ``## Unreleased`` section. Then writes the version into the distribution's version
file (``[tool.hatch.version] path``), moves the Unreleased entries under
``## <version> (<date>)`` below a fresh, empty ``## Unreleased`` (Keep a Changelog), and prints
the tag ``<dist>-v<version>`` with the git commands that push it; the tag starts
``.github/workflows/release.yml``, which builds and publishes the distribution.
"""

import argparse
import datetime
import difflib
import sys
from dataclasses import dataclass
from pathlib import Path

from _catalogue import CORE_DIST, REPO_ROOT, distributions
from _pep440 import Version, VersionError
from release_check import VERSION_LINE, ReleaseError, core_requirement, read_version, version_file

UNRELEASED = "## Unreleased"
CHANGELOG = "CHANGELOG.md"


def tag_name(dist: str, version: str) -> str:
    """The tag that releases `version` of `dist`: ``permucate-v0.2.0``."""
    return f"{dist}-v{version}"


def check_version(new: str, current: str) -> None:
    """Refuse a `new` version that is not a normalised PEP 440 version above `current`.

    Raises
    ------
    ReleaseError
        If `new` is malformed or not greater than `current`.
    """
    try:
        if Version(new) <= Version(current):
            raise ReleaseError(f"version {new} is not greater than the current {current}")
    except VersionError as error:
        raise ReleaseError(str(error)) from error


def date_changelog(text: str, version: str, date: str) -> str:
    """Move the entries of ``## Unreleased`` under ``## <version> (<date>)``, leaving an empty
    ``## Unreleased`` above it.

    Raises
    ------
    ReleaseError
        If `text` has no ``## Unreleased`` heading, more than one, or nothing under it.
    """
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.rstrip() == UNRELEASED]
    if len(starts) != 1:
        raise ReleaseError(f"the changelog needs exactly one '{UNRELEASED}' heading")
    start = starts[0]
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    entries = "".join(lines[start + 1 : end]).strip("\n")
    if not entries.strip():
        raise ReleaseError(
            f"nothing to release: '{UNRELEASED}' of the changelog is empty; list the changes first"
        )
    before, after = "".join(lines[:start]), "".join(lines[end:])
    released = f"{UNRELEASED}\n\n## {version} ({date})\n\n{entries}\n"
    return before + released + (f"\n{after}" if after else "")


@dataclass(frozen=True)
class Release:
    """A prepared release: the distribution, its folder, both versions, the new file texts."""

    dist: str
    folder: Path
    current: str
    version: str
    changes: dict[Path, str]
    core_range: str | None  # the icml25-core specifiers a library requires; None: no such need

    @property
    def tag(self) -> str:
        return tag_name(self.dist, self.version)


def prepare(dist: str, version: str, date: str, root: Path = REPO_ROOT) -> Release:
    """Work out the release of `version` of `dist` on `date`, writing nothing.

    Raises
    ------
    ReleaseError
        If `dist` is unknown, `version` is not above the current one, or the version file or the
        changelog cannot be updated.
    """
    known = distributions(root)
    if dist not in known:
        close = difflib.get_close_matches(dist, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ReleaseError(f"unknown distribution {dist!r}{hint}; known: {', '.join(known)}")
    folder = known[dist]
    path = version_file(folder)
    current = read_version(path)
    check_version(version, current)
    changelog = folder / CHANGELOG
    if not changelog.is_file():
        raise ReleaseError(f"{changelog} not found")
    try:
        dated = date_changelog(changelog.read_text(encoding="utf-8"), version, date)
    except ReleaseError as error:
        raise ReleaseError(f"{changelog}: {error}") from error
    bumped = VERSION_LINE.sub(f'__version__ = "{version}"', path.read_text(encoding="utf-8"))
    core_range = None if dist == CORE_DIST else core_requirement(folder)
    return Release(dist, folder, current, version, {path: bumped, changelog: dated}, core_range)


def diff(release: Release, root: Path) -> str:
    """The unified diff of the files `release` changes."""
    return "".join(
        line
        for path, text in release.changes.items()
        for name in [path.relative_to(root).as_posix()]
        for line in difflib.unified_diff(
            path.read_text(encoding="utf-8").splitlines(keepends=True),
            text.splitlines(keepends=True),
            f"a/{name}",
            f"b/{name}",
        )
    )


def instructions(release: Release, root: Path) -> str:
    """What to run once the files are written: commit, merge, tag, push."""
    files = " ".join(path.relative_to(root).as_posix() for path in release.changes)
    title = f"{release.dist} {release.version}"
    lines = [
        f"tag: {release.tag}",
        "next: commit, get the commit onto main (push, or a pull request), then tag it:",
        f"  git add {files}",
        f'  git commit -m "{title}"',
        "  git push",
        f'  git tag -a {release.tag} -m "{title}"',
        f"  git push origin {release.tag}",
        "The tag starts .github/workflows/release.yml: it checks the tag against the version",
        "file, builds the sdist and wheel with hatch and publishes them to PyPI.",
    ]
    if release.core_range is not None:
        lines += [
            f"It fails unless PyPI has a release of {CORE_DIST}{release.core_range}:",
            f"release {CORE_DIST} first if {release.dist} needs a core not yet published.",
        ]
    return "\n".join(lines)


def _date(text: str) -> str:
    """argparse type: an ISO date (YYYY-MM-DD)."""
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date YYYY-MM-DD") from error


def main(argv=None, root: Path = REPO_ROOT) -> int:
    """Command line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python tools/release.py",
        description="Bump a distribution's version, date its changelog, print the tag to push.",
    )
    parser.add_argument("dist", help="icml25-core or a library under packages/, e.g. permucate")
    parser.add_argument("version", help="the new version, e.g. 0.2.0 (PEP 440, normalised)")
    parser.add_argument(
        "--date",
        type=_date,
        default=datetime.date.today().isoformat(),
        help="release date for the changelog (default: today, %(default)s)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the changes, write nothing")
    parser.add_argument(
        "--root", type=Path, default=root, help="repository root (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    root = Path(args.root)
    try:
        release = prepare(args.dist, args.version, args.date, root)
    except ReleaseError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"{release.dist}: {release.current} -> {release.version}")
    if args.dry_run:
        print(diff(release, root), end="")
        print("dry run: nothing written")
    else:
        for path, text in release.changes.items():
            path.write_text(text, encoding="utf-8")
    print(instructions(release, root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
