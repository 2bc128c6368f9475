"""The published LAION-C accuracies of reference models and of the best human observer.

``data/reference_accuracy.json`` holds the official leaderboard as published in the README of
the official repository (github.com/FanfeiLi/LAION-C, commit 8c6d519, "Highest OOD
(out-of-distribution) distortion robustness"): each entry's "Avg. Accuracy" over the LAION-C
cells, in %. The paper's per-distortion tables could not be retrieved when the file was
written, so no per-distortion reference is shipped (and none is estimated).

:func:`compare_markdown` ranks an evaluated model among them. Their numbers come from the
released Zenodo data (tens of thousands of images); a model scored on another image set (such as
the 9 photos of ``laion-c reproduce``) is placed beside them for orientation only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from icml25_core import data_path

from .evaluate import Results


@dataclass(frozen=True)
class Reference:
    """One published entry.

    Attributes
    ----------
    rank : int
        Rank on the official leaderboard.
    name : str
        Model name as published, or ``"Best Human Observer"``.
    kind : {"model", "human"}
    avg_accuracy : float
        "Avg. Accuracy" in [0, 1] (published in %, divided by 100).
    """

    rank: int
    name: str
    kind: str
    avg_accuracy: float


@cache
def _table() -> dict:
    path = data_path("laion_c", "data", "reference_accuracy.json")
    return json.loads(path.read_text(encoding="utf-8"))


def reference_accuracies() -> list[Reference]:
    """The published leaderboard, best first (see the module docstring for the source).

    Returns
    -------
    list of Reference
    """
    return [
        Reference(row["rank"], row["name"], row["kind"], row["avg_accuracy"] / 100)
        for row in _table()["rows"]
    ]


def reference_source() -> str:
    """Where :func:`reference_accuracies` comes from, and what it lacks (one paragraph)."""
    table = _table()
    return f"{table['source']} Paper: {table['paper']}. {table['per_distortion']}"


def compare_markdown(results: Results, name: str | None = None) -> str:
    """The published leaderboard with `results` ranked among it by its "Avg. Accuracy".

    Parameters
    ----------
    results : Results
        From :func:`laion_c.evaluate`; its :meth:`Results.mean` and
        :meth:`Results.mean_interval` are shown.
    name : str, optional
        Row label; default ``results.model``.

    Returns
    -------
    str
        A markdown table (position, name, kind, Avg. %, interval, source) and a line naming
        the source and the caveat that the rows were scored on different images.

    Raises
    ------
    TypeError
        If `results` is not a :class:`Results`.
    ValueError
        If `results` holds no cell.
    """
    if not isinstance(results, Results):
        raise TypeError(f"`results` must be a laion_c.Results, got {type(results).__name__}")
    mean, (low, high) = results.mean(), results.mean_interval()
    rows = [
        (ref.avg_accuracy, ref.name, ref.kind, "—", "official README")
        for ref in reference_accuracies()
    ]
    label = f"**{name or results.model} (this run)**"
    rows.append((mean, label, "model", f"[{100 * low:.1f}, {100 * high:.1f}]", "this run"))
    rows.sort(key=lambda row: -row[0])
    percent = f"{100 * results.confidence:g} %"
    lines = [
        f"| # | name | kind | Avg. accuracy (%) | {percent} interval | source |",
        "|---|---|---|---|---|---|",
    ]
    for rank, (avg, entry, kind, interval, source) in enumerate(rows, 1):
        lines.append(f"| {rank} | {entry} | {kind} | {100 * avg:.1f} | {interval} | {source} |")
    n_cells = len(results.counts)
    lines.append(
        f"\nThis run: mean of {n_cells} cells. Published rows (the official leaderboard's top "
        f"{len(rows) - 1}): {reference_source()} They were scored on the released LAION-C "
        "images; a run on other images is beside them for orientation, not a leaderboard entry."
    )
    return "\n".join(lines)
