"""Benchmark one LIF layer, forward + backward (spec §6): FPT vs the per-step loop.

    python benchmarks/bench_fpt.py [--T 8 32 64 128 512] [--sizes 65536 1048576] [--repeats 5]
                                   [--no-variants] [--json out.json]

FPT (dense, chunked, fused and ``method="auto"``) against (a) an autograd per-step loop with the
same sigmoid surrogate and (b) spikingjelly's multi-step ``LIFNode`` CPU path (report only),
interleaved repeats in one process, median times. The neuron variants (hard reset, input
decay, per-channel τ) run ``fpt_lif(method="auto")`` against the loop of the same variant
(``lif_sequential`` with the same options and surrogate). Targets (spec §6): >= 3x vs the
loop at N·T = 2^16, T >= 32; >= 1.5x at N·T = 2^20, T >= 32; issue 29: the best FPT path at
least as fast as spikingjelly's CPU path at T >= 32. Figures go to benchmarks/RESULTS.md.
"""

import argparse
import json
import os
import platform
from datetime import UTC, datetime

import torch
from fpt_snn import fpt_lif, lif_sequential, sigmoid_surrogate
from fpt_snn.bench import benchmark, format_rows

TARGETS = {2**16: 3.0, 2**20: 1.5}  # speed-up over the loop required at T >= 32
FPT_PATHS = ("fpt-dense", "fpt-chunked", "fpt-fused")
CHANNELS = 16  # per-channel τ: x [T, N] viewed as [T, N/16, 16], τ from 2 to 4
HARD_MAX_ELEMENTS = 2**25  # hard reset: its dense [T, T, N] cumprod, skipped beyond 128 MiB


def spikingjelly_lif():
    """spikingjelly's multi-step LIFNode, same neuron and surrogate (None if not installed)."""
    try:
        from spikingjelly.activation_based import neuron, surrogate
    except ImportError:
        return {}
    node = neuron.LIFNode(
        tau=2.0, decay_input=False, v_reset=None, surrogate_function=surrogate.Sigmoid(alpha=4.0),
        step_mode="m",
    )  # fmt: skip

    def run(x):
        node.reset()
        return node(x)

    return {"spikingjelly": run}


def _per_channel(fn):
    def run(x):
        T, N = x.shape
        tau = torch.linspace(2.0, 4.0, CHANNELS, dtype=x.dtype)
        return fn(x.reshape(T, N // CHANNELS, CHANNELS), tau).reshape(T, N)

    return run


def variants():
    """Variant name -> (loop of that variant, FPT of that variant with method="auto")."""
    sur = sigmoid_surrogate(4.0)
    hard = {"reset": "hard"}
    decay = {"decay_input": True}
    return {
        "hard": (
            lambda x: lif_sequential(x, surrogate=sur, **hard),
            lambda x: fpt_lif(x, **hard),
        ),
        "decay": (
            lambda x: lif_sequential(x, surrogate=sur, **decay),
            lambda x: fpt_lif(x, **decay),
        ),
        "plif": (
            _per_channel(lambda x, tau: lif_sequential(x, tau=tau, surrogate=sur)),
            _per_channel(lambda x, tau: fpt_lif(x, tau=tau)),
        ),
    }


def _skip(name, T, N):
    return name == "fpt-hard" and T * T * N > HARD_MAX_ELEMENTS


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--T", type=int, nargs="+", default=[8, 32, 64, 128, 512])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2**16, 2**20])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-variants", action="store_true")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    extra = spikingjelly_lif()
    baselines = {}
    if not args.no_variants:
        for name, (loop, fpt) in variants().items():
            extra[f"loop-{name}"], extra[f"fpt-{name}"] = loop, fpt
            baselines[f"fpt-{name}"] = f"loop-{name}"
    rows = benchmark(args.T, args.sizes, args.repeats, extra=extra, baselines=baselines, skip=_skip)
    load = os.getloadavg()
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, torch {torch.__version__}, {torch.get_num_threads()} thread(s), "
        f"load average {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}"
    )
    main_names = ["loop", *FPT_PATHS, "fpt-auto", *(["spikingjelly"] if extra else [])]
    main_names = [n for n in main_names if f"{n}_ms" in rows[0]]
    print(format_rows(rows, names=main_names))
    if baselines:
        names = [n for pair in baselines.items() for n in pair[::-1]]
        print(format_rows(rows, names=names, baselines=baselines))
    for row in rows:
        target = TARGETS.get(row["NT"])
        if row["T"] < 32:
            continue
        best = max(row[f"{p}_speedup"] for p in FPT_PATHS)
        text = f"T={row['T']}, N·T=2^{row['NT'].bit_length() - 1}: best FPT {best:.2f}x"
        if target:
            text += f" ({'meets' if best >= target else 'misses'} {target}x)"
        if "spikingjelly_speedup" in row:
            sj = row["spikingjelly_speedup"]
            text += f", spikingjelly {sj:.2f}x ({'matched' if best >= sj else 'not matched'})"
        text += f", auto {row['fpt-auto_speedup']:.2f}x"
        print(text)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
