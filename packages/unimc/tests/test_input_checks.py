# ruff: noqa: E501  (parametrised case tables read best one case per line)
"""Checks added after a new-user trial: frozen fresh backbones, FID input ranges, malformed
COCO data and detections, and the render command's output names and errors."""

import json
import math
import warnings

import numpy as np
import pytest
import torch
from unimc import (
    AP10K17,
    COCO17,
    ConditionTokenizer,
    TinyDiT,
    collate,
    count_error,
    fid_kid,
    flow_matching_loss,
    inject_conditions,
    keypoint_ap,
    load_coco_keypoints,
    render_skeleton,
)
from unimc.cli import main


def _fresh_dit():
    torch.manual_seed(0)
    return TinyDiT(image_size=16, patch_size=4, d_model=32, depth=2, n_heads=4)


# ---------------------------------------------------------------- H1: frozen fresh backbone
def test_freeze_on_zero_output_layer_warns():
    with pytest.warns(UserWarning, match="freeze"):
        inject_conditions(_fresh_dit(), d_cond=32)


def test_no_warning_without_freeze_or_with_a_live_backbone(live_dit):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inject_conditions(_fresh_dit(), d_cond=32, freeze=False)
        inject_conditions(live_dit(0), d_cond=32)  # non-zero output layer: frozen is fine


def test_readme_recipe_on_fresh_tinydit_trains_the_injected_layers(tokenizer, conds):
    # the README's recipe: a fresh TinyDiT with freeze=False, dit + tokenizer parameters
    dit = _fresh_dit()
    h = inject_conditions(dit, d_cond=32, freeze=False)
    params = list(dit.parameters()) + list(tokenizer.parameters())
    opt = torch.optim.Adam(params, lr=1e-2)
    x0 = torch.randn(2, 3, 16, 16)
    for step in range(3):
        opt.zero_grad()
        with h.condition(tokenizer(*conds())):
            loss = flow_matching_loss(dit, x0, generator=torch.Generator().manual_seed(step))
        loss.backward()
        opt.step()
    injected = sum(float(p.grad.abs().sum()) for p in h.parameters() if p.grad is not None)
    assert injected > 0
    assert any(
        float(p.detach().abs().max()) > 0 for n, p in h.named_parameters() if n.endswith("gamma")
    )


def test_handle_named_parameters_name_the_injected_layers(live_dit):
    dit = live_dit(0)
    h = inject_conditions(dit, d_cond=32)
    names = [n for n, _ in h.named_parameters()]
    assert "transformer_blocks.0.fuser.gamma" in names
    assert len(names) == len(list(h.parameters()))
    assert all(".fuser." in n for n in names)


# ---------------------------------------------------------------- H3 / M4 / L1: fid_kid
class _Feat(torch.nn.Module):
    num_features = 12

    def forward(self, x):
        return torch.nn.functional.adaptive_avg_pool2d(x.float(), 2).flatten(1)


class _Map(torch.nn.Module):
    num_features = 12

    def forward(self, x):
        return x.float()  # [B, 3, H, W]: not features


@pytest.mark.parametrize(
    ("real", "fake", "kw", "match"),
    [
        (torch.randint(0, 256, (4, 3, 8, 8), dtype=torch.uint8), torch.rand(4, 3, 8, 8), {}, "`real`.*normalize"),
        (torch.rand(4, 3, 8, 8), torch.rand(4, 3, 8, 8) * 255, {}, "`fake`.*normalize"),
        (torch.rand(4, 3, 8, 8), torch.rand(4, 3, 8, 8) - 0.5, {}, "`fake`.*normalize"),
        (torch.rand(4, 3, 8, 8), torch.rand(4, 3, 8, 8), {"normalize": False}, "`real`.*normalize"),
    ],
)  # fmt: skip
def test_fid_kid_refuses_images_that_do_not_match_normalize(real, fake, kw, match):
    pytest.importorskip("torchmetrics")
    with pytest.raises(ValueError, match=match):
        fid_kid(real, fake, _Feat(), **kw)


def test_fid_kid_checks_feature_output_shape():
    pytest.importorskip("torchmetrics")
    with pytest.raises(ValueError, match="feature"):
        fid_kid(torch.rand(4, 3, 8, 8), torch.rand(4, 3, 8, 8), _Map())


def test_fid_kid_accepts_uint8_with_normalize_false_and_different_sizes():
    pytest.importorskip("torchmetrics")
    u8 = torch.randint(0, 256, (6, 3, 8, 8), dtype=torch.uint8)
    assert math.isfinite(fid_kid(u8, u8.flip(0), _Feat(), normalize=False)["fid"])
    out = fid_kid(torch.rand(6, 3, 16, 16), torch.rand(4, 3, 8, 8), _Feat())  # pooled: allowed
    assert math.isfinite(out["fid"])


# ---------------------------------------------------------------- M4 / L7: detections
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


def test_keypoint_ap_string_score():
    with pytest.raises(TypeError, match=r"dets.*score"):
        keypoint_ap(_gt(), [_det(score="0.9")], {1: COCO17.sigmas})


@pytest.mark.parametrize(
    ("dets", "kw", "err", "match"),
    [
        ([{"image_id": 1, "category_id": 1}], {}, ValueError, r"dets.*score"),
        ([_det(score="high")], {}, TypeError, r"dets.*score"),
        ([_det()], {"category_id": 9}, ValueError, "category_id"),
    ],
)
def test_count_error_bad_detections(dets, kw, err, match):
    with pytest.raises(err, match=match):
        count_error(_gt(), dets, **kw)


# ---------------------------------------------------------------- M1 / M4 / L3 / L4 / L5: data
def _coco(**ann):
    a = {
        "id": 1,
        "image_id": 1,
        "category_id": 1,
        "bbox": [1, 1, 5, 5],
        "keypoints": [2, 2, 2] * 17,
    }
    a.update(ann)
    return {"images": [{"id": 1, "width": 10, "height": 10}], "annotations": [a]}


def _sample(**kw):
    s = {"classes": [0], "boxes": np.zeros((1, 4)), "keypoints": np.zeros((1, 17, 3))}
    s.update(kw)
    return s


@pytest.mark.parametrize(
    ("call", "err", "match"),
    [
        (lambda: collate([_sample(classes=[0.7])]), TypeError, r"samples\[0\].*classes"),
        (lambda: collate([{"classes": [0], "boxes": np.zeros((1, 4))}]), ValueError, r"samples\[0\].*keypoints"),
        (lambda: load_coco_keypoints({**_coco(), "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1]}]}, class_map={1: 0}), ValueError, "path_or_dict.*keypoints"),
        (lambda: load_coco_keypoints(_coco(keypoints=[1.0] * 50), class_map={1: 0}), ValueError, "path_or_dict.*multiple of 3"),
        (lambda: load_coco_keypoints(_coco(image_id=7), class_map={1: 0}), ValueError, "path_or_dict.*image_id 7"),
        (lambda: load_coco_keypoints(_coco(bbox=[1, 1, -5, 5]), class_map={1: 0}), ValueError, "path_or_dict.*bbox"),
        (lambda: render_skeleton(np.zeros((1, 17, 3)), COCO17, (8, 8), colors=[(300, 0, 0)]), ValueError, "colors"),
        (lambda: render_skeleton(np.zeros((1, 17, 3)), COCO17, (8, 8), width=0), ValueError, "width"),
    ],
)  # fmt: skip
def test_data_bad_input_names_the_argument(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_batch_of_empty_images_keeps_k():
    gt = _coco()
    gt["images"].append({"id": 2, "width": 10, "height": 10})
    recs = load_coco_keypoints(gt, class_map={1: 0})
    batch = collate([{k: recs[1][k] for k in ("classes", "boxes", "keypoints")}])
    assert batch["keypoints"].shape == (1, 1, 17, 3)
    tok = ConditionTokenizer(2, 16, skeleton_of_class={0: COCO17, 1: AP10K17})
    assert tok(**batch).tokens.shape == (1, 18, 16)  # 1 + K tokens a slot, as documented


# ---------------------------------------------------------------- M2 / M3: unimc render
def _render_gt():
    ann = {"iscrowd": 0, "category_id": 1, "bbox": [1, 1, 5, 5], "keypoints": [2, 2, 2] * 17}
    return {
        "images": [{"id": 1, "width": 10, "height": 10, "file_name": "a/x.jpg"},
                   {"id": 2, "width": 10, "height": 10, "file_name": "b/x.jpg"},
                   {"id": 3, "width": 10, "height": 10, "file_name": "y.jpg"}],
        "annotations": [{**ann, "id": 1, "image_id": 1}, {**ann, "id": 2, "image_id": 2}],
        "categories": [{"id": 1, "name": "person"}],
    }  # fmt: skip


def test_render_keeps_images_with_the_same_base_name(tmp_path, run_main):
    g = tmp_path / "gt.json"
    g.write_text(json.dumps(_render_gt()))
    r = run_main(main, "render", g, "--out", tmp_path / "img")
    assert r.code == 0, r.err
    assert sorted(x.name for x in (tmp_path / "img").iterdir()) == ["x-1.png", "x-2.png", "y.png"]


def test_render_errors_are_usage_errors(tmp_path, run_main):
    g = tmp_path / "gt.json"
    g.write_text(json.dumps(_render_gt()))
    f = tmp_path / "file.txt"
    f.write_text("x")
    r = run_main(main, "render", g, "--out", f)
    assert r.code == 2
    assert "--out" in r.usage_error()
    res = tmp_path / "dets.json"
    res.write_text(json.dumps([_det()]))
    r = run_main(main, "render", res, "--out", tmp_path / "o")
    assert r.code == 2
    assert "ann" in r.usage_error()


# ---------------------------------------------------------------- L9 / L11 / L12
def test_keypoint_ap_warns_on_inconsistent_num_keypoints():
    gt = _gt()
    gt["annotations"][0]["num_keypoints"] = 0  # 17 labelled points
    with pytest.warns(UserWarning, match="num_keypoints"):
        keypoint_ap(gt, [_det()], {1: COCO17.sigmas})


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda m: m(torch.randn(2, 3, 16, 16), torch.rand(3)), "`t`"),
        (lambda m: m(torch.randn(2, 3, 20, 20), torch.rand(2)), "`x`"),
        (lambda m: m(torch.randn(2, 1, 16, 16), torch.rand(2)), "`x`"),
        (lambda m: m(torch.randn(2, 3, 16, 16, dtype=torch.float64), torch.rand(2)), "`x`"),
    ],
)
def test_tinydit_forward_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call(_fresh_dit())


def test_tinydit_bad_depth():
    with pytest.raises(ValueError, match="depth"):
        TinyDiT(depth=0)


def test_fid_kid_feature_without_num_features_is_not_probed_at_299():
    pytest.importorskip("torchmetrics")
    torch.manual_seed(0)
    feat = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 4))  # 8 x 8 only
    out = fid_kid(torch.rand(6, 3, 8, 8), torch.rand(6, 3, 8, 8), feat)
    assert math.isfinite(out["fid"])
    assert not hasattr(feat, "num_features")  # the user's module is not modified
