# ruff: noqa: E501  (parametrised case tables read best one case per line)
import contextlib
import copy
import io
import math

import numpy as np
import pytest
import torch
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
from unimc import (
    AP10K17,
    COCO17,
    area_from_keypoints,
    count_error,
    fid_kid,
    keypoint_ap,
    oks_matrix,
)


def _scene(rng, n_img=3, cats=((1, 17), (2, 4)), n_gt=3, n_dt=4, empty_gt=True):
    images = [{"id": i + 1, "width": 200, "height": 200} for i in range(n_img)]
    anns, dets, aid = [], [], 1
    for im in images:
        for c, k in cats:
            for j in range(n_gt):
                kp = np.zeros((k, 3))
                kp[:, :2] = rng.uniform(20, 180, (k, 2))
                kp[:, 2] = rng.integers(0, 3, k)
                if empty_gt and j == 0 and im["id"] == 1:
                    kp[:, 2] = 0  # a gt with no labelled keypoint
                x0, y0 = kp[:, :2].min(0) - 5
                x1, y1 = kp[:, :2].max(0) + 5
                anns.append({
                    "id": aid, "image_id": im["id"], "category_id": c, "iscrowd": 0,
                    "keypoints": kp.ravel().tolist(), "num_keypoints": int((kp[:, 2] > 0).sum()),
                    "bbox": [x0, y0, x1 - x0, y1 - y0], "area": float((x1 - x0) * (y1 - y0) * 0.7),
                })  # fmt: skip
                aid += 1
                d = kp.copy()
                d[:, :2] += rng.normal(0, rng.uniform(1, 15), (k, 2))
                d[:, 2] = 1
                dets.append({"image_id": im["id"], "category_id": c, "keypoints": d.ravel().tolist(),
                             "score": float(rng.uniform(0.2, 1))})  # fmt: skip
            for _ in range(n_dt - n_gt):
                d = np.c_[rng.uniform(0, 200, (k, 2)), np.ones(k)]
                dets.append({"image_id": im["id"], "category_id": c, "keypoints": d.ravel().tolist(),
                             "score": float(rng.uniform(0, 1))})  # fmt: skip
    cats_ = [{"id": c, "name": f"c{c}"} for c, _ in cats]
    return {"images": images, "annotations": anns, "categories": cats_}, dets


def _cocoeval(gt, dets, cat, sigmas):
    with contextlib.redirect_stdout(io.StringIO()):
        g = COCO()
        g.dataset = copy.deepcopy(gt)
        g.createIndex()
        d = g.loadRes(copy.deepcopy([x for x in dets if x["category_id"] == cat]))
        e = COCOeval(g, d, "keypoints")
        e.params.catIds = [cat]
        e.params.kpt_oks_sigmas = np.asarray(sigmas)
        e._prepare()
    return e


@pytest.mark.parametrize(("cat", "k"), [(1, 17), (2, 4)])
def test_oks_matrix_equals_pycocotools_computeoks(rng, cat, k):
    gt, dets = _scene(rng)
    sig = COCO17.sigma_array() if k == 17 else np.array([0.05, 0.07, 0.1, 0.089])
    e = _cocoeval(gt, dets, cat, sig)
    for img in (1, 2):
        ref = np.asarray(e.computeOks(img, cat))
        g = [a for a in gt["annotations"] if a["image_id"] == img and a["category_id"] == cat]
        dt = sorted(
            [d for d in dets if d["image_id"] == img and d["category_id"] == cat],
            key=lambda d: -d["score"],
        )
        ours = oks_matrix(
            np.array([d["keypoints"] for d in dt]).reshape(len(dt), k, 3),
            np.array([a["keypoints"] for a in g]).reshape(len(g), k, 3),
            [a["area"] for a in g],
            [a["bbox"] for a in g],
            sig,
        )
        assert ours.shape == ref.shape
        np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12)
    assert any(a["num_keypoints"] == 0 for a in gt["annotations"])


def test_keypoint_ap_equals_cocoeval_stats(rng):
    gt, dets = _scene(rng, n_img=4)
    sig = {1: COCO17.sigma_array(), 2: np.array([0.05, 0.07, 0.1, 0.089])}
    ours = keypoint_ap(gt, dets, sig)
    for c in (1, 2):
        e = _cocoeval(gt, dets, c, sig[c])
        with contextlib.redirect_stdout(io.StringIO()):
            e.evaluate()
            e.accumulate()
            e.summarize()
        np.testing.assert_allclose(ours[c], e.stats, rtol=0, atol=1e-12)
    assert ours.mean.shape == (10,)


def test_keypoint_ap_perfect_and_missing_predictions(rng):
    gt, _ = _scene(rng, empty_gt=False)
    perfect = [
        {
            "image_id": a["image_id"],
            "category_id": a["category_id"],
            "keypoints": a["keypoints"],
            "score": 1.0,
        }
        for a in gt["annotations"]
    ]
    sig = {1: COCO17.sigma_array(), 2: np.full(4, 0.08)}
    res = keypoint_ap(gt, perfect, sig)
    assert res[1][0] == pytest.approx(1.0)
    assert res[2][0] == pytest.approx(1.0)
    none = keypoint_ap(gt, [d for d in perfect if d["category_id"] == 1], sig)
    assert none[2][0] == 0.0
    assert none[1][0] == pytest.approx(1.0)


def test_animal_sigmas_are_mmpose_ap10k():
    assert AP10K17.sigmas[:5] == (0.025, 0.025, 0.026, 0.035, 0.035)
    assert COCO17.sigmas[0] == pytest.approx(0.026)


def test_area_from_keypoints_ignores_unlabelled():
    k = np.array([[[10, 20, 2], [30, 60, 1], [0, 0, 0]], [[5, 5, 0], [9, 9, 0], [1, 1, 0]]], float)
    np.testing.assert_array_equal(area_from_keypoints(k), [20 * 40, 0])


def test_count_error_hand_cases():
    gt = {
        "images": [{"id": 1}, {"id": 2}],
        "annotations": [
            {"image_id": 1, "category_id": 1},
            {"image_id": 1, "category_id": 2},
            {"image_id": 2, "category_id": 1},
            {"image_id": 2, "category_id": 1, "iscrowd": 1},
        ],
        "categories": [{"id": 1}, {"id": 2}],
    }
    dets = [
        {"image_id": 1, "category_id": 1, "score": 0.9},
        {"image_id": 2, "category_id": 1, "score": 0.9},
        {"image_id": 2, "category_id": 1, "score": 0.8},
        {"image_id": 2, "category_id": 2, "score": 0.1},
    ]
    assert count_error(gt, dets) == pytest.approx((1 + 2) / 2)  # |2-1|, |1-3|
    assert count_error(gt, dets, 0.5) == pytest.approx((1 + 1) / 2)
    assert count_error(gt, dets, category_id=1) == pytest.approx((0 + 1) / 2)


class _Feat(torch.nn.Module):
    num_features = 12

    def forward(self, x):
        x = x.float()
        return torch.nn.functional.adaptive_avg_pool2d(x, 2).flatten(1)


def test_fid_kid_through_torchmetrics_matches_closed_form():
    pytest.importorskip("torchmetrics")
    from scipy import linalg

    g = torch.Generator().manual_seed(0)
    real = torch.rand(40, 3, 8, 8, generator=g)
    fake = (torch.rand(40, 3, 8, 8, generator=g) * 0.8 + 0.1).clamp(0, 1)
    out = fid_kid(real, fake, _Feat(), kid_subset_size=20, kid_subsets=5)
    f1 = _Feat()(real).double().numpy()
    f2 = _Feat()(fake).double().numpy()
    m1, m2 = f1.mean(0), f2.mean(0)
    s1, s2 = np.cov(f1, rowvar=False), np.cov(f2, rowvar=False)
    covmean = linalg.sqrtm(s1 @ s2).real
    ref = float(((m1 - m2) ** 2).sum() + np.trace(s1 + s2 - 2 * covmean))
    assert out["fid"] == pytest.approx(ref, rel=1e-3, abs=1e-4)
    assert math.isfinite(out["kid_mean"])


def _gt():
    return {
        "images": [{"id": 1, "width": 10, "height": 10}],
        "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "keypoints": [1, 1, 2] * 17,
                         "num_keypoints": 17, "bbox": [0, 0, 5, 5], "area": 25.0}],
        "categories": [{"id": 1, "name": "person"}],
    }  # fmt: skip


def _det(**kw):
    d = {"image_id": 1, "category_id": 1, "keypoints": [1, 1, 1] * 17, "score": 0.5}
    d.update(kw)
    return d


@pytest.mark.parametrize(
    ("args", "err", "match"),
    [
        ((_gt(), [_det()], {}), ValueError, "sigmas_by_class"),
        ((_gt(), [_det()], {1: np.full(4, 0.1)}), ValueError, "sigmas_by_class"),
        ((_gt(), [_det()], {1: np.full(17, -0.1)}), ValueError, "sigmas_by_class"),
        ((_gt(), [_det(image_id=9)], {1: COCO17.sigmas}), ValueError, "image_id"),
        ((_gt(), [_det(keypoints=[math.nan] * 51)], {1: COCO17.sigmas}), ValueError, "finite"),
        ((_gt(), [_det(keypoints=[1] * 12)], {1: COCO17.sigmas}), ValueError, "51"),
        (({"images": []}, [], {1: COCO17.sigmas}), ValueError, "gt_coco"),
        (
            (
                {
                    **_gt(),
                    "annotations": [
                        {k: v for k, v in _gt()["annotations"][0].items() if k != "area"}
                    ],
                },
                [],
                {1: COCO17.sigmas},
            ),
            ValueError,
            "area",
        ),
        (("gt.json", [], {1: COCO17.sigmas}), TypeError, "gt_coco"),
    ],
)
def test_keypoint_ap_bad_input(args, err, match):
    with pytest.raises(err, match=match):
        keypoint_ap(*args)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"dt": np.zeros((2, 17, 2))}, "dt"),
        ({"gt": np.zeros((2, 4, 3))}, "gt.*K=4"),
        ({"sigmas": np.zeros(17)}, "sigmas"),
        ({"sigmas": np.full(4, 0.1)}, "sigmas"),
        ({"gt_area": np.zeros(3)}, "gt_area"),
        ({"gt_box": np.zeros((2, 2))}, "gt_box"),
        ({"dt": np.full((2, 17, 3), np.nan)}, "dt.*NaN"),
    ],
)
def test_oks_matrix_bad_input(kwargs, match):
    args = {"dt": np.zeros((2, 17, 3)), "gt": np.zeros((2, 17, 3)), "gt_area": np.ones(2),
            "gt_box": np.ones((2, 4)), "sigmas": COCO17.sigma_array()}  # fmt: skip
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        oks_matrix(**args)


def test_fid_kid_bad_input():
    pytest.importorskip("torchmetrics")
    with pytest.raises(ValueError, match="real"):
        fid_kid(torch.rand(1, 3, 8, 8), torch.rand(4, 3, 8, 8), _Feat())
    with pytest.raises(TypeError, match="feature"):
        fid_kid(torch.rand(4, 3, 8, 8), torch.rand(4, 3, 8, 8), None)
    with pytest.raises(ValueError, match="fake"):
        fid_kid(torch.rand(4, 3, 8, 8), torch.full((4, 3, 8, 8), math.nan), _Feat())


def test_count_error_bad_input():
    with pytest.raises(ValueError, match="image_id"):
        count_error(_gt(), [_det(image_id=3)])
    with pytest.raises(ValueError, match="score_thr"):
        count_error(_gt(), [], math.nan)


def _stats_from_arrays(e):
    """The 10 keypoint stats read straight from COCOeval's accumulated arrays (one maxDets)."""
    p, r = e.eval["precision"], e.eval["recall"]  # [T, R, K, A, M], [T, K, A, M]
    t50 = int(np.argmin(np.abs(e.params.iouThrs - 0.5)))
    t75 = int(np.argmin(np.abs(e.params.iouThrs - 0.75)))

    def mean(x):
        x = x[x > -1]
        return float(x.mean()) if x.size else -1.0

    cases = ((0, None), (0, t50), (0, t75), (1, None), (2, None))  # (area range, IoU thr)
    out = [mean(p[:, :, :, a, 0] if t is None else p[t, :, :, a, 0]) for a, t in cases]
    out += [mean(r[:, :, a, 0] if t is None else r[t, :, a, 0]) for a, t in cases]
    return np.asarray(out)


@pytest.mark.parametrize("n", [1, 2, 20, 100])
def test_keypoint_ap_max_dets_equals_cocoeval_arrays(rng, n):
    # pycocotools' keypoint summary only knows maxDets 20 (it gave -1 for every other N)
    gt, dets = _scene(rng, n_dt=5)
    sig = {1: COCO17.sigma_array(), 2: np.array([0.05, 0.07, 0.1, 0.089])}
    res = keypoint_ap(gt, dets, sig, max_dets=n)
    for cat in (1, 2):
        e = _cocoeval(gt, dets, cat, sig[cat])
        e.params.maxDets = [n]
        with contextlib.redirect_stdout(io.StringIO()):
            e.evaluate()
            e.accumulate()
        ref = _stats_from_arrays(e)
        np.testing.assert_allclose(res[cat], ref, atol=1e-12)
        assert res[cat][0] >= 0
    if n == 1:  # one detection per image (of 5 per class) must lower the recall
        full = keypoint_ap(gt, dets, sig)
        assert res[1][5] < full[1][5]
