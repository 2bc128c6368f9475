"""Vectorised RoPE-DHR builder vs the line-by-line port of the official loop (spec §6).

Target: >= 20x on a 12-tile (4x3) image and on 48-image packed samples. Correctness gate: the
two give identical ids (checked before timing; tests/test_positions.py checks it in CI).
Run: python benchmarks/bench_positions.py
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _official_ref import ref_chat_position_ids
from comemo_lvlm import TileGrid, build_position_ids

S, E, C, T = 101, 102, 100, 16


def sample(grids: list[TileGrid], text: int = 10) -> list[int]:
    out = [5] * text
    for g in grids:
        out += [S] + [C] * (g.n_images * T * T) + [E] + [6] * text
    return out


def best_of(fn, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def case_single() -> tuple[float, float]:
    g = [TileGrid(4, 3)]
    ids = sample(g)
    x = torch.tensor([ids])
    want, _ = ref_chat_position_ids(ids, [tuple(t) for t in g], S, E, T)
    got = build_position_ids(x, [g], img_start_id=S, img_end_id=E, T=T, layout="comemo_compat")
    assert got.position_ids[0].tolist() == want
    ref = best_of(lambda: ref_chat_position_ids(ids, [(4, 3)], S, E, T), 20)
    ours = best_of(
        lambda: build_position_ids(
            x, [g], img_start_id=S, img_end_id=E, T=T, layout="comemo_compat"
        ),
        50,
    )
    return ref, ours


def case_packed() -> tuple[float, float]:
    gen = torch.Generator().manual_seed(0)
    choices = [TileGrid(1, 1), TileGrid(2, 1), TileGrid(2, 2), TileGrid(3, 2), TileGrid(4, 3)]
    samples, grids = [], []
    for _ in range(48):  # 48 samples of one image each, packed in one row
        g = [choices[int(torch.randint(0, len(choices), (1,), generator=gen))]]
        samples.append(sample(g))
        grids.append(g)
    row = [t for s in samples for t in s]
    lens = [len(s) for s in samples]
    x = torch.tensor([row])
    flat = [g for gs in grids for g in gs]

    def ref():
        out = []
        for s, g in zip(samples, grids, strict=True):
            out += ref_chat_position_ids(s, [tuple(t) for t in g], S, E, T)[0]
        return out

    def ours():
        return build_position_ids(
            x, [flat], img_start_id=S, img_end_id=E, T=T, layout="comemo_compat", sample_lens=[lens]
        )

    assert ours().position_ids[0].tolist() == ref()
    return best_of(ref, 5), best_of(ours, 20)


def main() -> None:
    torch.set_num_threads(1)
    print(f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}")
    for name, fn in (("12-tile image (4x3)", case_single), ("48 packed samples", case_packed)):
        ref, ours = fn()
        print(
            f"{name}: reference loop {ref * 1e3:.2f} ms, vectorised {ours * 1e3:.3f} ms, "
            f"speed-up {ref / ours:.1f}x (target >= 20x)"
        )


if __name__ == "__main__":
    main()
