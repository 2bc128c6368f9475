"""Aggregating 10 client updates with ``fedswa.server_step``, in GB/s of update bytes, against
``torch`` memcpy of the same bytes (ResNet-18-sized and MLP-sized state dicts).

Spec target (§6): >= 0.3 of memcpy. Run: ``python benchmarks/bench_server.py`` (one process).
"""

from __future__ import annotations

import argparse
import platform

import torch
from fedswa.bench import bench_server


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print(f"machine: {platform.machine()} {platform.processor() or ''}, torch {torch.__version__}")
    for row in bench_server(repeats=args.repeats):
        print(
            f"server | {row['case']} | {row['bytes'] / 1e6:.1f} MB | {row['ours_gbs']:.3f} GB/s | "
            f"memcpy {row['memcpy_gbs']:.2f} GB/s | ratio {row['ratio']:.3f}"
        )


if __name__ == "__main__":
    main()
