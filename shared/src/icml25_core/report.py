"""The reproduce report: each library's claims, measured against the paper, as markdown and JSON.

A library's ``reproduce`` builds a :class:`Report` and writes ``<library>.md`` and
``<library>.json``; ``python -m icml25_core [DIR]`` prints one table across libraries.
Pass rules (``threshold``) are written before the run and never moved after it.
"""

import argparse
import json
import os
import re
import sys
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np

from icml25_core.validation import check_scalar

_LIBRARY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class Verdict(StrEnum):
    """Outcome of one claim; the value is the text shown in tables."""

    REPRODUCED = "reproduced"
    PARTIAL = "partially reproduced"
    NOT_REPRODUCED = "not reproduced at this scale"


@dataclass
class Claim:
    """One claim of the paper and what the reproduction measured.

    Parameters
    ----------
    claim : str
        The claim, in a short sentence.
    paper_value : str
        The paper's number or statement, with its source (table, figure).
    measured_value : str
        What this run measured, formatted with its unit.
    verdict : Verdict or str
        The outcome; a string is converted (``"reproduced"`` -> ``Verdict.REPRODUCED``).
    threshold : str, default=""
        The pass rule, written before the run.
    note : str, default=""
        Anything a reader needs to interpret the verdict.

    Raises
    ------
    ValueError
        If `verdict` is not a :class:`Verdict` or the text of one.
    """

    claim: str
    paper_value: str
    measured_value: str
    verdict: Verdict
    threshold: str = ""
    note: str = ""

    def __post_init__(self):
        try:
            self.verdict = Verdict(self.verdict)
        except ValueError:
            listed = ", ".join(repr(v.value) for v in Verdict)
            raise ValueError(
                f"`verdict` must be a Verdict or one of {listed}; got {self.verdict!r}"
            ) from None

    @classmethod
    def judge(
        cls,
        claim: str,
        paper_value: str,
        measured_value: str,
        passed: bool,
        threshold: str,
        note: str = "",
    ) -> "Claim":
        """Make a claim whose verdict follows a pass/fail test.

        Parameters
        ----------
        claim, paper_value, measured_value, threshold, note : str
            As in :class:`Claim`.
        passed : bool
            Whether the measurement met `threshold` (numpy bools accepted).

        Returns
        -------
        Claim
            With verdict ``REPRODUCED`` if `passed`, else ``NOT_REPRODUCED``.

        Raises
        ------
        TypeError
            If `passed` is not a bool.

        Examples
        --------
        >>> Claim.judge("4-bit matches fp16", "0.1 ppl gap (Tab. 2)", "0.08", True, "gap <= 0.15")
        ... # doctest: +ELLIPSIS
        Claim(..., verdict=<Verdict.REPRODUCED: 'reproduced'>, ...)
        """
        if not isinstance(passed, bool | np.bool_):
            raise TypeError(f"`passed` must be a bool, got {type(passed).__name__}")
        verdict = Verdict.REPRODUCED if passed else Verdict.NOT_REPRODUCED
        return cls(claim, paper_value, measured_value, verdict, threshold, note)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _json_default(value):
    """Let numpy scalars and arrays, and paths, appear in ``setup``."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _cell(text) -> str:
    """Make `text` safe inside a markdown table cell."""
    return str(text).replace("|", r"\|").replace("\n", "<br>")


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = [header, ["---"] * len(header), *([_cell(c) for c in row] for row in rows)]
    return "\n".join(f"| {' | '.join(line)} |" for line in lines)


@dataclass
class Report:
    """The record a library's ``reproduce`` writes.

    Parameters
    ----------
    library : str
        Distribution name (``quest-qat``); also the file name stem.
    title : str
        Heading of the markdown report.
    claims : list of Claim
        The claims measured.
    setup : dict
        Settings of the run: seeds, sizes, data source, versions.
    tables : dict of str to str
        Extra tables: name -> markdown table text.
    figures : list of str
        Figure files, relative to the report directory.
    notes : list of str
        Free-form remarks.
    runtime_s : float, optional
        Wall-clock time of the run, in seconds.
    created : str
        ISO 8601 timestamp; defaults to now, UTC.

    Raises
    ------
    TypeError
        If `library` or `title` is not a str, `claims` is not a list of :class:`Claim`,
        `setup` or `tables` is not a dict, or `runtime_s` is not a number.
    ValueError
        If `library` is not a plain file name (letters, digits, ``.``, ``_``, ``-``), or
        `runtime_s` is negative or NaN.
    """

    library: str
    title: str
    claims: list[Claim] = field(default_factory=list)
    setup: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)
    figures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    runtime_s: float | None = None
    created: str = field(default_factory=_now)

    def __post_init__(self):
        for name in ("library", "title"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"`{name}` must be a str, got {type(getattr(self, name)).__name__}")
        if not _LIBRARY_NAME.fullmatch(self.library):
            raise ValueError(
                f"`library` must be a distribution name such as 'quest-qat', got {self.library!r}"
            )
        for name in ("setup", "tables"):
            if not isinstance(getattr(self, name), dict):
                raise TypeError(
                    f"`{name}` must be a dict, got {type(getattr(self, name)).__name__}"
                )
        if self.runtime_s is not None:
            check_scalar(self.runtime_s, "runtime_s", low=0)
        self._check_claims()

    def _check_claims(self) -> None:
        """Claims may be appended after construction, so this runs again before rendering."""
        if not isinstance(self.claims, list):
            raise TypeError(f"`claims` must be a list of Claim, got {type(self.claims).__name__}")
        for number, claim in enumerate(self.claims):
            if not isinstance(claim, Claim):
                raise TypeError(
                    f"`claims` must be a list of Claim, got {type(claim).__name__} at {number}"
                )

    def to_dict(self) -> dict[str, Any]:
        """Return the report as plain JSON types (verdicts as their text, numpy values as lists).

        Raises
        ------
        TypeError
            If `setup` holds a value JSON cannot represent, or `claims` holds a non-Claim.
        """
        self._check_claims()
        return json.loads(json.dumps(asdict(self), default=_json_default))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Report":
        """Rebuild a report from :meth:`to_dict` output.

        Raises
        ------
        TypeError
            If a key is missing or unknown.
        ValueError
            If a verdict is unknown.
        """
        claims = [Claim(**c) for c in data.get("claims", [])]
        return cls(**{**data, "claims": claims})

    def to_json(self) -> str:
        """Return the report as indented JSON."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    def to_markdown(self) -> str:
        """Render the report: setup, claims table, extra tables, figures, notes, runtime.

        Raises
        ------
        TypeError
            If `claims` holds a non-Claim (e.g. one appended after construction).
        """
        self._check_claims()
        parts = [f"# {self.title}", f"Library: `{self.library}`. Created: {self.created}."]
        if self.setup:
            items = [
                f"- {key}: {v if isinstance(v, str) else json.dumps(v, default=_json_default)}"
                for key, v in self.setup.items()
            ]
            parts += ["## Setup", "\n".join(items)]
        rows = [
            [c.claim, c.paper_value, c.measured_value, c.threshold, c.verdict.value]
            for c in self.claims
        ]
        parts += ["## Claims", _table(["Claim", "Paper", "Measured", "Threshold", "Verdict"], rows)]
        notes = [f"- {c.claim}: {c.note}" for c in self.claims if c.note]
        if notes:
            parts.append("\n".join(notes))
        for name, table in self.tables.items():
            parts += [f"## {name}", table.strip()]
        if self.figures:
            parts += ["## Figures", "\n".join(f"![{f}]({f})" for f in self.figures)]
        if self.notes:
            parts += ["## Notes", "\n".join(f"- {n}" for n in self.notes)]
        if self.runtime_s is not None:
            parts.append(f"Runtime: {self.runtime_s:.1f} s.")
        return "\n\n".join(parts) + "\n"

    def write(self, directory) -> tuple[Path, Path]:
        """Write ``<library>.md`` and ``<library>.json`` into `directory` (created if needed).

        Returns
        -------
        tuple of pathlib.Path
            The markdown path and the JSON path.

        Raises
        ------
        TypeError
            If `directory` is not a str or path, or `claims` holds a non-Claim.
        ValueError
            If `directory` is an existing file.
        """
        if not isinstance(directory, str | os.PathLike):
            raise TypeError(f"`directory` must be a str or a path, got {type(directory).__name__}")
        directory = Path(directory)
        if directory.exists() and not directory.is_dir():
            raise ValueError(f"`directory` must be a folder, got the file {str(directory)!r}")
        directory.mkdir(parents=True, exist_ok=True)
        md_path = directory / f"{self.library}.md"
        json_path = directory / f"{self.library}.json"
        md_path.write_text(self.to_markdown(), encoding="utf-8")
        json_path.write_text(self.to_json() + "\n", encoding="utf-8")
        return md_path, json_path

    @classmethod
    def read(cls, path) -> "Report":
        """Read a report written by :meth:`write` (the ``.json`` file).

        Raises
        ------
        FileNotFoundError
            If `path` does not exist.
        ValueError
            If the file is not a report's JSON.
        """
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        try:
            return cls.from_dict(json.loads(text))
        except (TypeError, ValueError, AttributeError) as error:
            raise ValueError(f"{path} is not a reproduce report: {error}") from error


def summary_table(reports) -> str:
    """One markdown table of every claim across `reports`, then a count line.

    Parameters
    ----------
    reports : iterable of Report
        E.g. ``load_reports("reports")``.

    Returns
    -------
    str
        Columns Library | Claim | Paper | Measured | Verdict, then a line such as
        "5 claims: 3 reproduced, 1 partially, 1 not reproduced".

    Raises
    ------
    TypeError
        If `reports` is a str or path (pass ``load_reports(directory)``), not iterable, or holds
        something other than a :class:`Report`.
    """
    if isinstance(reports, str | os.PathLike) or not hasattr(reports, "__iter__"):
        raise TypeError(
            f"`reports` must be an iterable of Report (e.g. load_reports(directory)), "
            f"got {type(reports).__name__}"
        )
    rows, counts = [], dict.fromkeys(Verdict, 0)
    for report in reports:
        if not isinstance(report, Report):
            raise TypeError(f"`reports` must hold Report objects, got {type(report).__name__}")
        for c in report.claims:
            rows.append([report.library, c.claim, c.paper_value, c.measured_value, c.verdict.value])
            counts[c.verdict] += 1
    table = _table(["Library", "Claim", "Paper", "Measured", "Verdict"], rows)
    count = (
        f"{len(rows)} claim{'' if len(rows) == 1 else 's'}: "
        f"{counts[Verdict.REPRODUCED]} reproduced, {counts[Verdict.PARTIAL]} partially, "
        f"{counts[Verdict.NOT_REPRODUCED]} not reproduced"
    )
    return f"{table}\n\n{count}\n"


def load_reports(directory) -> list[Report]:
    """Read every ``*.json`` report in `directory`, sorted by library.

    Raises
    ------
    ValueError
        If a JSON file there is not a report.
    """
    paths = sorted(Path(directory).glob("*.json"))
    return sorted((Report.read(p) for p in paths), key=lambda r: r.library)


def main(argv=None) -> int:
    """Print the summary table of the reports in a directory (default ``reports``).

    Returns
    -------
    int
        0 on success, 1 if the directory holds no JSON report.
    """
    parser = argparse.ArgumentParser(
        prog="python -m icml25_core",
        description="Print one table of the reproduce reports (*.json) in a directory.",
    )
    parser.add_argument("directory", nargs="?", default="reports", help="default: reports")
    args = parser.parse_args(argv)
    reports = load_reports(args.directory)
    if not reports:
        print(
            f"no reproduce reports (*.json) in {args.directory!r}; run `nox -s reproduce` first",
            file=sys.stderr,
        )
        return 1
    print(summary_table(reports), end="")
    return 0
