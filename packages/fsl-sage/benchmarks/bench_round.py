"""One round, FSL-SAGE (aligning) vs SplitFed-v2: wall time (report) and bytes (exact).

2 clients x 256 random 28x28 images, batch 64, simple_conv widths 16/32, q = 5.
Byte accounting is gated by tests/test_simulate.py::test_official_bytes_equal_closed_forms.

    python benchmarks/bench_round.py
"""

import platform
from datetime import UTC, datetime

import torch
from fsl_sage.benchmark import round_timings

if __name__ == "__main__":
    torch.set_num_threads(1)
    r = round_timings()
    print(f"# bench_round ({datetime.now(UTC):%Y-%m-%d}, {platform.machine()}, 1 thread)")
    print("| algorithm | s per round | official bytes per round |")
    print("|---|---|---|")
    for name in ("fsl_sage", "splitfed_v2"):
        print(f"| {name} | {r[f'{name}_s']:.2f} | {r[f'{name}_bytes']} |")
    print(f"time ratio FSL-SAGE / SplitFed-v2: {r['fsl_sage_s'] / r['splitfed_v2_s']:.2f}")
    print(f"bytes ratio FSL-SAGE / SplitFed-v2: {r['fsl_sage_bytes'] / r['splitfed_v2_bytes']:.4f}")
