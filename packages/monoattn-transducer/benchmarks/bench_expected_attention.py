"""Expected monotonic attention: fused Triton vs torch (spec section 6), B*H=64, U=50, T=400,
forward only (target >= 1.5x on GPU). On CPU it times the torch reference alone.

    OMP_NUM_THREADS=1 python benchmarks/bench_expected_attention.py
"""

import torch
from monoattn_transducer import expected_monotonic_attention
from monoattn_transducer.bench import time_call

if __name__ == "__main__":
    torch.set_num_threads(1)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    N, R, T = 64, 51, 400
    p = torch.softmax(torch.randn(N, R, T, device=dev), -1)
    e = torch.randn(N, R, T, device=dev)
    t_torch = time_call(lambda: expected_monotonic_attention(p, e, backend="torch"), 10)
    print(f"{dev}: torch reference {t_torch * 1e3:.2f} ms (N={N}, U+1={R}, T={T})")
    if dev.type == "cuda":
        t_tri = time_call(lambda: expected_monotonic_attention(p, e, backend="triton"), 10)
        print(f"triton {t_tri * 1e3:.2f} ms; speed-up {t_torch / t_tri:.1f}x (target >= 1.5x)")
    else:
        print("GPU: not measured (no CUDA device here)")
