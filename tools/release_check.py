"""The release workflow's checks on a pushed tag ``<dist>-v<version>``, before it builds.

Usage::

    python tools/release_check.py permucate-v0.2.0 --core-index icml25-core.json
    python tools/release_check.py icml25-core-v0.2.0

1. The tag names a distribution of the repository (``icml25-core`` or a library under
   ``packages/``) and a normalised PEP 440 version.
2. That version is the one in the distribution's version file (``[tool.hatch.version] path``,
   ``src/<import>/_version.py``).
3. For a library that depends on ``icml25-core``: a release of the core published on PyPI
   satisfies the library's range. ``--core-index`` is PyPI's JSON of the core
   (https://pypi.org/pypi/icml25-core/json, ``{"releases": {}}`` while none is published); yanked
   releases do not count, pre-releases only if the range names one (``_pep440``).

On success prints ``dist=``, ``folder=`` and ``version=`` lines (for ``$GITHUB_OUTPUT``); on
failure one ``error:`` line saying what to do, and exit status 1.
"""

import argparse
import json
import re
import sys
from pathlib import Path

from _catalogue import CORE_DIST, REPO_ROOT, CatalogueError, distributions, normalize, read_toml
from _pep440 import Version, VersionError, satisfying

TAG = re.compile(r"(?P<dist>.+)-v(?P<version>[^-]+)")  # versions hold no '-', names may
VERSION_LINE = re.compile(r"^__version__ *= *[\"'](?P<version>[^\"'\n]*)[\"'] *$", re.MULTILINE)
# a PEP 508 requirement: name, [extras], specifiers up to the ';' of its markers
REQUIREMENT = re.compile(r"\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?(?P<spec>[^;]*)")


class ReleaseError(ValueError):
    """A release cannot go ahead; the message says why and what to do."""


def split_tag(tag: str, root: Path = REPO_ROOT) -> tuple[str, str]:
    """``permucate-v0.2.0`` -> ``("permucate", "0.2.0")``.

    Raises
    ------
    ReleaseError
        If `tag` is not ``<dist>-v<version>`` for a distribution of `root` and a normalised
        PEP 440 version.
    """
    match = TAG.fullmatch(tag)
    known = distributions(root)
    if not match or match["dist"] not in known:
        raise ReleaseError(
            f"tag {tag!r} is not <dist>-v<version> for a distribution of this repository "
            f"({', '.join(known)})"
        )
    try:
        Version(match["version"])
    except VersionError as error:
        raise ReleaseError(f"tag {tag!r}: {error}") from error
    return match["dist"], match["version"]


def version_file(folder: Path) -> Path:
    """The file holding a distribution's ``__version__``: its ``[tool.hatch.version] path``.

    Raises
    ------
    ReleaseError
        If the pyproject names no such file or the file does not exist.
    """
    try:
        relative = read_toml(folder / "pyproject.toml")["tool"]["hatch"]["version"]["path"]
    except (KeyError, TypeError, FileNotFoundError, CatalogueError) as error:
        raise ReleaseError(
            f"{folder / 'pyproject.toml'} names no version file ([tool.hatch.version] path)"
        ) from error
    path = folder / relative
    if not path.is_file():
        raise ReleaseError(f"{path} not found ([tool.hatch.version] path of {folder.name})")
    return path


def read_version(path: Path) -> str:
    """The ``__version__ = "..."`` string of a version file.

    Raises
    ------
    ReleaseError
        If the file has no such line, or more than one.
    """
    found = VERSION_LINE.findall(path.read_text(encoding="utf-8"))
    if len(found) != 1:
        raise ReleaseError(f'{path} must hold exactly one line __version__ = "X.Y.Z"')
    return found[0]


def core_requirement(folder: Path) -> str | None:
    """The specifiers of the ``icml25-core`` dependency in `folder`'s pyproject (``""`` for any
    version), or ``None`` if it does not depend on the core.

    Raises
    ------
    ReleaseError
        If the core is listed more than once (e.g. under different markers).
    """
    dependencies = read_toml(folder / "pyproject.toml").get("project", {}).get("dependencies", [])
    specs = [
        match["spec"].strip().strip("()")
        for entry in dependencies
        if (match := REQUIREMENT.match(entry)) and normalize(match["name"]) == CORE_DIST
    ]
    if len(specs) > 1:
        raise ReleaseError(f"{folder.name} lists {CORE_DIST} {len(specs)} times; keep one range")
    return specs[0] if specs else None


def published_versions(index: dict) -> list[str]:
    """The versions of PyPI's JSON of a project (``/pypi/<name>/json``) that have files and are
    not yanked.

    Raises
    ------
    ReleaseError
        If `index` has no ``releases`` table.
    """
    releases = index.get("releases") if isinstance(index, dict) else None
    if not isinstance(releases, dict):
        raise ReleaseError("the core index is not PyPI's JSON of a project (no 'releases' table)")
    return [
        version
        for version, files in releases.items()
        if any(not file.get("yanked", False) for file in files)
    ]


def check_core(dist: str, specifiers: str, versions: list[str]) -> str:
    """The highest of `versions` (published core releases) that `specifiers` accepts.

    Raises
    ------
    ReleaseError
        If none does: the core must be released first.
    VersionError
        If `specifiers` or a version is outside the PEP 440 subset of ``_pep440``.
    """
    matching = satisfying(specifiers, versions)
    if not matching:
        published = ", ".join(sorted(versions, key=Version)) or "none"
        raise ReleaseError(
            f"{dist} requires {CORE_DIST}{specifiers}, which no release of {CORE_DIST} on PyPI "
            f"satisfies (published: {published}): release {CORE_DIST} first "
            f"(python tools/release.py {CORE_DIST} <version>, then push {CORE_DIST}-v<version>)"
        )
    return matching[0]


def check(tag: str, core_index: dict | None, root: Path = REPO_ROOT) -> dict[str, str]:
    """Run the checks on `tag`; return the ``dist``, ``folder`` and ``version`` to build.

    Raises
    ------
    ReleaseError
        If a check fails, or a library needs `core_index` and none was given.
    """
    dist, version = split_tag(tag, root)
    folder = distributions(root)[dist]
    path = version_file(folder)
    current = read_version(path)
    if current != version:
        raise ReleaseError(
            f"tag {tag} says {version} but {path.relative_to(root).as_posix()} says {current}: "
            "tag the version the file holds (python tools/release.py bumps it)"
        )
    specifiers = None if dist == CORE_DIST else core_requirement(folder)
    if specifiers is not None:
        if core_index is None:
            raise ReleaseError(f"{dist} depends on {CORE_DIST}: give --core-index")
        try:
            core = check_core(dist, specifiers, published_versions(core_index))
        except VersionError as error:
            raise ReleaseError(f"{dist} needs {CORE_DIST}{specifiers}: {error}") from error
        print(f"{dist} needs {CORE_DIST}{specifiers}: PyPI has {core}", file=sys.stderr)
    return {"dist": dist, "folder": folder.relative_to(root).as_posix(), "version": version}


def main(argv=None, root: Path = REPO_ROOT) -> int:
    """Command line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python tools/release_check.py",
        description="Check a release tag <dist>-v<version> before the workflow builds it.",
    )
    parser.add_argument("tag", help="e.g. permucate-v0.2.0 or icml25-core-v0.2.0")
    parser.add_argument(
        "--core-index", type=Path, help="PyPI's JSON of icml25-core (/pypi/icml25-core/json)"
    )
    parser.add_argument(
        "--root", type=Path, default=root, help="repository root (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    try:
        index = None
        if args.core_index is not None:
            try:
                index = json.loads(args.core_index.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as error:
                raise ReleaseError(f"--core-index {args.core_index}: {error}") from error
        result = check(args.tag, index, Path(args.root))
    except ReleaseError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for key, value in result.items():
        print(f"{key}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
