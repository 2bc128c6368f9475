"""Benchmark the FINOLA scan, forward + backward (spec §6): batched scan vs the per-position loop.

    python benchmarks/bench_scan.py [--channels 256] [--grid 32] [--batch 8] [--repeats 5]

Both compute the same map (tests/test_functional.py checks them equal to 1e-12 in float64): the
reference loop steps one position at a time with plain autograd (``naive=True``), the scan steps
every row of a phase at once and recomputes ẑ in its custom backward. Interleaved repeats in one
process, median wall time of forward + backward (sum of the map as the loss). On a CUDA GPU it
also times the fused Triton step against the PyTorch scan and reports achieved TFLOP/s (≈ 2C²hw
FLOPs per image forward) against cuBLAS on the same GEMM shape. Target (spec §6): scan >= 10x
the loop at C = 256, grid 32², N = 8 on CPU. Figures go to benchmarks/RESULTS.md with date and
machine.
"""

import argparse
import os
import platform
import statistics
import time
from datetime import UTC, datetime

import torch
from finola.functional import finola_scan

TARGET = 10.0


def _time(fn, device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=256)
    parser.add_argument("--grid", type=int, default=32)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    C, g, N = args.channels, args.grid, args.batch
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(N, C, generator=gen).to(device).requires_grad_()
    A, B = ((0.3 * torch.randn(C, C, generator=gen) / C**0.5).to(device).requires_grad_()
            for _ in range(2))  # fmt: skip

    def run(**kw):
        def step():
            finola_scan(q, A, B, g, **kw).sum().backward()

        return step

    variants = {"loop": run(naive=True), "scan": run(backend="torch")}
    if device.type == "cuda":
        variants["scan-triton"] = run(backend="triton")
    for fn in variants.values():  # warm-up (Triton compiles here)
        fn()
    times = {name: [] for name in variants}
    for _ in range(args.repeats):
        for name, fn in variants.items():
            times[name].append(_time(fn, device))
    median = {name: statistics.median(t) for name, t in times.items()}
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, torch {torch.__version__}, {torch.get_num_threads()} thread(s), "
        f"device {torch.cuda.get_device_name() if device.type == 'cuda' else 'cpu'}"
    )
    print(f"C={C}, grid {g}x{g}, N={N}, forward + backward, median of {args.repeats}:")
    for name, t in median.items():
        print(f"  {name:12s} {t * 1e3:9.2f} ms  ({median['loop'] / t:6.2f}x the loop)")
    ratio = median["loop"] / median["scan"]
    print(f"scan vs loop: {ratio:.1f}x, {'meets' if ratio >= TARGET else 'misses'} {TARGET}x")
    flops = 3 * 2 * C * C * g * g * N  # forward GEMMs + the two backward GEMMs
    for name, t in median.items():
        print(f"  {name}: {flops / t / 1e9:.1f} GFLOP/s (GEMMs only)")
    if device.type == "cuda":
        x = torch.randn(N * g, C, device=device)
        w = torch.randn(C, C, device=device)
        steps = 2 * (g - 1)
        gemm = statistics.median(
            _time(lambda: [x @ w for _ in range(3 * steps)], device) for _ in range(args.repeats)
        )
        print(f"  cuBLAS, same GEMM shapes: {flops / gemm / 1e9:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
