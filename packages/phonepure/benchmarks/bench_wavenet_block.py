"""DiffWave's residual stack: eager vs ``torch.compile``, and the gate's PyTorch reference vs
the fused Triton kernel (spec section 6; the kernel is kept as the default only if >= 1.3x on a
GPU, which needs a CUDA device: on CPU that row is skipped, the Triton interpreter says nothing
about speed).

Run: ``python benchmarks/bench_wavenet_block.py [--device cuda] [--repeat 5]``. Times are the
median of `repeat` calls after two warm-up calls (compilation happens in the warm-up), forward
only under ``torch.no_grad()``, one 1-s chunk (16 000 samples) per example.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from phonepure import DiffWave, gated_activation_reference


def _median_time(fn, repeat: int, device: torch.device) -> float:
    for _ in range(2):
        fn()
    times = []
    for _ in range(repeat):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--batch", type=int, default=4, help="1-s chunks per call")
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    dev = torch.device(args.device)
    torch.manual_seed(0)
    print(
        f"# bench_wavenet_block: device {dev}, batch {args.batch} x 16 000 samples, "
        f"{torch.get_num_threads()} thread(s), torch {torch.__version__}"
    )
    print("| model | eager (ms) | torch.compile (ms) | eager / compiled |")
    print("| --- | --- | --- | --- |")
    for name, size in (("tiny (32 ch, 6 layers)", (32, 32, 6, 6)),
                       ("paper (256 ch, 36 layers)", (256, 256, 36, 12))):  # fmt: skip
        model = DiffWave(*size).to(dev).eval()
        x = torch.randn(args.batch, 1, 16000, device=dev)
        t = torch.full((args.batch,), 3, device=dev)
        compiled = torch.compile(model)
        with torch.no_grad():
            eager_s = _median_time(lambda m=model, x=x, t=t: m(x, t), args.repeat, dev)
            comp_s = _median_time(lambda m=compiled, x=x, t=t: m(x, t), args.repeat, dev)
        print(f"| {name} | {1e3 * eager_s:.1f} | {1e3 * comp_s:.1f} | {eager_s / comp_s:.2f}x |")

    print()
    print("| gate (B, 2C, L) | reference (ms) | Triton (ms) | reference / Triton |")
    print("| --- | --- | --- | --- |")
    for C in (32, 256):
        z = torch.randn(args.batch, 2 * C, 16000, device=dev)
        bias = torch.randn(2 * C, device=dev)
        ref_s = _median_time(
            lambda z=z, bias=bias: gated_activation_reference(z, bias), args.repeat, dev
        )
        if dev.type == "cuda":
            from phonepure.kernels.gate_triton import triton_gated_activation

            b = bias.expand(args.batch, 2 * C)
            tri_s = _median_time(lambda z=z, b=b: triton_gated_activation(z, b), args.repeat, dev)
            cells = f"{1e3 * tri_s:.2f} | {ref_s / tri_s:.2f}x"
        else:
            cells = "— (needs CUDA) | —"
        print(f"| ({args.batch}, {2 * C}, 16000) | {1e3 * ref_s:.2f} | {cells} |")


if __name__ == "__main__":
    main()
