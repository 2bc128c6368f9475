# ruff: noqa: E501  (one table row per line)
"""oks_matrix vs pycocotools' per-pair computeOks loop (target >= 10x), and keypoint_ap vs raw
COCOeval (target <= 1.1x).

    python benchmarks/bench_oks.py [--n 1000]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import time

import numpy as np
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
from unimc import COCO17, keypoint_ap, oks_matrix


def scene(rng, n_img, per_img, k=17):
    images = [{"id": i + 1, "width": 640, "height": 480} for i in range(n_img)]
    anns, dets, aid = [], [], 1
    for im in images:
        for _ in range(per_img):
            kp = np.c_[rng.uniform(0, 600, (k, 2)), rng.integers(0, 3, k)]
            x0, y0 = kp[:, :2].min(0)
            x1, y1 = kp[:, :2].max(0)
            anns.append({"id": aid, "image_id": im["id"], "category_id": 1, "iscrowd": 0,
                         "keypoints": kp.ravel().tolist(), "num_keypoints": int((kp[:, 2] > 0).sum()),
                         "bbox": [x0, y0, x1 - x0, y1 - y0], "area": float((x1 - x0) * (y1 - y0))})  # fmt: skip
            aid += 1
            d = kp.copy()
            d[:, :2] += rng.normal(0, 10, (k, 2))
            dets.append({"image_id": im["id"], "category_id": 1, "keypoints": d.ravel().tolist(),
                         "score": float(rng.random())})  # fmt: skip
    return {"images": images, "annotations": anns, "categories": [{"id": 1, "name": "p"}]}, dets


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    sig = COCO17.sigma_array()
    gt, dets = scene(rng, 1, args.n)
    with contextlib.redirect_stdout(io.StringIO()):
        g = COCO()
        g.dataset = copy.deepcopy(gt)
        g.createIndex()
        d = g.loadRes(copy.deepcopy(dets))
        e = COCOeval(g, d, "keypoints")
        e.params.kpt_oks_sigmas = sig
        e.params.maxDets = [args.n]
        e._prepare()
    t = time.perf_counter()
    ref = np.asarray(e.computeOks(1, 1))
    t_ref = time.perf_counter() - t
    dt_sorted = sorted(dets, key=lambda x: -x["score"])
    a = np.array([x["keypoints"] for x in dt_sorted]).reshape(-1, 17, 3)
    gk = np.array([x["keypoints"] for x in gt["annotations"]]).reshape(-1, 17, 3)
    area = [x["area"] for x in gt["annotations"]]
    box = [x["bbox"] for x in gt["annotations"]]
    t = time.perf_counter()
    ours = oks_matrix(a, gk, area, box, sig)
    t_ours = time.perf_counter() - t
    assert np.allclose(ours, ref, atol=1e-12, rtol=0)
    print(f"OKS {args.n} x {args.n}: pycocotools computeOks {t_ref:.2f} s, oks_matrix {t_ours:.3f} s,"
          f" speed-up {t_ref / t_ours:.1f}x (target >= 10x)")  # fmt: skip

    gt2, dets2 = scene(rng, 200, 8)

    def raw():
        with contextlib.redirect_stdout(io.StringIO()):
            g = COCO()
            g.dataset = copy.deepcopy(gt2)
            g.createIndex()
            d = g.loadRes(copy.deepcopy(dets2))
            e = COCOeval(g, d, "keypoints")
            e.params.kpt_oks_sigmas = sig
            e.evaluate()
            e.accumulate()
            e.summarize()
        return e.stats

    t = time.perf_counter()
    s_raw = raw()
    t_raw = time.perf_counter() - t
    t = time.perf_counter()
    s_ours = keypoint_ap(gt2, dets2, {1: sig})[1]
    t_wrap = time.perf_counter() - t
    assert np.allclose(s_raw, s_ours, atol=1e-12, rtol=0)
    print(f"keypoint AP, 200 images x 8: raw COCOeval {t_raw:.2f} s, keypoint_ap {t_wrap:.2f} s,"
          f" ratio {t_wrap / t_raw:.2f} (target <= 1.1)")  # fmt: skip


if __name__ == "__main__":
    main()
