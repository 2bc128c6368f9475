"""Benchmark one LIF layer, forward + backward (spec §6): FPT vs the per-step loop.

    python benchmarks/bench_fpt.py [--T 8 32 128 512] [--sizes 65536 1048576] [--repeats 5]

FPT dense and chunked against (a) an autograd per-step loop with the same sigmoid surrogate
and (b) spikingjelly's multi-step ``LIFNode`` CPU path (report only), interleaved repeats in one
process, median times. Targets (spec §6): >= 3x vs the loop at N·T = 2^16, T >= 32; >= 1.5x at
N·T = 2^20, T >= 32. Figures go to benchmarks/RESULTS.md with date and machine.
"""

import argparse
import os
import platform
from datetime import UTC, datetime

import torch
from fpt_snn.bench import benchmark, format_rows

TARGETS = {2**16: 3.0, 2**20: 1.5}  # speed-up over the loop required at T >= 32


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--T", type=int, nargs="+", default=[8, 32, 128, 512])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2**16, 2**20])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    rows = benchmark(args.T, args.sizes, args.repeats, extra=spikingjelly_lif())
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, torch {torch.__version__}, {torch.get_num_threads()} thread(s)"
    )
    print(format_rows(rows))
    for row in rows:
        target = TARGETS.get(row["NT"])
        if target and row["T"] >= 32:
            best = max(row["fpt-dense_speedup"], row["fpt-chunked_speedup"])
            verdict = "meets" if best >= target else "misses"
            print(f"T={row['T']}, N·T={row['NT']}: best FPT {best:.2f}x {verdict} {target}x")


if __name__ == "__main__":
    main()
