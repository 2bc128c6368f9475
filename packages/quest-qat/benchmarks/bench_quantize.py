"""Fused Triton QuEST forward vs a memcpy of x (spec §6 target: <= 1.6x memcpy), GPU only.

Without a GPU it says so and exits 0 (the interpreter is not a speed measurement).
Run: ``python benchmarks/bench_quantize.py``.
"""

import time

import torch


def main():
    if not torch.cuda.is_available():
        print("bench_quantize: no GPU here; nothing timed")
        return
    from quest_qat import optimal_gaussian_scale
    from quest_qat.kernels.quest import quest_fwd_triton

    x = torch.randn(16384, 4096, device="cuda", dtype=torch.bfloat16)

    def timed(fn, repeats=20):
        fn()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / repeats

    t_q = timed(lambda: quest_fwd_triton(x, 4, 128, 1.0, None, True, optimal_gaussian_scale(4)))
    t_c = timed(lambda: x.clone())
    print(f"quest_fwd 16384x4096 bf16 on {torch.cuda.get_device_name()}: "
          f"{t_q * 1e3:.3f} ms = {t_q / t_c:.2f}x memcpy")  # fmt: skip


if __name__ == "__main__":
    main()
