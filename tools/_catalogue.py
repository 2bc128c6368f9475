"""What the repository tools share: the repository root, the catalogue, the libraries' cards.

Standard library only, so every tool runs in any venv. The tools import this module by name: run
as ``python tools/<tool>.py``, the ``tools/`` folder is first on ``sys.path``.
"""

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = "tools/libraries.toml"
CORE_DIR = "shared"
CORE_DIST = "icml25-core"
FIELDS = ("dist", "paper", "authors", "arxiv", "field")
STATUSES = ("done", "in progress", "planned")
DIST_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
ARXIV_ID = re.compile(r"\d{4}\.\d{4,5}(?:v\d+)?")


class CatalogueError(ValueError):
    """The catalogue or a library's ``[tool.icml25]`` card is malformed."""


@dataclass(frozen=True)
class Library:
    """One entry of ``tools/libraries.toml``."""

    dist: str
    paper: str
    authors: str
    arxiv: str
    field: str

    @property
    def import_name(self) -> str:
        return import_name(self.dist)


def import_name(dist: str) -> str:
    """The import name of a distribution of this repository: ``quest-qat`` -> ``quest_qat``."""
    return dist.replace("-", "_")


def normalize(name: str) -> str:
    """PEP 503 normalised distribution name: ``Scikit_Learn`` -> ``scikit-learn``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_toml(path: Path) -> dict:
    """Parse a TOML file, naming the file in the error."""
    try:
        with open(path, "rb") as file:
            return tomllib.load(file)
    except tomllib.TOMLDecodeError as error:
        raise CatalogueError(f"{path}: invalid TOML: {error}") from error


def load_catalogue(root: Path = REPO_ROOT) -> list[Library]:
    """Read ``tools/libraries.toml`` under `root`, in its order.

    Raises
    ------
    CatalogueError
        If the file is missing, an entry lacks a key or has an unknown one, a name or arXiv id is
        malformed, or a name appears twice.
    """
    path = Path(root) / CATALOGUE
    if not path.is_file():
        raise CatalogueError(f"{path} not found: the catalogue of libraries is missing")
    entries = read_toml(path).get("library", [])
    libraries, seen = [], set()
    for number, entry in enumerate(entries, start=1):
        where = f"{CATALOGUE}: [[library]] #{number}"
        missing = [key for key in FIELDS if key not in entry]
        unknown = sorted(set(entry) - set(FIELDS))
        if missing or unknown:
            raise CatalogueError(
                f"{where}: needs exactly the keys {', '.join(FIELDS)}"
                f" (missing: {missing or 'none'}, unknown: {unknown or 'none'})"
            )
        if not all(isinstance(entry[key], str) for key in FIELDS):
            raise CatalogueError(f"{where}: every value must be a string")
        library = Library(**{key: entry[key] for key in FIELDS})
        if not DIST_NAME.fullmatch(library.dist):
            raise CatalogueError(
                f"{where}: dist {library.dist!r} must be lowercase letters, digits and '-'"
            )
        if library.arxiv and not ARXIV_ID.fullmatch(library.arxiv):
            raise CatalogueError(
                f"{where} ({library.dist}): arxiv {library.arxiv!r} is not an id such as "
                "'2502.05003' (use \"\" when there is none)"
            )
        if library.dist in seen:
            raise CatalogueError(f"{where}: {library.dist!r} is listed twice")
        seen.add(library.dist)
        libraries.append(library)
    return libraries


def package_dirs(root: Path = REPO_ROOT) -> list[Path]:
    """The library folders ``packages/*/`` under `root`, sorted (hidden folders skipped)."""
    packages = Path(root) / "packages"
    if not packages.is_dir():
        return []
    return sorted(p for p in packages.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def distributions(root: Path = REPO_ROOT) -> dict[str, Path]:
    """``{dist: folder}`` of what is released from `root`: the core, then each library with a
    ``pyproject.toml`` (``packages/<dist>/``)."""
    folders = {CORE_DIST: Path(root) / CORE_DIR, **{p.name: p for p in package_dirs(root)}}
    return {dist: path for dist, path in folders.items() if (path / "pyproject.toml").is_file()}


def card(pyproject: Path) -> dict:
    """The ``[tool.icml25]`` table of a library's pyproject (empty if it has none)."""
    return read_toml(pyproject).get("tool", {}).get("icml25", {})
