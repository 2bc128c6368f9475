"""Superclass scoring: ``aggregate`` (one matrix product) against the official per-sample dict
loop (``laionc/evaluation.py``) on 10 000 softmax rows. Spec §6 target: >= 20x.
Run: ``python benchmarks/bench_scoring.py``.
"""

from __future__ import annotations

import platform
import time
from collections import defaultdict

import numpy as np
from laion_c import SUPERCLASSES, aggregate


def dict_loop(probs):
    owner = {c: name for name, members in SUPERCLASSES.items() for c in members}
    categories = [owner.get(c) for c in range(probs.shape[1])]
    preds = []
    for row in probs:
        by_class = defaultdict(list)
        for cls, p in zip(categories, row, strict=True):
            if cls is not None:
                by_class[cls].append(p)
        means = {cls: sum(v) / len(v) for cls, v in by_class.items()}
        preds.append(max(means, key=means.get))
    return preds


def timed(fn, repeats: int) -> float:
    """Median seconds of `repeats` calls of `fn`."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(10_000, 1000))
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    ours = aggregate(probs).argmax(1)  # warm-up (builds the superclass matrix once)
    t_ours = timed(lambda: aggregate(probs).argmax(1), 7)
    loop = dict_loop(probs)
    t_loop = timed(lambda: dict_loop(probs), 3)
    names = list(SUPERCLASSES)
    assert [names[i] for i in ours] == loop
    print(f"# bench_scoring — 10 000 x 1000 probabilities; {platform.machine()}")
    print("| method | time (s) | ratio |")
    print("| --- | --- | --- |")
    print(f"| aggregate (probs @ M) | {t_ours:.4f} | 1.0x |")
    print(f"| official dict loop | {t_loop:.3f} | {t_loop / t_ours:.0f}x |")


if __name__ == "__main__":
    main()
