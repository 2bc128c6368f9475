"""The converted W4A4 layer vs ``nn.Linear``, and the native int4 GEMM (quest-qat-kernels) vs bf16
``matmul`` and ``torch._int_mm`` (spec §6).

Layer (CPU and GPU): ``QuESTInt4Linear`` W4A4 forward (online Hadamard and activation codes, the
int32 GEMM, the gemm-quest epilogue) against ``nn.Linear`` at the same shape, K = N = 4096, M = 1,
16, 512, gated on its agreement with the fake-quantized layer (``bench_deploy.layer_vs_linear``;
ratio = ours / nn.Linear). On the CPU the GEMM is ``torch._int_mm`` of the unpacked codes.

Kernel (GPU only): shapes N x K in {4096², 11008 x 4096, 22016 x 4096, 8192²}, M in {1, 16,
4096} (M <= 16 runs the split-K GEMV kernel, M > 16 the tiled one; both int8 ``mma.sync``); the
output is checked exact against the reference before timing. Ratios are speed-ups of ours
(> 1: ours faster).
Spec targets: >= 2x bf16 at M = 1, N = K = 8192; >= 0.5x ``torch._int_mm`` at M = 4096
(``_int_mm`` needs M > 16). Records, never asserts. Without a GPU or without
``quest-qat-kernels`` it says so and exits 0.
Run: ``python benchmarks/bench_int4_gemm.py``.
"""

import time

import torch
from bench_deploy import run
from quest_qat import QuESTConfig, int4_matmul, pack_int4
from quest_qat.nn import int4_gemm


def timed(fn, repeats=20):
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / repeats


def main():
    dtypes = [torch.bfloat16] if torch.cuda.is_available() else [torch.float32, torch.bfloat16]
    run({"W4A4": QuESTConfig(4, 4)}, [1, 16, 512], 4096, dtypes)
    if not torch.cuda.is_available():
        print("bench_int4_gemm: no GPU here; the native kernel was not timed")
        return
    try:
        import quest_qat_kernels
    except ImportError:
        print("bench_int4_gemm: quest-qat-kernels is not installed; nothing timed")
        return
    print(f"int4 GEMM on {torch.cuda.get_device_name()}")
    for n, k in [(4096, 4096), (11008, 4096), (22016, 4096), (8192, 8192)]:
        for m in (1, 16, 4096):
            a = torch.randint(-8, 8, (m, k), dtype=torch.int8, device="cuda")
            w = pack_int4(torch.randint(-8, 8, (n, k), dtype=torch.int8, device="cuda"))
            assert torch.equal(int4_gemm(a, w), int4_matmul(a, w))
            t_ours = timed(lambda a=a, w=w: int4_gemm(a, w))
            ab, wb = a.bfloat16(), torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
            t_bf16 = timed(lambda ab=ab, wb=wb: ab @ wb.T)
            path = quest_qat_kernels.gemm_path(m)
            line = f"  M={m:<5} N={n:<6} K={k} ({path}): ours {t_ours * 1e6:9.1f} us"
            line += f", bf16 x{t_bf16 / t_ours:5.2f}"
            if m > 16:
                w8 = torch.randint(-8, 8, (k, n), dtype=torch.int8, device="cuda")
                t_int = timed(lambda a=a, w8=w8: torch._int_mm(a, w8))
                line += f", _int_mm x{t_int / t_ours:5.2f}"
            else:
                line += ", _int_mm n/a (needs M > 16)"
            print(line)


if __name__ == "__main__":
    main()
