"""Import a library with the distributions of its extras made unimportable.

A library's top-level ``import`` must work with its required dependencies alone. In a test venv
the extras are installed too, so the check runs ``import <lib>`` in a subprocess whose
``sys.meta_path`` refuses the import names of every distribution that only the extras bring (and
not also, directly or transitively, the required dependencies).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import deque
from importlib import metadata

from packaging.requirements import Requirement

__all__ = ["blocked_import_names", "extras_only_distributions", "import_without"]

# Runs as `python -c _IMPORT_WITHOUT <module> <blocked name>...`.
_IMPORT_WITHOUT = """
import importlib, sys
module, blocked = sys.argv[1], frozenset(sys.argv[2:])

class BlockExtras:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(
                f"{name!r} is installed only through an extra (blocked by the contract test)",
                name=name,
            )

sys.meta_path.insert(0, BlockExtras())
importlib.import_module(module)
"""


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _active(dist: str, extras: frozenset[str]) -> list[tuple[str, frozenset[str]]]:
    """Requirements of the installed `dist` with `extras`, as (name, extras); [] if missing."""
    try:
        texts = metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        return []
    found = []
    for text in texts:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is None or any(marker.evaluate({"extra": e}) for e in ("", *extras)):
            found.append((_normalize(requirement.name), frozenset(requirement.extras)))
    return found


def _closure(dist: str, extras: frozenset[str]) -> set[str]:
    """`dist` and every distribution it needs with `extras`, transitively."""
    seen: set[tuple[str, frozenset[str]]] = set()
    queue = deque([(_normalize(dist), extras)])
    while queue:
        node = queue.popleft()
        if node not in seen:
            seen.add(node)
            queue.extend(_active(*node))
    return {name for name, _ in seen}


def extras_only_distributions(dist: str) -> set[str]:
    """Distributions that the extras of `dist` bring and its required dependencies do not.

    Both sides are followed transitively through the installed metadata (a requirement that is
    not installed ends its branch).

    Raises
    ------
    importlib.metadata.PackageNotFoundError
        If `dist` is not installed.
    """
    extras = frozenset(metadata.metadata(dist).get_all("Provides-Extra") or [])
    return _closure(dist, extras) - _closure(dist, frozenset())


def blocked_import_names(dist: str) -> set[str]:
    """Top-level import names of :func:`extras_only_distributions`, less the names that a
    required distribution provides too (a shared namespace package such as ``google``) and the
    standard library's module names (a PyPI backport such as ``typing`` lies behind the standard
    library on ``sys.path``, so blocking its name would block the standard module).

    Raises
    ------
    importlib.metadata.PackageNotFoundError
        If `dist` is not installed.
    """
    optional = extras_only_distributions(dist)
    names_of: dict[str, set[str]] = {}
    for name, providers in metadata.packages_distributions().items():
        for provider in providers:
            names_of.setdefault(_normalize(provider), set()).add(name)
    required = _closure(dist, frozenset())
    shared = set().union(*(names_of.get(d, set()) for d in required))
    optional_names = set().union(*(names_of.get(d, set()) for d in optional))
    return optional_names - shared - set(sys.stdlib_module_names)


def import_without(
    module: str, blocked: set[str], timeout: float = 300
) -> subprocess.CompletedProcess:
    """Import `module` in a subprocess in which the top-level names `blocked` cannot be imported.

    Returns
    -------
    subprocess.CompletedProcess
        With ``returncode`` 0 when the import worked, else the traceback in ``stderr``.

    Raises
    ------
    subprocess.TimeoutExpired
        If the import takes longer than `timeout` seconds.
    """
    return subprocess.run(
        [sys.executable, "-c", _IMPORT_WITHOUT, module, *sorted(blocked)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
