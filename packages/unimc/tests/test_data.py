# ruff: noqa: E501  (parametrised case tables read best one case per line)
import json
import math

import numpy as np
import pytest
from unimc import (
    AP10K17,
    COCO17,
    collate,
    get_skeleton,
    load_coco_keypoints,
    normalize,
    render_skeleton,
)


def _coco():
    return {
        "images": [{"id": 1, "width": 100, "height": 50, "file_name": "a.png", "caption": "two"},
                   {"id": 2, "width": 100, "height": 50}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 5, 20, 30],
             "keypoints": [15, 10, 2] * 17, "instance_caption": "a man"},
            {"id": 2, "image_id": 1, "category_id": 7, "bbox": [0, 0, 5, 5], "keypoints": [1, 1, 2] * 17},
            {"id": 3, "image_id": 1, "category_id": 9, "bbox": [0, 0, 5, 5], "keypoints": [1, 1, 2] * 17},
        ],
        "categories": [{"id": 1}, {"id": 7}, {"id": 9}],
    }  # fmt: skip


def test_load_coco_keypoints_schema(tmp_path):
    p = tmp_path / "a.json"
    p.write_text(json.dumps(_coco()))
    recs = load_coco_keypoints(p, class_map={1: 0, 7: 1})
    assert len(recs) == 2
    r = recs[0]
    np.testing.assert_array_equal(r["classes"], [0, 1])
    np.testing.assert_array_equal(r["boxes"][0], [10, 5, 30, 35])  # xywh -> xyxy
    assert r["keypoints"].shape == (2, 17, 3)
    assert r["caption"] == "two"
    assert r["instance_captions"] == ["a man", ""]
    assert recs[1]["keypoints"].shape == (0, 17, 3)  # no instance: the file's K


def test_normalize_and_collate_pad_with_mask():
    recs = load_coco_keypoints(_coco(), class_map={1: 0, 7: 1})
    samples = []
    for r in recs:
        b, k = normalize(r["boxes"], r["keypoints"], (r["width"], r["height"]))
        samples.append({"classes": r["classes"], "boxes": b, "keypoints": k})
    np.testing.assert_allclose(samples[0]["boxes"][0], [0.1, 0.1, 0.3, 0.7])
    assert samples[0]["keypoints"][0, 0].tolist() == [0.15, 0.2, 2.0]
    batch = collate(samples)
    assert batch["classes"].shape == (2, 2)
    assert batch["keypoints"].shape == (2, 2, 17, 3)
    assert batch["instance_mask"].tolist() == [[True, True], [False, False]]
    assert collate(samples, max_instances=1)["classes"].shape == (2, 1)


def test_normalize_clip():
    b, _k = normalize([[-5, 0, 120, 50]], np.zeros((1, 17, 3)), (100, 50), clip=True)
    assert b.min() >= 0
    assert b.max() <= 1


def test_render_skeleton_draws_limbs_only_between_labelled_points():
    k = np.zeros((1, 17, 3))
    k[0, 5] = [2, 2, 2]  # left shoulder
    k[0, 7] = [2, 12, 2]  # left elbow: limb (5, 7)
    k[0, 9] = [12, 12, 0]  # left wrist unlabelled: no limb (7, 9)
    img = np.asarray(render_skeleton(k, COCO17, (16, 16), colors=[(255, 0, 0)]))
    assert img.shape == (16, 16, 3)
    assert (img[2:13, 2, 0] == 255).all()
    assert img[12, 3:12].sum() == 0


def test_get_skeleton_names():
    assert get_skeleton("COCO") is COCO17
    assert get_skeleton("ap10k-17") is AP10K17
    with pytest.raises(ValueError, match="name"):
        get_skeleton("horse")


@pytest.mark.parametrize(
    ("call", "err", "match"),
    [
        (lambda: normalize(np.zeros((2, 3)), np.zeros((2, 17, 3)), (10, 10)), ValueError, "boxes"),
        (lambda: normalize(np.zeros((2, 4)), np.zeros((3, 17, 3)), (10, 10)), ValueError, "keypoints"),
        (lambda: normalize(np.full((1, 4), math.nan), np.zeros((1, 17, 3)), (10, 10)), ValueError, "NaN"),
        (lambda: normalize(np.zeros((1, 4)), np.zeros((1, 17, 3)), (0, 10)), ValueError, "size"),
        (lambda: collate([]), ValueError, "samples"),
        (lambda: collate([{"classes": [0], "boxes": np.zeros((1, 4)), "keypoints": np.zeros((1, 17, 3))}], 0), ValueError, "max_instances"),
        (lambda: collate([{"classes": [0], "boxes": np.zeros((1, 4)), "keypoints": np.zeros((1, 17, 3))},
                          {"classes": [0], "boxes": np.zeros((1, 4)), "keypoints": np.zeros((1, 4, 3))}]), ValueError, "different K"),
        (lambda: load_coco_keypoints({"images": []}, class_map={1: 0}), ValueError, "annotations"),
        (lambda: load_coco_keypoints(_coco(), class_map={}), ValueError, "class_map"),
        (lambda: load_coco_keypoints(42, class_map={1: 0}), TypeError, "path_or_dict"),
        (lambda: render_skeleton(np.zeros((1, 4, 3)), COCO17, (8, 8)), ValueError, "K=4"),
        (lambda: render_skeleton(np.zeros((2, 17, 3)), COCO17, (8, 8), colors=[(1, 2, 3)]), ValueError, "colors"),
        (lambda: render_skeleton(np.full((1, 17, 3), np.inf), COCO17, (8, 8)), ValueError, "NaN"),
        (lambda: render_skeleton(np.zeros((1, 17, 3)), COCO17, (0, 8)), ValueError, "size"),
    ],
)  # fmt: skip
def test_data_bad_input(call, err, match):
    with pytest.raises(err, match=match):
        call()
