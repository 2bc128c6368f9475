"""Tied row attention: einsum reference vs one SDPA call (rows in the head dim), fwd + bwd,
B=32, R=6, C=30, D=512 (8 heads of 64). Gain unverified in the spec."""

import time

import torch
from ranknovo.kernels.row_attention import row_attention_einsum, row_attention_sdpa


def main(b=32, r=6, c=30, h=8, dh=64, repeat=5):
    torch.manual_seed(0)
    q, k, v = (torch.randn(b, r, c, h, dh, requires_grad=True) for _ in range(3))
    rm = torch.ones(b, r, dtype=torch.bool)
    cm = torch.ones(b, c, dtype=torch.bool)
    rm[::2, 4:] = False
    cm[::3, 20:] = False
    print(f"row attention fwd+bwd, B={b} R={r} C={c} D={h * dh}, CPU float32")
    print("| implementation | ms | speed-up |\n|---|---|---|")
    base = None
    for name, fn in (("einsum", row_attention_einsum), ("SDPA", row_attention_sdpa)):
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn(q, k, v, rm, cm).sum().backward()
            best = min(best, time.perf_counter() - t0)
        base = base or best
        print(f"| {name} | {best * 1e3:.1f} | {base / best:.2f}x |")


if __name__ == "__main__":
    main()
