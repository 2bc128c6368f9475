"""Memory-path overhead: wrapped / bare LLM forward, wall time and FLOPs (spec §6).

Expected FLOPs ratio ~ 1 + 1/k when the block's d_ff matches the LLM's and M ~ L. Random Llama
(d 256, 8 layers, 4 heads, d_ff 688), one 3x2 image (T=16: 1792 image tokens) + 64 text tokens.
Run: python benchmarks/bench_memory_overhead.py
"""

from __future__ import annotations

import time

import torch
from comemo_lvlm import TileGrid, attach_memory_path, build_position_ids
from torch.utils.flop_counter import FlopCounterMode
from transformers import LlamaConfig, LlamaForCausalLM

S, E, C, T = 1, 2, 3, 16


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=512,
        hidden_size=256,
        intermediate_size=688,
        num_hidden_layers=8,
        num_attention_heads=4,
        num_key_value_heads=4,
        rope_theta=1e6,
        max_position_embeddings=8192,
        attn_implementation="sdpa",
    )
    lm = LlamaForCausalLM(cfg).eval()
    g = TileGrid(3, 2)
    ids = torch.tensor([[5] * 32 + [S] + [C] * (g.n_images * T * T) + [E] + [6] * 32])
    plan = build_position_ids(ids, [[g]], img_start_id=S, img_end_id=E, T=T)
    am = torch.ones_like(ids)
    media = torch.randn(1, plan.media_position_ids.shape[1], 256)

    def bare():
        return lm(input_ids=ids, attention_mask=am, position_ids=plan.position_ids, use_cache=False)

    def timed(fn, reps=3):
        fn()
        best = float("inf")
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        return best

    def flops(fn):
        with FlopCounterMode(display=False) as fc:
            fn()
        return fc.get_total_flops()

    with torch.no_grad():
        t_bare, f_bare = timed(bare), flops(bare)
        for k in (4, 2):
            path = attach_memory_path(lm, every_n=k)

            def wrapped(path=path):
                with path.condition(media, plan.position_ids, plan.media_position_ids):
                    return bare()

            t_w, f_w = timed(wrapped), flops(wrapped)
            print(
                f"every_n={k}: wall {t_w / t_bare:.3f}x "
                f"({t_bare * 1e3:.0f} -> {t_w * 1e3:.0f} ms), "
                f"FLOPs {f_w / f_bare:.3f}x (1 + 1/k = {1 + 1 / k:.3f})"
            )
            path.detach()


if __name__ == "__main__":
    main()
