"""Reproduce the headline claim of FSL-SAGE, small, on real Fashion-MNIST.

Run by ``fsl-sage reproduce [--out reports] [--full]`` or ``nox -s reproduce -- fsl-sage``; both
write ``reports/fsl-sage.md``, its JSON twin and ``fsl-sage_accuracy-vs-bytes.png``.

Setup (spec Sec. 4): Debian ``dataset-fashion-mnist``, 5 clients x 1200 training images, Dir(1)
equal split, 2000 test images, ``simple_conv_split(widths=(16, 32))``, batch 64, one local epoch,
20 rounds, q = 5, l = 5, M = 1000, 100 alignment epochs, linear aux. ``--full``: 10 clients,
widths 64/64, 50 rounds, l = 10.
"""

from __future__ import annotations

import math
import multiprocessing
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch

from icml25_core import Claim, Report, seed_everything

from . import algorithms
from ._version import __version__
from .comm import module_nbytes
from .data import load_fashion_mnist
from .models import simple_conv_split
from .partition import dirichlet_equal_split
from .simulate import History
from .simulate import run as run_algorithm

# Pass rules, written before the first run (spec Sec. 4) and never moved.
NMSE_RATIO_MAX = 0.2  # aligned aux NMSE <= 0.2 x random-init aux NMSE on the same buffer
TARGET_ACCURACY = 0.80  # bytes to 80 % test accuracy
SPLITFED_BYTES_FACTOR = 0.5  # FSL-SAGE bytes <= 0.5 x SplitFed-v2 bytes
ACCURACY_GAP_PT = 3.0  # FSL-SAGE final accuracy >= SplitFed-v2 (and >= the best baseline) - 3 pt
BASELINES = ("splitfed_v1", "splitfed_v2", "fedavg")  # the full-gradient baselines of the run

QUICK: dict[str, Any] = {
    "clients": 5, "per_client": 1200, "test": 2000, "alpha": 1.0, "widths": (16, 32),
    "batch_size": 64, "rounds": 6, "q": 5, "l": 2, "M": 1000, "align_epochs": 100,
    "align_batch_size": 1000, "lr": 1e-3, "weight_decay": 1e-4, "seed": 200,
}  # fmt: skip
# The spec's quick setting has 20 rounds (l = 5); one round of the five algorithms measured
# ~100 s on the shared 2-core box, so rounds are shrunk to 6 (l = 2, again rounds / l = 3-4
# alignments) as the spec prescribes ("if over, shrink rounds, not algorithms").
SPEC_ROUNDS = 20
FULL = {**QUICK, "clients": 10, "widths": (64, 64), "rounds": 50, "l": 10}
LABELS = {
    "fsl_sage": "FSL-SAGE",
    "cse_fsl": "CSE-FSL",
    "splitfed_v1": "SplitFed-v1 (MS)",
    "splitfed_v2": "SplitFed-v2 (SS)",
    "fedavg": "FedAvg",
}
PAPER_GB = {"fsl_sage": 12.20, "cse_fsl": 26.02, "splitfed_v1": 60.23, "fedavg": 70.04,
            "splitfed_v2": 109.07}  # fmt: skip
GIB = 2.0**30


def _data(cfg):
    x, y = load_fashion_mnist("train")
    n = cfg["clients"] * cfg["per_client"]
    rng = np.random.default_rng(cfg["seed"])
    pool = rng.permutation(x.shape[0])[:n]
    parts = dirichlet_equal_split(y[pool].numpy(), cfg["clients"], cfg["alpha"], cfg["seed"])
    partitions = [(x[pool[p]], y[pool[p]]) for p in parts]
    x_test, y_test = load_fashion_mnist("test", limit=cfg["test"])
    return partitions, (x_test, y_test)


def _algorithm(name, cfg):
    if name == "fsl_sage":
        return algorithms.fsl_sage(
            cfg["q"], cfg["l"], cfg["M"], align_epochs=cfg["align_epochs"],
            align_batch_size=cfg["align_batch_size"],
        )  # fmt: skip
    if name == "cse_fsl":
        return algorithms.cse_fsl(cfg["q"])
    return getattr(algorithms, name)()


def _checkpointed_rounds(folder: Path) -> int:
    """Rounds an earlier, interrupted or finished run left in ``folder`` (0 if none)."""
    history = folder / "history.jsonl"
    if not history.exists():
        return 0
    return max(0, len(history.read_text(encoding="utf-8").splitlines()) - 1)


def _run_one(job) -> History:
    """One algorithm's whole run (in a worker process, one thread)."""
    name, cfg, checkpoint = job
    torch.set_num_threads(1)
    partitions, test = _data(cfg)
    torch.manual_seed(cfg["seed"])
    split = simple_conv_split(1, 10, 28, tuple(cfg["widths"]))
    return run_algorithm(
        split, partitions, _algorithm(name, cfg), rounds=cfg["rounds"],
        batch_size=cfg["batch_size"], lr=cfg["lr"], weight_decay=cfg["weight_decay"],
        seed=cfg["seed"], test=test, checkpoint=checkpoint,
    )  # fmt: skip


def _figure(histories, out: Path, cfg) -> str:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, hist in histories.items():
        gib = [b / GIB for b in hist.official_bytes]
        ax.plot(gib, [100 * a for a in hist.accuracy], marker=".", label=LABELS[name])
    ax.axhline(100 * TARGET_ACCURACY, color="grey", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_xlabel("official bytes communicated (GiB, log scale)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(
        f"Fashion-MNIST, {cfg['clients']} clients x {cfg['per_client']}, Dir({cfg['alpha']:g}), "
        f"{cfg['rounds']} rounds"
    )
    ax.legend()
    fig.tight_layout()
    name = "fsl-sage_accuracy-vs-bytes.png"
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / name, dpi=120)
    plt.close(fig)
    return name


def _fmt_bytes(b: float) -> str:
    return "not reached" if math.isinf(b) else f"{b / GIB:.3f} GiB"


def run(full: bool = False, out="reports", cache=None, workers: int = 2) -> Report:
    """Run the five algorithms on Fashion-MNIST and judge the paper's claims.

    Parameters
    ----------
    full : bool, default=False
        The larger setting (10 clients, widths 64/64, 50 rounds, l = 10).
    out : str or Path, default="reports"
        Where the figure goes (beside the report).
    cache : str or Path, optional
        Checkpoint folder (default ``<out>/.checkpoints/fsl-sage``); an interrupted run resumes.
    workers : int, default=2
        Algorithms run in this many processes at once (one thread each).

    Returns
    -------
    icml25_core.Report

    Raises
    ------
    FileNotFoundError
        If the Debian package ``dataset-fashion-mnist`` is missing.
    """
    start = time.perf_counter()
    cfg = FULL if full else QUICK
    out = Path(out)
    cache = Path(cache) if cache is not None else out / ".checkpoints" / "fsl-sage"
    torch.set_num_threads(1)
    seed_everything(cfg["seed"])
    folder = cache / f"{'full' if full else 'quick'}-v{__version__}"
    jobs = [(name, cfg, str(folder / name)) for name in LABELS]
    resumed = {name: _checkpointed_rounds(folder / name) for name in LABELS}
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=ctx) as pool:
        histories = dict(zip(LABELS, pool.map(_run_one, jobs), strict=True))
    split = simple_conv_split(1, 10, 28, tuple(cfg["widths"]))
    sizes = {
        "client": module_nbytes(split.client),
        "aux": module_nbytes(split.aux_factory()),
        "server": module_nbytes(split.server),
    }
    report = Report(
        library="fsl-sage",
        title="FSL-SAGE: accuracy vs bytes on Fashion-MNIST (small scale)",
        setup={
            **{k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()},
            "data": "Debian dataset-fashion-mnist (first 2000 test images)",
            "schedule": "sequential (official interleaving)",
            "spec_rounds": SPEC_ROUNDS,
            "rounds_resumed_from_checkpoints": resumed,
            "model_bytes": sizes,
            "fsl_sage_version": __version__,
            "torch": torch.__version__,
            "machine": f"{platform.machine()} CPU, {workers} worker process(es), 1 thread each",
        },
    )
    _judge(report, histories, cfg)
    _tables(report, histories, sizes)
    report.figures.append(_figure(histories, out, cfg))
    report.runtime_s = time.perf_counter() - start
    return report


def _judge(report: Report, histories, cfg) -> None:
    sage = histories["fsl_sage"]
    aligns = [r["align"] for r in sage.records if r["align"]]
    last = aligns[-1]
    ratio = float(np.mean([a["nmse_after"] / a["nmse_random"] for a in last]))
    report.claims.append(
        Claim.judge(
            "Alignment makes the auxiliary model's gradient match the server's",
            "alignment fits the aux gradient to the server's (Sec. 3; no number given, "
            "threshold from the spec)",
            f"NMSE after last alignment / random-init NMSE = {ratio:.3f} (mean of "
            f"{len(last)} clients)",
            bool(ratio <= NMSE_RATIO_MAX),
            f"ratio <= {NMSE_RATIO_MAX}",
        )
    )
    b = {n: h.bytes_to_accuracy(TARGET_ACCURACY) for n, h in histories.items()}
    if math.isinf(b["fsl_sage"]):
        passed = False
        note = (
            f"FSL-SAGE never reached {100 * TARGET_ACCURACY:.0f} % in {cfg['rounds']} rounds "
            f"(final {100 * sage.accuracy[-1]:.1f} %), so the ordering cannot be shown."
        )
    else:
        passed = b["fsl_sage"] <= b["cse_fsl"] and b["fsl_sage"] <= (
            SPLITFED_BYTES_FACTOR * b["splitfed_v2"]
        )
        note = ""
    paper = ", ".join(f"{LABELS[n]} {v} GB" for n, v in PAPER_GB.items())
    report.claims.append(
        Claim.judge(
            "FSL-SAGE needs the fewest bytes to reach the target accuracy",
            f"CIFAR-10/ResNet-18, bytes to 81 %: {paper}",
            "bytes to 80 %: " + ", ".join(f"{LABELS[n]} {_fmt_bytes(v)}" for n, v in b.items()),
            bool(passed),
            f"FSL-SAGE <= CSE-FSL and <= {SPLITFED_BYTES_FACTOR} x SplitFed-v2 (not reached = inf)",
            note,
        )
    )
    gap = 100 * (sage.accuracy[-1] - histories["splitfed_v2"].accuracy[-1])
    report.claims.append(
        Claim.judge(
            "FSL-SAGE loses little accuracy against SplitFed",
            "accuracy comparable to SplitFed at far fewer bytes (experiments; threshold from "
            "the spec)",
            f"FSL-SAGE {100 * sage.accuracy[-1]:.1f} % vs SplitFed-v2 "
            f"{100 * histories['splitfed_v2'].accuracy[-1]:.1f} % (gap {gap:+.1f} pt)",
            bool(gap >= -ACCURACY_GAP_PT),
            f"FSL-SAGE >= SplitFed-v2 - {ACCURACY_GAP_PT} pt",
        )
    )
    # issue 34: the same rule against the strongest baseline of the run, not SplitFed-v2 only
    # (rule written before the run: the spec's 3-point gap, the best of SplitFed-v1/v2, FedAvg)
    best = max(BASELINES, key=lambda n: histories[n].accuracy[-1])
    best_gap = 100 * (sage.accuracy[-1] - histories[best].accuracy[-1])
    report.claims.append(
        Claim.judge(
            "FSL-SAGE loses little accuracy against the best baseline of the run",
            "accuracy comparable to the split and federated baselines (experiments; threshold "
            "from the spec)",
            f"FSL-SAGE {100 * sage.accuracy[-1]:.1f} % vs {LABELS[best]} "
            f"{100 * histories[best].accuracy[-1]:.1f} %, the best of "
            f"{', '.join(LABELS[n] for n in BASELINES)} (gap {best_gap:+.1f} pt)",
            bool(best_gap >= -ACCURACY_GAP_PT),
            f"FSL-SAGE >= best baseline - {ACCURACY_GAP_PT} pt",
            f"after {cfg['rounds']} rounds FSL-SAGE trails {LABELS[best]} by "
            f"{-best_gap:.1f} pt; the SplitFed-v2 row above compares with the weaker baseline"
            if best_gap < 0
            else "",
        )
    )


def _tables(report: Report, histories, sizes) -> None:
    rows = ["| algorithm | final accuracy | best accuracy | bytes to 80 % | total (official) |",
            "|---|---|---|---|---|"]  # fmt: skip
    for name, h in histories.items():
        rows.append(
            f"| {LABELS[name]} | {100 * h.accuracy[-1]:.1f} % | {100 * max(h.accuracy):.1f} % | "
            f"{_fmt_bytes(h.bytes_to_accuracy(TARGET_ACCURACY))} | "
            f"{_fmt_bytes(h.official_bytes[-1])} |"
        )
    report.tables["accuracy and bytes"] = "\n".join(rows)
    rows = [
        "| round | client | NMSE before | NMSE after | NMSE random init |",
        "|---|---|---|---|---|",
    ]
    for r in histories["fsl_sage"].records:
        for a in r["align"]:
            rows.append(
                f"| {r['round']} | {a['client']} | {a['nmse_before']:.4f} | "
                f"{a['nmse_after']:.4f} | {a['nmse_random']:.4f} |"
            )
    report.tables["alignment NMSE (FSL-SAGE)"] = "\n".join(rows)
    full = sizes["client"] + sizes["server"]
    report.tables["model sizes"] = "\n".join(
        [
            "| part | bytes | share of full model |",
            "|---|---|---|",
            f"| client | {sizes['client']} | {sizes['client'] / full:.3f} |",
            f"| auxiliary (linear) | {sizes['aux']} | {sizes['aux'] / full:.3f} |",
            f"| client + aux | {sizes['client'] + sizes['aux']} | "
            f"{(sizes['client'] + sizes['aux']) / full:.3f} |",
            f"| full model (client + server) | {full} | 1.000 |",
        ]
    )


def main(out="reports", full: bool = False) -> tuple[Path, Path]:
    """Run the reproduction and write ``<out>/fsl-sage.md`` and ``.json`` (and the figure).

    Returns
    -------
    tuple of pathlib.Path
        The markdown report and the JSON one beside it.
    """
    return run(full=full, out=out).write(out)
