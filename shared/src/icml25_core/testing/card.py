"""The part of a library's card (``[tool.icml25]`` of its pyproject) that the contract tests read.

A library opts in to the contract by declaring its console script and README there::

    [tool.icml25]
    console = "fedswa"     # a script of [project.scripts]
    readme = "README.md"   # relative to the pyproject
    readme-slow = true     # optional: its blocks take over ~10 s, so they are marked `slow`
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CardError", "LibraryCard", "declares_contract", "find_card"]

PYPROJECT = "pyproject.toml"


class CardError(ValueError):
    """A card's contract fields are missing, of the wrong type or point at nothing."""


@functools.cache
def _read(pyproject: Path) -> dict:
    try:
        with open(pyproject, "rb") as file:
            return tomllib.load(file)
    except tomllib.TOMLDecodeError as error:
        raise CardError(f"{pyproject}: invalid TOML: {error}") from error


def _card(pyproject: Path) -> dict | None:
    if not pyproject.is_file():
        return None
    card = _read(pyproject).get("tool", {}).get("icml25")
    return card if isinstance(card, dict) else None


def declares_contract(folder: Path) -> bool:
    """Whether the pyproject in `folder` has a card naming a ``console`` or a ``readme`` (False
    for an unreadable one: the plugin leaves projects that are not its libraries alone)."""
    try:
        card = _card(Path(folder) / PYPROJECT)
    except (CardError, OSError):
        return False
    return card is not None and ("console" in card or "readme" in card)


@dataclass(frozen=True)
class LibraryCard:
    """What the contract tests check of one library.

    Attributes
    ----------
    pyproject : Path
        The library's ``pyproject.toml``.
    dist : str
        Its distribution name (``[project].name``).
    console : str
        The console script the card names.
    readme : Path
        The README the card names.
    readme_slow : bool
        Whether the README's blocks are marked ``slow``.
    status : str
        The card's ``status`` ("done" once the library meets the definition of done).
    """

    pyproject: Path
    dist: str
    console: str
    readme: Path
    readme_slow: bool = False
    status: str = ""

    @property
    def import_name(self) -> str:
        """The package the distribution installs: ``quest-qat`` -> ``quest_qat``."""
        return self.dist.replace("-", "_")

    @classmethod
    def load(cls, pyproject: Path) -> LibraryCard:
        """Read and check the card of `pyproject`.

        Raises
        ------
        CardError
            If the file has no card, or its ``console`` is not a script of ``[project.scripts]``,
            its ``readme`` is not an existing file, ``readme-slow`` is not a bool, or
            ``[project].name`` is missing.
        """
        pyproject = Path(pyproject)
        card = _card(pyproject)
        if card is None:
            raise CardError(f"{pyproject}: no [tool.icml25] card")
        project = _read(pyproject).get("project", {})
        dist = project.get("name")
        if not isinstance(dist, str) or not dist:
            raise CardError(f"{pyproject}: [project].name is missing")
        scripts = project.get("scripts", {})
        console = card.get("console")
        if not isinstance(console, str) or console not in scripts:
            raise CardError(
                f"{pyproject}: [tool.icml25] console = {console!r} must name a script of "
                f"[project.scripts] ({', '.join(scripts) or 'none declared'})"
            )
        readme = card.get("readme")
        if not isinstance(readme, str) or not (pyproject.parent / readme).is_file():
            raise CardError(
                f"{pyproject}: [tool.icml25] readme = {readme!r} must name an existing file, "
                f'relative to the pyproject (e.g. "README.md")'
            )
        slow = card.get("readme-slow", False)
        if not isinstance(slow, bool):
            raise CardError(f"{pyproject}: [tool.icml25] readme-slow must be true or false")
        status = str(card.get("status", ""))
        return cls(pyproject, dist, console, pyproject.parent / readme, slow, status)


def find_card(path: Path) -> LibraryCard:
    """The card of the library that `path` (a test file or folder) belongs to.

    Raises
    ------
    CardError
        If no folder above `path` holds a pyproject with a card, or that card is malformed.
    """
    path = Path(path).resolve()
    for folder in (path, *path.parents):
        if _card(folder / PYPROJECT) is not None:
            return LibraryCard.load(folder / PYPROJECT)
    raise CardError(f"no pyproject.toml with a [tool.icml25] card above {path}")
