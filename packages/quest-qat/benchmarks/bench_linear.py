"""QuESTLinear W4A4 forward+backward over nn.Linear forward+backward (spec §6 ``bench_linear``).

CPU target: <= 1.5x at M = 4096, K = N = 1024 (> 3x would mean a dense Hadamard is back);
GPU bf16 target <= 1.2x. Run: ``python benchmarks/bench_linear.py``. Ratio = ours / nn.Linear
(an overhead factor, lower is better).
"""

import argparse
import time

import torch
from quest_qat import QuESTConfig, prepare_
from torch import nn


def fwd_bwd_time(model, x, repeats=5):
    model(x).sum().backward()
    best = float("inf")
    for _ in range(repeats):
        if x.is_cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        model(x).sum().backward()
        if x.is_cuda:
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--m", type=int, default=4096)
    parser.add_argument("--k", type=int, default=1024)
    args = parser.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    torch.manual_seed(0)
    x = torch.randn(args.m, args.k, device=device, dtype=dtype, requires_grad=True)
    plain = nn.Sequential(nn.Linear(args.k, args.k)).to(device, dtype)
    quest = prepare_(nn.Sequential(nn.Linear(args.k, args.k)).to(device, dtype), QuESTConfig())
    t_plain, t_quest = fwd_bwd_time(plain, x), fwd_bwd_time(quest, x)
    print(f"linear fwd+bwd M={args.m} K=N={args.k} {dtype} on {device}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")  # fmt: skip
    print(f"  nn.Linear        {t_plain * 1e3:9.2f} ms")
    print(f"  QuESTLinear W4A4 {t_quest * 1e3:9.2f} ms   overhead {t_quest / t_plain:5.2f}x")


if __name__ == "__main__":
    main()
