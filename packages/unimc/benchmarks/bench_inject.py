"""Conditioned / plain TinyDiT forward with 10 instances (spec target on CPU: <= 1.10).

python benchmarks/bench_inject.py [--repeats 20]
"""

from __future__ import annotations

import argparse
import time

import torch
from unimc import AP10K17, COCO17, ConditionTokenizer, TinyDiT, inject_conditions


def _time(fn, repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args()
    torch.manual_seed(0)
    dit = TinyDiT(image_size=32, patch_size=4, d_model=128, depth=4, n_heads=4).eval()
    tok = ConditionTokenizer(2, 128, skeleton_of_class={0: COCO17, 1: AP10K17})
    b, n = args.batch, 10
    classes = torch.randint(0, 2, (b, n))
    lo = torch.rand(b, n, 2) * 0.5
    boxes = torch.cat([lo, lo + 0.4], -1)
    kp = torch.cat([torch.rand(b, n, 17, 2), torch.full((b, n, 17, 1), 2.0)], -1)
    mask = torch.ones(b, n, dtype=torch.bool)
    x, t = torch.randn(b, 3, 32, 32), torch.rand(b)
    with torch.no_grad():
        plain = _time(lambda: dit(x, t), args.repeats)
        h = inject_conditions(dit, d_cond=128, freeze=False)  # fresh model: see inject_conditions
        toks = tok(classes, boxes, kp, mask)

        def cond():
            with h.condition(toks):
                dit(x, t)

        def cond_with_tokenizer():
            with h.condition(tok(classes, boxes, kp, mask)):
                dit(x, t)

        c = _time(cond, args.repeats)
        ct = _time(cond_with_tokenizer, args.repeats)
    print(f"TinyDiT d128x4, 64 image tokens, batch {b}, {n} instances ({n * 18} condition tokens)")
    print(f"plain forward          {plain * 1e3:8.2f} ms")
    print(f"conditioned forward    {c * 1e3:8.2f} ms   ratio {c / plain:.2f} (target <= 1.10)")
    print(f"  + tokenizer          {ct * 1e3:8.2f} ms   ratio {ct / plain:.2f}")


if __name__ == "__main__":
    main()
