"""A README's Python blocks: found with their line numbers, replayed in order in one namespace."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

__all__ = ["CARD_SECTIONS", "ReadmeBlock", "ReadmeRun", "readme_blocks"]

# The sections of a library's README card, in order (CONTRIBUTING.md, "Add a library").
CARD_SECTIONS = (
    "## Install",
    "## Usage",
    "## How it works",
    "## Hyper-parameters",
    "## Reproduction",
    "## Performance",
    "## Limits and differences from the official code",
    "## Citation",
)
_OPEN, _CLOSE = "```python", "```"


@dataclass(frozen=True)
class ReadmeBlock:
    """One fenced Python block of a README.

    Attributes
    ----------
    index : int
        Its position among the README's Python blocks, from 0.
    line : int
        The README line of its first line of code, from 1.
    source : str
        Its code.
    section : str
        The ``## `` heading it sits under ("" before the first one).
    """

    index: int
    line: int
    source: str
    section: str

    @property
    def id(self) -> str:
        """The test id of the block: ``line31``."""
        return f"line{self.line}"


def readme_blocks(path: str | os.PathLike) -> list[ReadmeBlock]:
    """The Python blocks (fenced with a line ```` ```python ````) of the README at `path`.

    Raises
    ------
    OSError
        If the file cannot be read.
    ValueError
        If a Python block is not closed with a line ```` ``` ````, naming its line.
    """
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    blocks: list[ReadmeBlock] = []
    section, start = "", None
    for number, line in enumerate(lines, start=1):
        if start is None and line.startswith("## "):
            section = line.strip()
        elif start is None and line.strip() == _OPEN:
            start = number + 1
        elif start is not None and line.strip() == _CLOSE:
            source = "".join(f"{code}\n" for code in lines[start - 1 : number - 1])
            blocks.append(ReadmeBlock(len(blocks), start, source, section))
            start = None
    if start is not None:
        raise ValueError(f"{path}: the Python block opened on line {start - 1} is not closed")
    return blocks


@dataclass
class ReadmeRun:
    """A README's blocks run once each, in order, in one namespace, inside `folder`.

    Tracebacks point into the README: each block is compiled under the README's path with its
    own line numbers. What the blocks print is kept in `stdout` (and shown again on failure).

    Attributes
    ----------
    path : Path
        The README.
    folder : Path
        The working folder the blocks run in.
    blocks : list of ReadmeBlock
    namespace : dict
        The globals the blocks share.
    stdout : str
        What the blocks run so far printed.
    """

    path: Path
    folder: Path
    blocks: list[ReadmeBlock] = field(init=False)
    namespace: dict = field(init=False, default_factory=dict)
    stdout: str = field(init=False, default="")
    _done: int = field(init=False, default=0)
    _failed: ReadmeBlock | None = field(init=False, default=None)
    _error: Exception | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.blocks = readme_blocks(self.path)

    def run_through(self, index: int) -> None:
        """Run every block up to `index` (included) that has not run yet.

        Raises
        ------
        IndexError
            If there is no block `index`.
        Exception
            Whatever a block raises; later calls then fail, naming that block.
        """
        if not 0 <= index < len(self.blocks):
            raise IndexError(f"{self.path} has {len(self.blocks)} Python blocks, not {index + 1}")
        if self._failed is not None and index == self._failed.index:
            assert self._error is not None  # set together with _failed
            raise self._error
        if self._failed is not None and index > self._failed.index:
            pytest.fail(
                f"{self.path.name}: the block on line {self._failed.line} failed, and the "
                "blocks after it run in its namespace",
                pytrace=False,
            )
        while self._done <= index:
            block = self.blocks[self._done]
            code = compile("\n" * (block.line - 1) + block.source, str(self.path), "exec")
            printed = io.StringIO()
            try:
                with contextlib.chdir(self.folder), contextlib.redirect_stdout(printed):
                    exec(code, self.namespace)
            except Exception as error:
                self._failed, self._error = block, error
                raise
            finally:
                self.stdout += printed.getvalue()
                sys.stdout.write(printed.getvalue())
            self._done += 1

    def run_all(self) -> ReadmeRun:
        """Run every block (see :meth:`run_through`); returns self.

        Raises
        ------
        ValueError
            If the README has no Python block.
        """
        if not self.blocks:
            raise ValueError(f"{self.path} has no Python block")
        self.run_through(len(self.blocks) - 1)
        return self
