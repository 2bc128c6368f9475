"""Speed of one LIF layer, forward + backward: FPT against a per-step loop and spikingjelly.

Spec §6: FPT (dense, chunked, fused and the automatic choice) vs an autograd per-step LIF loop
with the same sigmoid surrogate (:func:`fpt_snn.lif_sequential`), T ∈ {8, 32, 128, 512},
N·T ∈ {2¹⁶, 2²⁰}; interleaved repeats in one process, median times and the ratio of medians.
``benchmarks/bench_fpt.py`` adds spikingjelly's multi-step ``LIFNode`` (CPU path, report
only) and the neuron variants (each against the loop of the same variant) through `extra`.
"""

from __future__ import annotations

import statistics
import time

import torch

from icml25_core import check_scalar

from .fpt import fpt_lif
from .lif import lif_sequential
from .surrogate import sigmoid_surrogate

DEFAULT_TS = (8, 32, 128, 512)
DEFAULT_SIZES = (2**16, 2**20)


def _candidates(extra):
    loop_surrogate = sigmoid_surrogate(4.0)
    runs = {
        "loop": lambda x: lif_sequential(x, surrogate=loop_surrogate),
        "fpt-dense": lambda x: fpt_lif(x, method="dense"),
        "fpt-chunked": lambda x: fpt_lif(x, method="chunked"),
        "fpt-fused": lambda x: fpt_lif(x, method="fused"),
        "fpt-auto": lambda x: fpt_lif(x),
    }
    return {**runs, **(extra or {})}


def _time_once(fn, x, grad):
    x = x.detach().requires_grad_()
    start = time.perf_counter()
    out = fn(x)
    out.backward(grad)
    return time.perf_counter() - start


def benchmark(
    Ts=DEFAULT_TS, sizes=DEFAULT_SIZES, repeats=5, seed=0, extra=None, baselines=None, skip=None
):
    """Median fwd+bwd seconds per implementation and the speed-ups over the loop.

    Parameters
    ----------
    Ts : sequence of int, default=(8, 32, 128, 512)
        Sequence lengths.
    sizes : sequence of int, default=(2**16, 2**20)
        Total elements N·T per input (N = max(1, size // T) neurons).
    repeats : int, default=5
        Timed repeats per case (after one warm-up), interleaved across implementations.
    seed : int, default=0
    extra : dict of str to callable, optional
        More implementations ``x [T, N] -> spikes`` to time beside them (e.g. spikingjelly's
        ``LIFNode``, as ``benchmarks/bench_fpt.py`` does).
    baselines : dict of str to str, optional
        The implementation each one's speed-up is taken against (default "loop"), e.g. a
        variant's FPT against the loop of the same variant.
    skip : callable, optional
        ``skip(name, T, N) -> bool``: leave that implementation out at that shape (its
        ``_ms`` and ``_speedup`` are NaN), e.g. where it would not fit in memory.

    Returns
    -------
    list of dict
        One row per (T, N·T): ``T``, ``NT`` (the N·T run), ``size`` (the requested size),
        ``<impl>_ms`` for each implementation,
        ``<impl>_spread`` = (max − min)/median of its repeats, and ``<impl>_speedup`` =
        baseline median / impl median.

    Raises
    ------
    ValueError, TypeError
        On non-positive sizes or repeats.
    """
    check_scalar(repeats, "repeats", kind=int, low=1)
    for T in Ts:
        check_scalar(T, "Ts", kind=int, low=1)
    for size in sizes:
        check_scalar(size, "sizes", kind=int, low=1)
    runs = _candidates(extra)
    g = torch.Generator().manual_seed(seed)
    rows = []
    for size in sizes:
        for T in Ts:
            N = max(1, size // T)
            x = torch.randn(T, N, generator=g) * 0.8 + 0.6
            grad = torch.randn(T, N, generator=g)
            active = {n: fn for n, fn in runs.items() if skip is None or not skip(n, T, N)}
            times: dict[str, list[float]] = {name: [] for name in active}
            for rep in range(repeats + 1):
                for name, fn in active.items():
                    elapsed = _time_once(fn, x, grad)
                    if rep:  # the first round warms up
                        times[name].append(elapsed)
            row: dict = {"T": T, "NT": T * N, "size": size}
            nan = float("nan")
            for name in runs:
                values = times.get(name)
                base = times.get((baselines or {}).get(name, "loop"))
                med = statistics.median(values) if values else nan
                row[f"{name}_ms"] = 1e3 * med
                row[f"{name}_spread"] = (max(values) - min(values)) / med if values else nan
                row[f"{name}_speedup"] = statistics.median(base) / med if values and base else nan
            rows.append(row)
    return rows


def _size_label(n: int) -> str:
    """``2^k`` for a power of two, else the number itself."""
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


def format_rows(rows, names=None, baselines=None):
    """A markdown table of :func:`benchmark` rows: median ms (± spread) and speed-ups.

    `names` picks and orders the implementations (default all); `baselines` names each one's
    reference as in :func:`benchmark` (default "loop"), which has no speed-up column.
    """
    names = names or [k[:-3] for k in rows[0] if k.endswith("_ms")]
    baselines = baselines or {}
    refs = {baselines.get(n, "loop") for n in names}
    ratio_names = [n for n in names if n not in refs]
    head = "| T | N·T | " + " | ".join(f"{n} ms" for n in names) + " | "
    head += " | ".join(f"{n} vs {baselines.get(n, 'loop')}" for n in ratio_names) + " |"
    lines = [head, "|" + " --- |" * (2 + len(names) + len(ratio_names))]
    for r in rows:
        cells = [str(r["T"]), _size_label(r["NT"])]
        if r.get("size", r["NT"]) != r["NT"]:  # N = max(1, size // T) rounds the size
            cells[1] += f" (asked {_size_label(r['size'])})"
        cells += [
            "–"
            if r[f"{n}_ms"] != r[f"{n}_ms"]
            else f"{r[f'{n}_ms']:.1f} ±{100 * r[f'{n}_spread'] / 2:.0f}%"
            for n in names
        ]
        cells += [
            "–" if r[f"{n}_speedup"] != r[f"{n}_speedup"] else f"{r[f'{n}_speedup']:.2f}x"
            for n in ratio_names
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
