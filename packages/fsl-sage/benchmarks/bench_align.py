"""Alignment step: closed-form linear-aux gradient vs autograd double backward (spec Sec. 6).

B = 1000, d = 2304, C = 10 (the spec's benchmark shape); target ratio >= 1.5x; also against
``torch.compile`` of the autograd path.
Correctness is gated by tests/test_aux.py::test_closed_form_matches_double_backward.

    python benchmarks/bench_align.py
"""

import platform
from datetime import UTC, datetime

import torch
from fsl_sage.benchmark import align_step_timings

if __name__ == "__main__":
    torch.set_num_threads(1)
    t = align_step_timings()
    print(f"# bench_align ({datetime.now(UTC):%Y-%m-%d}, {platform.machine()}, 1 thread)")
    print("| method | ms per step | closed form speed-up |")
    print("|---|---|---|")
    for name in ("closed_form", "double_backward", "double_backward_compiled"):
        if name in t:
            print(f"| {name} | {1e3 * t[name]:.2f} | {t[name] / t['closed_form']:.2f}x |")
    print(f"input checks (once per align call, not per step): {1e3 * t['input_checks']:.2f} ms")
    if "compile_error" in t:
        print(f"torch.compile unavailable here: {t['compile_error']}")
