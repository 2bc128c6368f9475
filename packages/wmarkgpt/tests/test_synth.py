"""The synthetic generator against closed forms and direct references (spec Sec. 5, tests 1-3)."""

import numpy as np
import pytest
from wmarkgpt import (
    Logo,
    RandomLogoWatermark,
    blend_logo,
    logo_box_from_mask,
    mask_from_gray,
    prepare_logo,
    scale_box,
)
from wmarkgpt.synth import naive_blend_logo


def _case(seed, H=61, W=75, h=17, w=23):
    rng = np.random.default_rng(seed)
    cover = rng.integers(40, 216, (H, W, 3), dtype=np.uint8)  # mid-grey: nothing clips
    logo = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    mask = rng.random((h, w)) < 0.6
    return cover, logo, mask


@pytest.mark.parametrize("weight", [0.0, 0.07, 0.13, 0.25, 1.0])
def test_blend_closed_form_on_foreground_before_shift(weight):
    cover, logo, mask = _case(1)
    s = blend_logo(cover, logo, mask, weight=weight, xy=(5, 9))
    region = s.blended[9 : 9 + 17, 5 : 5 + 23]
    expected = (1 - weight) * cover[9 : 9 + 17, 5 : 5 + 23] / 255 + weight * logo / 255
    assert np.abs(region[mask] - expected[mask]).max() <= 1e-12
    untouched = np.ones(cover.shape[:2], bool)
    untouched[9 : 9 + 17, 5 : 5 + 23] = ~mask
    assert np.array_equal(s.blended[untouched], cover[untouched] / 255)


@pytest.mark.parametrize("seed", range(5))
def test_blend_preserves_mean_within_half_grey_level(seed):
    cover, logo, mask = _case(seed)
    s = blend_logo(cover, logo, mask, weight=0.25, rng=seed)
    assert abs(s.image.astype(float).mean() - cover.astype(float).mean()) <= 0.5


@pytest.mark.parametrize("seed", range(5))
def test_wm_box_is_the_box_of_changed_pixels(seed):
    cover, logo, mask = _case(seed)
    s = blend_logo(cover, logo, mask, weight=0.2, rng=seed)
    changed = np.any(s.blended != cover / 255, axis=2)
    ys, xs = np.nonzero(changed)
    assert s.wm_box == (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)


def _direct_box(mask, f):
    """The official rule written out: foreground pixels listed row by row, sorted by squared
    distance to (h/2, w/2) with Python's stable sort, trimmed, min/max (exclusive end)."""
    h, w = mask.shape
    pixels = [(y, x) for y in range(h) for x in range(w) if mask[y, x]]
    pixels.sort(key=lambda p: (p[0] - h / 2) ** 2 + (p[1] - w / 2) ** 2)
    n = len(pixels)
    kept = pixels[int(n * f) : int(n * (1 - f))]
    ys, xs = [p[0] for p in kept], [p[1] for p in kept]
    return min(xs), min(ys), max(xs) + 1, max(ys) + 1


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("f", [0.0, 0.05, 0.2])
def test_logo_box_equals_direct_trimming_rule(seed, f):
    rng = np.random.default_rng(seed)
    h, w = rng.integers(5, 40, 2)
    mask = rng.random((h, w)) < rng.uniform(0.1, 0.9)
    mask[h // 2, w // 2] = True
    assert logo_box_from_mask(mask, f) == _direct_box(mask, f)


def test_non_square_logo_maps_with_separate_scales():
    # a 100 x 50 logo (w x h) whose mask is a block at x 20..60, y 10..30 (exclusive ends)
    mask = np.zeros((50, 100), bool)
    mask[10:30, 20:60] = True
    rgb = np.zeros((50, 100, 3), np.uint8)
    logo = prepare_logo(rgb, mask, size=(224, 224), edge_fraction=0.0)
    # x scale 224/100 = 2.24, y scale 224/50 = 4.48: box (44.8 -> 44, 44.8 -> 44, 134.4 -> 135,
    # 134.4 -> 135); the official single scale (h_ = width = 100) would give a 40-row-high box
    assert scale_box((20, 10, 60, 30), (100, 50), (224, 224)) == (44, 44, 135, 135)
    assert logo.mask.shape == (135 - 44, 135 - 44)


@pytest.mark.parametrize("quantize", ["round", "truncate"])
@pytest.mark.parametrize("renorm", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_vectorised_blend_equals_per_pixel_loop(quantize, renorm, seed):
    cover, logo, mask = _case(seed)
    cover[:3] = 255  # some clipping too
    fast = blend_logo(
        cover, logo, mask, weight=0.17, xy=(30, 40), quantize=quantize, renorm_brightness=renorm
    ).image
    slow = naive_blend_logo(
        cover, logo, mask, weight=0.17, xy=(30, 40), quantize=quantize, renorm_brightness=renorm
    )
    assert np.array_equal(fast, slow)


def test_truncate_mode_equals_the_official_code_written_out():
    # official emb_watermark.py: float blend, astype(uint8), adjust_brightness to the cover mean
    cover, logo, mask = _case(7)
    x, y, w = 3, 4, 0.21
    fused = cover / 255.0
    for i, j in zip(*np.where(mask), strict=True):
        fused[y + i, x + j, :] = (1 - w) * fused[y + i, x + j, :] + w * (logo / 255.0)[i, j, :]
    fused = (fused * 255).astype(np.uint8)
    official = np.clip(fused + (np.mean(cover) - np.mean(fused)), 0, 255).astype(np.uint8)
    ours = blend_logo(cover, logo, mask, weight=w, xy=(x, y), quantize="truncate").image
    assert np.array_equal(ours, official)


def test_random_logo_transform_pil_and_tensor():
    import torch
    from PIL import Image

    cover, logo, mask = _case(2)
    t = RandomLogoWatermark([Logo(logo, mask, "rand")], seed=0)
    out = t(Image.fromarray(cover))
    assert isinstance(out, Image.Image)
    assert out.size == (75, 61)
    assert 0 <= t.last_.weight <= 0.25
    assert t.last_.weight == round(t.last_.weight, 2)
    chw = torch.from_numpy(cover).permute(2, 0, 1).float() / 255
    out_t = t(chw)
    assert out_t.shape == chw.shape
    assert out_t.dtype == torch.float32


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"weight": 1.5}, "weight"),
        ({"weight": -0.1}, "weight"),
        ({"weight": float("nan")}, "weight"),
        ({"mask": np.ones((5, 5), bool)}, "mask"),
        ({"logo": np.zeros((70, 80, 3), np.uint8), "mask": np.ones((70, 80), bool)}, "larger"),
        ({"cover": np.zeros((61, 75, 3), np.float32)}, "cover"),
        ({"mask": np.zeros((17, 23), bool)}, "mask"),
        ({"xy": (70, 0)}, "xy"),
        ({"quantize": "floor"}, "quantize"),
    ],
)
def test_blend_refuses_bad_input(kwargs, match):
    cover, logo, mask = _case(0)
    args = {"cover": cover, "logo": logo, "mask": mask, "weight": 0.1, **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):  # dtype errors are TypeErrors
        blend_logo(args.pop("cover"), args.pop("logo"), args.pop("mask"), **args)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: logo_box_from_mask(np.zeros((5, 5), bool)), "mask"),
        (lambda: logo_box_from_mask(np.ones((5, 5), bool), 0.5), "edge_fraction"),
        (lambda: logo_box_from_mask(np.ones((5, 5))), "mask"),
        (lambda: prepare_logo(np.zeros((5, 5, 3), np.uint8), np.ones((4, 5), bool)), "mask"),
        (lambda: RandomLogoWatermark([]), "logos"),
        (lambda: scale_box((0, 0, 20, 5), (10, 10), (5, 5)), "box"),
    ],
)
def test_logo_helpers_refuse_bad_input(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_random_logo_transform_refuses_float_tensors_outside_0_1_and_scales_16_bit():
    import torch
    from PIL import Image

    cover, logo, mask = _case(2)
    t = RandomLogoWatermark([Logo(logo, mask, "rand")], seed=0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        t(torch.from_numpy(cover).permute(2, 0, 1).float())  # 0..255 floats
    with pytest.raises(ValueError, match="NaN"):
        t(torch.full((3, 40, 40), float("nan")))
    gray = (cover[..., 0].astype(np.uint16) * 257).astype(np.uint16)
    out = np.asarray(t(Image.fromarray(gray)))  # mode I;16
    assert abs(out.mean() - cover[..., 0].mean()) < 3
    with pytest.raises(ValueError, match="32-bit"):
        t(Image.fromarray(gray.astype(np.float32)))


def test_mask_from_gray_refuses_unit_floats_and_prepare_logo_takes_an_int_size():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        mask_from_gray(np.full((4, 4), 0.5))
    rgba = np.zeros((20, 30, 4), np.uint8)
    rgba[5:15, 5:25] = 255
    assert prepare_logo(rgba, size=40).mask.shape == prepare_logo(rgba, size=(40, 40)).mask.shape


def test_random_logo_transform_keeps_types_and_blend_refuses_fractional_xy():
    import torch
    from PIL import Image

    cover, logo, mask = _case(3)
    t = RandomLogoWatermark([Logo(logo, mask, "rand")], seed=0)
    chw = torch.from_numpy(cover).permute(2, 0, 1).to(torch.float64) / 255
    assert t(chw).dtype == torch.float64
    assert isinstance(t(cover), np.ndarray)
    assert t(Image.fromarray(cover[..., 0])).mode == "L"
    rgba = np.dstack([cover, np.full(cover.shape[:2], 77, np.uint8)])
    out = t(Image.fromarray(rgba))
    assert out.mode == "RGBA"
    assert (np.asarray(out)[..., 3] == 77).all()
    with pytest.raises(ValueError, match="integer"):
        blend_logo(cover, logo, mask, weight=0.1, xy=(1.5, 0))
