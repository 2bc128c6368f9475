"""Retrieval recall@K: ours vs clip_benchmark's ``recall_at_k`` (target ratio <= 1.2), one process.

Spec size 5k images x 25k captions; default here 2k x 10k (the shared 2-core box has little
memory headroom): ``python benchmarks/bench_retrieval.py [--images 5000]``.
"""

import argparse
import json
import time

import numpy as np
import torch
from recap_datacomp.metrics import retrieval_from_scores


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--per-image", type=int, default=5)
    args = ap.parse_args()
    from clip_benchmark.metrics.zeroshot_retrieval import recall_at_k

    rng = np.random.default_rng(0)
    n, m = args.images, args.images * args.per_image
    scores = rng.normal(size=(m, n)).astype(np.float32)
    t2i = np.repeat(np.arange(n), args.per_image)
    t0 = time.perf_counter()
    ours = retrieval_from_scores(scores, t2i, ks=(1, 5, 10))
    ours_s = time.perf_counter() - t0
    s = torch.from_numpy(scores)
    pos = torch.zeros_like(s, dtype=torch.bool)
    pos[torch.arange(m), torch.from_numpy(t2i)] = True
    t0 = time.perf_counter()
    ref = {}
    for k in (1, 5, 10):
        ref[f"t2i_R@{k}"] = (recall_at_k(s, pos, k) > 0).double().mean().item()
        ref[f"i2t_R@{k}"] = (recall_at_k(s.T, pos.T, k) > 0).double().mean().item()
    ref_s = time.perf_counter() - t0
    equal = all(abs(ours[k] - ref[k]) < 1e-9 for k in ours)
    result = {"images": n, "captions": m, "ours_s": ours_s, "clip_benchmark_s": ref_s}
    result.update(ratio=ours_s / ref_s, target="<= 1.2", equal=equal)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
