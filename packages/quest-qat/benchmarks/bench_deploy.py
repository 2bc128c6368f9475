"""Converted W4A16 (weight-only int4) and W8A8 (int8 x int8 -> int32 ``torch._int_mm``) layers
against ``nn.Linear`` at the same shape, forward only (inference), one process.

Each timing is gated on correctness: the converted layer's output is first compared with the
fake-quantized layer's (weight-only: bit for bit; integer GEMM: 1e-5 relative). Shapes: K = N =
4096 (a 7B model's attention projections), M = 1, 16 and 512 tokens; CPU float32 and bfloat16
activations (GPU: bfloat16). Ratio = converted / nn.Linear time (an overhead factor; below 1 the
converted layer is faster). ``bench_int4_gemm.py`` does the same for W4A4.
Run: ``python benchmarks/bench_deploy.py [--k 4096] [--m 1 16 512]``.
"""

import argparse
import copy
import time

import torch
from quest_qat import QuESTConfig, convert_, prepare_
from torch import nn


def best_of(fn, repeats=5):
    """Best wall time of `repeats` calls of `fn` (after one warm-up call), synchronising CUDA."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


@torch.no_grad()
def layer_vs_linear(config, m, k, n, dtype, device):
    """(converted layer time, nn.Linear time) in seconds for an (M, K) input, after checking the
    converted layer against the fake-quantized one."""
    torch.manual_seed(0)
    linear = nn.Sequential(nn.Linear(k, n)).to(device, dtype)
    fake = prepare_(copy.deepcopy(linear), config)
    x = torch.randn(m, k, device=device, dtype=dtype)
    expected = fake(x).float()
    converted = convert_(fake)
    got = converted(x).float()
    # float32: bit for bit (weight-only) or 1e-5; bf16/fp16: their rounding (the CPU int4 kernel
    # rounds Δ_w to bf16, and the fake-quantized bf16 layer rounds 8-bit x̂ to 8 mantissa bits)
    rel = (0.0 if config.a_bits is None else 1e-5) if dtype == torch.float32 else 2.0**-7
    if (got - expected).abs().max().item() > rel * expected.abs().max().item():
        raise AssertionError(f"{config}: the converted layer differs from the fake-quantized one")
    return best_of(lambda: converted(x)), best_of(lambda: linear(x))


def run(configs, ms, k, dtypes):
    """Print one line per (config, dtype, M): both times and the ratio."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    where = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    print(f"converted layer vs nn.Linear, forward, K=N={k}, on {where}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads")  # fmt: skip
    for name, config in configs.items():
        for dtype in dtypes:
            for m in ms:
                ours, plain = layer_vs_linear(config, m, k, k, dtype, device)
                print(f"  {name:<6} {str(dtype).removeprefix('torch.'):<8} M={m:<5} "
                      f"ours {ours * 1e3:9.3f} ms  nn.Linear {plain * 1e3:9.3f} ms  "
                      f"ratio {ours / plain:6.2f}")  # fmt: skip


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--m", type=int, nargs="+", default=[1, 16, 512])
    args = parser.parse_args(argv)
    dtypes = [torch.bfloat16] if torch.cuda.is_available() else [torch.float32, torch.bfloat16]
    configs = {"W4A16": QuESTConfig(4, None), "W8A8": QuESTConfig(8, 8)}
    run(configs, args.m, args.k, dtypes)


if __name__ == "__main__":
    main()
