"""Resumable long runs: an append-only JSON-lines store of finished work units.

A reproduce or benchmark loop asks the store whether a unit (a seed, a setting) is done, computes
it only if not, and appends its result at once; a run killed mid-way loses at most the unit in
flight, and rerunning it redoes nothing that finished.
"""

import hashlib
import json
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ResultStore", "source_fingerprint"]


def _plain(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot store a {type(value).__name__} in a ResultStore (JSON only)")


class ResultStore:
    """Finished work units of one run, kept in a JSON-lines file.

    Parameters
    ----------
    path : str or Path
        The file; created with its parent folders when missing.
    config : dict, default=None
        Settings the stored results depend on (sizes, seeds, model names). Written as the first
        line of a new file; reopening the file with a different ``config`` raises (or restarts),
        so results of another setting are never mixed in.
    restart : bool, default=False
        If the file holds results of a different ``config``: False raises; True deletes them and
        starts over with a warning (a reproduce rerun after its settings or code changed).

    Raises
    ------
    TypeError
        If `path` is not a str or path, or `config` is not a dict.
    ValueError
        If the file was written with a different ``config`` and `restart` is False, `path` is a
        folder, or the file is not a ResultStore's.

    Notes
    -----
    A last line cut short by a kill is removed when the file is opened, so the next record
    starts on a line of its own.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
    >>> store = ResultStore(path, config={"n": 800})
    >>> store.put("seed-0", {"power": 0.9})
    >>> ResultStore(path, config={"n": 800}).get("seed-0")
    {'power': 0.9}
    """

    def __init__(self, path, *, config: dict | None = None, restart: bool = False):
        if not isinstance(path, str | os.PathLike):
            raise TypeError(f"`path` must be a str or a path, got {type(path).__name__}")
        if config is not None and not isinstance(config, dict):
            raise TypeError(f"`config` must be a dict or None, got {type(config).__name__}")
        self.path = Path(path)
        if self.path.is_dir():
            raise ValueError(f"`path` must be a file, got the folder {str(self.path)!r}")
        self.config = json.loads(json.dumps(config or {}, default=_plain))
        self._results: dict[str, Any] = {}
        stored = self.path.exists() and self._drop_partial_line()
        if stored and restart and self._stored_config() != self.config:
            warnings.warn(
                f"{self.path}: results of other settings or code; starting over", stacklevel=2
            )
            self.path.unlink()
            stored = False
        if stored:
            self._load()
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._append({"config": self.config})

    def _drop_partial_line(self) -> bool:
        """Check that the file is a store's, then cut a last line left unfinished by a kill so
        the next record starts on a line of its own; return whether a config line remains."""
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end == 0 and (not data or data.startswith(b'{"config"')):  # killed writing the config
            os.truncate(self.path, 0)
            return False
        self._stored_config()  # a file of something else is refused before anything is cut
        if end < len(data):
            os.truncate(self.path, end)
        return True

    def _stored_config(self):
        with self.path.open(encoding="utf-8") as fh:
            first = fh.readline()
        try:
            header = json.loads(first)
        except json.JSONDecodeError:
            header = None
        if not isinstance(header, dict) or "config" not in header:
            raise ValueError(
                f"`path` {str(self.path)!r} is not a ResultStore file (its first line is not "
                '{"config": ...}); choose another path'
            )
        return header["config"]

    def _load(self):
        stored = self._stored_config()
        if stored != self.config:
            raise ValueError(
                f"{self.path} holds results of another configuration ({stored}); "
                "delete it or choose another path to start over"
            )
        for line in self.path.read_text(encoding="utf-8").splitlines()[1:]:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:  # a line cut short by a kill in a file of an older core
                continue
            if not isinstance(record, dict) or not {"key", "value"} <= record.keys():
                raise ValueError(f"`path` {str(self.path)!r}: not a ResultStore record: {line!r}")
            self._results[record["key"]] = record["value"]

    def _append(self, record):
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, default=_plain) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def __contains__(self, key: str) -> bool:
        return key in self._results

    def __len__(self) -> int:
        return len(self._results)

    def __iter__(self) -> Iterator[str]:
        """The stored keys, in the order they were first stored."""
        return iter(list(self._results))

    def get(self, key: str, default=None):
        """The stored value of ``key`` (JSON types: arrays come back as lists), else ``default``."""
        return self._results.get(key, default)

    def put(self, key: str, value) -> None:
        """Store ``value`` under ``key`` (JSON-serialisable; numpy arrays and scalars converted).

        Raises
        ------
        TypeError
            If ``key`` is not a string or ``value`` is not JSON-serialisable.
        """
        if not isinstance(key, str):
            raise TypeError(f"`key` must be a str, got {type(key).__name__}")
        plain = json.loads(json.dumps(value, default=_plain))
        self._append({"key": key, "value": plain})
        self._results[key] = plain


def source_fingerprint(*paths) -> str:
    """A short hash of source files, for a :class:`ResultStore` ``config``: results computed by
    older code are then never reused.

    Parameters
    ----------
    *paths : str or Path
        Files, or folders whose ``*.py`` files (recursively) are hashed; typically
        ``Path(__file__).parent``, the library's package folder.

    Returns
    -------
    str
        16 hex digits of the SHA-256 over the files' names (relative to their folder) and bytes.

    Raises
    ------
    ValueError
        If no path is given or a path does not exist.
    """
    if not paths:
        raise ValueError("`paths` must name at least one file or folder")
    digest = hashlib.sha256()
    for path in map(Path, paths):
        if path.is_dir():
            files = sorted(path.rglob("*.py"))
        elif path.is_file():
            files = [path]
        else:
            raise ValueError(f"`paths`: {str(path)!r} does not exist")
        for file in files:
            digest.update(
                file.relative_to(path if path.is_dir() else path.parent).as_posix().encode()
            )
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]
