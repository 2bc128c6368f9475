# ruff: noqa: E501  (parametrised case tables read best one case per line)
import math

import pytest
import torch
from unimc import AP10K17, COCO17, ConditionTokenizer, inject_conditions

SKEL = {0: COCO17, 1: AP10K17}


def test_token_shapes_mask_owner(tokenizer, conds):
    c, b, k, m = conds(mask=torch.tensor([[1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    out = tokenizer(c, b, k, m)
    assert out.tokens.shape == (2, 3 * 18, 32)
    assert out.mask.dtype == torch.bool
    assert out.owner.dtype == torch.int64
    # instance token mask = instance mask; keypoint mask = instance & v > 0
    inst = out.mask.view(2, 3, 18)[..., 0]
    assert torch.equal(inst, m)
    assert torch.equal(out.mask.view(2, 3, 18)[..., 1:], m[..., None] & (k[..., 2] > 0))
    assert torch.equal(out.owner.view(2, 3, 18), torch.arange(3).view(1, 3, 1).expand(2, 3, 18))
    assert (out.tokens[~out.mask] == 0).all()


@pytest.mark.parametrize(("layout", "per"), [("instance", 1), ("keypoints", 17)])
def test_layouts(layout, per, conds):
    tok = ConditionTokenizer(2, 16, skeleton_of_class=SKEL, layout=layout)
    c, b, k, m = conds()
    assert tok(c, b, k, m).tokens.shape == (2, 3 * per, 16)


def test_permuting_instances_permutes_tokens_exactly(tokenizer, conds):
    c, b, k, m = conds(n=4)
    perm = torch.tensor([2, 0, 3, 1])
    a = tokenizer(c, b, k, m)
    p = tokenizer(c[:, perm], b[:, perm], k[:, perm], m[:, perm])
    ta = a.tokens.view(2, 4, 18, -1)[:, perm]
    assert torch.equal(ta, p.tokens.view(2, 4, 18, -1))
    assert torch.equal(a.mask.view(2, 4, 18)[:, perm], p.mask.view(2, 4, 18))


def test_permuting_instances_leaves_injected_dit_output_unchanged(tokenizer, conds, live_dit):
    dit = live_dit(1, depth=2)
    h = inject_conditions(dit, d_cond=32)
    for layer in h.layers:
        torch.nn.init.constant_(layer.gamma, 0.7)
        torch.nn.init.constant_(layer.beta, -0.4)
    c, b, k, m = conds(n=4)
    perm = torch.tensor([3, 1, 0, 2])
    x, t = torch.randn(2, 3, 16, 16), torch.rand(2)
    with h.condition(tokenizer(c, b, k, m)):
        y1 = dit(x, t)
    with h.condition(tokenizer(c[:, perm], b[:, perm], k[:, perm], m[:, perm])):
        y2 = dit(x, t)
    assert torch.allclose(y1, y2, atol=1e-6)


def test_padding_and_unlabelled_keypoints_change_nothing(tokenizer, conds, live_dit):
    dit = live_dit(2, depth=2)
    h = inject_conditions(dit, d_cond=32)
    for layer in h.layers:
        torch.nn.init.constant_(layer.gamma, 0.5)
        torch.nn.init.constant_(layer.beta, 0.5)
    c, b, k, m = conds(n=2, seed=3)
    x, t = torch.randn(2, 3, 16, 16), torch.rand(2)
    with h.condition(tokenizer(c, b, k, m)):
        base = dit(x, t)
    # two padded instances with arbitrary content
    c2, b2, k2, _ = conds(n=2, seed=9)
    cp = torch.cat([c, c2], 1)
    bp = torch.cat([b, b2], 1)
    kp = torch.cat([k, k2], 1)
    mp = torch.cat([m, torch.zeros(2, 2, dtype=torch.bool)], 1)
    with h.condition(tokenizer(cp, bp, kp, mp)):
        padded = dit(x, t)
    assert torch.allclose(base, padded, atol=1e-6)
    # move a v=0 keypoint (even outside the image)
    k3 = k.clone()
    j = int(torch.nonzero(k[0, 0, :, 2] == 0)[0])
    k3[0, 0, j, :2] = torch.tensor([7.0, -3.0])
    with h.condition(tokenizer(c, b, k3, m)):
        moved = dit(x, t)
    assert torch.allclose(base, moved, atol=1e-6)


def test_swapping_classes_of_overlapping_instances_changes_output(tokenizer, live_dit):
    dit = live_dit(3, depth=2)
    h = inject_conditions(dit, d_cond=32)
    for layer in h.layers:
        torch.nn.init.constant_(layer.gamma, 0.5)
    c = torch.tensor([[0, 1]])
    b = torch.tensor([[[0.2, 0.2, 0.6, 0.7], [0.3, 0.3, 0.8, 0.6]]])
    k = torch.cat([torch.rand(1, 2, 17, 2) * 0.4 + 0.3, torch.full((1, 2, 17, 1), 2.0)], -1)
    m = torch.ones(1, 2, dtype=torch.bool)
    x, t = torch.randn(1, 3, 16, 16), torch.rand(1)
    with h.condition(tokenizer(c, b, k, m)):
        y1 = dit(x, t)
    with h.condition(tokenizer(c.flip(1), b, k, m)):
        y2 = dit(x, t)
    assert (y1 - y2).abs().max() > 1e-4


def _good():
    g = torch.Generator().manual_seed(0)
    c = torch.tensor([[0, 1]])
    b = torch.tensor([[[0.1, 0.1, 0.5, 0.6], [0.2, 0.3, 0.9, 0.8]]])
    k = torch.cat([torch.rand(1, 2, 17, 2, generator=g), torch.full((1, 2, 17, 1), 2.0)], -1)
    m = torch.ones(1, 2, dtype=torch.bool)
    return {"classes": c, "boxes": b, "keypoints": k, "instance_mask": m}


def _with(**kw):
    d = _good()
    d.update(kw)
    return d


def _box(x0, y0, x1, y1):
    b = _good()["boxes"].clone()
    b[0, 0] = torch.tensor([x0, y0, x1, y1])
    return b


def _kp(**kw):
    k = _good()["keypoints"].clone()
    for idx, val in kw.items():
        k[0, 0, 0, int(idx[1:])] = val
    return k


BAD = [
    (_with(boxes=_box(0.5, 0.1, 0.2, 0.4)), ValueError, "boxes.*x1 >= x0"),
    (_with(boxes=_box(0.1, 0.5, 0.2, 0.4)), ValueError, "boxes.*y1 >= y0"),
    (_with(boxes=_box(10.0, 10.0, 20.0, 30.0)), ValueError, "normalize"),
    (_with(boxes=_box(math.nan, 0.1, 0.2, 0.4)), ValueError, "boxes.*NaN"),
    (_with(keypoints=torch.zeros(1, 2, 5, 3)), ValueError, "K=5"),
    (_with(classes=torch.tensor([[0, 5]])), ValueError, "classes"),
    (_with(instance_mask=torch.ones(1, 3, dtype=torch.bool)), ValueError, "instance_mask"),
    (_with(instance_mask=torch.ones(1, 2)), TypeError, "instance_mask"),
    (_with(classes=torch.zeros(1, 2)), TypeError, "classes"),
    (_with(boxes=torch.zeros(1, 2, 3)), ValueError, "boxes"),
    (_with(keypoints=torch.full((1, 2, 17, 3), math.inf)), ValueError, "keypoints.*NaN"),
    (_with(keypoints=torch.cat([torch.full((1, 2, 17, 2), 3.0), torch.full((1, 2, 17, 1), 2.0)], -1)), ValueError, "normalize"),
    (_with(keypoints=torch.cat([torch.rand(1, 2, 17, 2), torch.full((1, 2, 17, 1), 5.0)], -1)), ValueError, "visibility"),
    (_with(classes=torch.zeros(0, 2, dtype=torch.long), boxes=torch.zeros(0, 2, 4), keypoints=torch.zeros(0, 2, 17, 3), instance_mask=torch.zeros(0, 2, dtype=torch.bool)), ValueError, "empty"),
    (_with(keypoints=None), ValueError, "keypoints"),
]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "err", "match"), BAD)
def test_tokenizer_bad_input(tokenizer, kwargs, err, match):
    with pytest.raises(err, match=match):
        tokenizer(**kwargs)


def test_class_without_skeleton_rejected():
    tok = ConditionTokenizer(3, 16, skeleton_of_class={0: COCO17})
    d = _good()
    d["classes"] = torch.tensor([[0, 2]])
    with pytest.raises(ValueError, match="class 2 has no skeleton"):
        tok(**d)


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"num_classes": 0, "d_model": 8, "skeleton_of_class": {}}, ValueError, "num_classes"),
        (
            {"num_classes": 2, "d_model": 8, "skeleton_of_class": SKEL, "layout": "x"},
            ValueError,
            "layout",
        ),
        (
            {"num_classes": 1, "d_model": 8, "skeleton_of_class": SKEL},
            ValueError,
            "skeleton_of_class",
        ),
    ],
)
def test_tokenizer_bad_construction(kwargs, err, match):
    with pytest.raises(err, match=match):
        ConditionTokenizer(**kwargs)
