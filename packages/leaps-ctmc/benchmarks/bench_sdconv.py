"""Benchmark the hollow state-dependent conv forms (spec section 6).

Ratio asked by the spec: CPU loop-over-offsets vs the gathering (unfold-style) reference,
B = 256, L = 15, C = 20, k = 15, Ising input (one channel). Only forms whose correctness tests
pass (tests/test_kernels_sdconv.py) are timed. Usage: python bench_sdconv.py [--batch 256]
"""

import argparse
import platform
import time

import torch
from leaps_ctmc.kernels.sdconv import FORMS, sdconv


def best_times(fns, repeat):
    """Fastest of `repeat` runs of each function, taken round-robin so that the load of a
    shared machine hits every form alike."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--L", type=int, default=15)
    parser.add_argument("--channels", type=int, default=20)
    parser.add_argument("--k", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    B, C, L, k = args.batch, args.channels, args.L, args.k
    h = torch.randn(B, C, L, L, generator=g)
    e = torch.randn(B, 1, L, L, generator=g).sign()
    A = torch.randn(C, k * k, C, generator=g) / C
    b1, b2 = torch.randn(C, k * k, generator=g), torch.randn(C, k * k, generator=g)
    m = torch.randn(B, k * k, generator=g)
    fns = {form: lambda form=form: sdconv(h, e, A, b1, b2, m, form=form) for form in FORMS}
    with torch.inference_mode():
        times = best_times(fns, args.repeat)
    machine = f"{platform.machine()} CPU, 1 thread, torch {torch.__version__}"
    print(f"sdconv forward, B={B} L={L} C={C} k={k}, {machine}")
    for form, seconds in times.items():
        print(
            f"  {form:9s} {seconds * 1e3:9.1f} ms   naive / {form} = {times['naive'] / seconds:.2f}"
        )


if __name__ == "__main__":
    main()
