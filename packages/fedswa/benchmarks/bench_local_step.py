"""The corrected, clipped local step with ``torch._foreach_*`` against a per-parameter Python loop
(the official code's style), on ResNet-18's 62 parameter tensors and the MLP 784-200-10; and the
time of one client round of FedMoSWA and FedSAM over FedAvg's.

Spec targets (§6): step >= 3x; round time FedMoSWA/FedAvg <= 1.3, FedSAM/FedAvg ~ 2.
Run: ``python benchmarks/bench_local_step.py`` (one process).
"""

from __future__ import annotations

import argparse
import platform

import torch
from fedswa.bench import bench_local_step, bench_round_time


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print(f"machine: {platform.machine()} {platform.processor() or ''}, torch {torch.__version__}")
    for row in bench_local_step(args.repeats):
        print(
            f"local step | {row['case']} | foreach {1e3 * row['ours_s']:.3f} ms | "
            f"per-parameter loop {1e3 * row['loop_s']:.3f} ms | ratio {row['ratio']:.2f}"
        )
    for row in bench_round_time():
        print(f"round time | {row['case']} | {row['seconds']:.3f} s | ratio {row['ratio']:.2f}")


if __name__ == "__main__":
    main()
