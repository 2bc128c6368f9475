"""RNN-T loss fwd+bwd timings (spec section 6), one process.

CPU: ours (torch anti-diagonal) vs warprnnt-numba at B=8, T=100, U=30, V=64 (target: speed ratio
>= 1/3) and vs a naive per-(t, u) Python loop (target >= 5x).
GPU (only where CUDA is present): the Triton kernel vs the torch reference at B=32, T=200, U=50,
V=500 (target >= 5x), plus the peak memory the loss adds beyond the logits.

    OMP_NUM_THREADS=1 python benchmarks/bench_rnnt_loss.py
"""

import torch
from monoattn_transducer import rnnt_loss
from monoattn_transducer.bench import bench_cpu, time_call


def bench_gpu(B: int = 32, T: int = 200, U: int = 50, V: int = 500) -> list[str]:
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(B, T, U + 1, V, device=dev, generator=g, requires_grad=True)
    y = torch.randint(1, V, (B, U), device=dev, generator=g)
    tl = torch.full((B,), T, device=dev)
    ul = torch.full((B,), U, device=dev)
    lines = [f"GPU {torch.cuda.get_device_name()} shape B={B} T={T} U={U} V={V} fwd+bwd"]
    times = {}
    for backend in ("torch", "triton"):
        times[backend] = time_call(
            lambda b=backend: rnnt_loss(x, y, tl, ul, reduction="sum", backend=b).backward(), 5
        )
        lines.append(f"{backend}: {times[backend] * 1e3:.2f} ms")
    lines.append(f"triton speed-up over torch reference: {times['torch'] / times['triton']:.1f}x "
                 "(target >= 5x)")  # fmt: skip
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    rnnt_loss(x, y, tl, ul, reduction="sum").backward()
    extra = torch.cuda.max_memory_allocated() - base
    lines.append(f"peak memory beyond logits+grad during fwd+bwd: {extra / 2**20:.0f} MiB "
                 f"(logits are {x.numel() * 4 / 2**20:.0f} MiB)")  # fmt: skip
    return lines


if __name__ == "__main__":
    torch.set_num_threads(1)
    for line in bench_cpu():
        print(line)
    if torch.cuda.is_available():
        for line in bench_gpu():
            print(line)
    else:
        print("GPU: not measured (no CUDA device here)")
