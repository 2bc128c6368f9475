"""Spec §5.5: `preprocess` equals torchvision's Resize + CenterCrop (written out for PIL input,
DECISIONS 8) for all 30 cells, on portrait, landscape and odd sizes."""

import numpy as np
import pytest
import torch
from laion_c import DISTORTIONS, LEVELS, PARAMS, corrupt, preprocess
from PIL import Image


def torchvision_rule(image, resize, crop):
    """torchvision.transforms.Resize(resize) then CenterCrop(crop) on a PIL image."""
    w, h = image.size
    short, long = min(w, h), max(w, h)
    new_short, new_long = resize, int(resize * long / short)
    size = (new_short, new_long) if w <= h else (new_long, new_short)
    if size != (w, h):
        image = image.resize(size, Image.BILINEAR)
    w, h = image.size
    top, left = round((h - crop) / 2.0), round((w - crop) / 2.0)
    return np.asarray(image.crop((left, top, left + crop, top + crop)))


def sizes(name, level):
    if name == "mosaic":
        t = PARAMS["mosaic"][level]
        s = 256 - 256 % t
        return (s, s) if 224 % t else (s, 224)
    return 256, 224


@pytest.mark.parametrize("name", DISTORTIONS)
@pytest.mark.parametrize("level", LEVELS)
def test_preprocess_equals_torchvision_rule(photos, name, level):
    resize, crop = sizes(name, level)
    for array in (photos[0], photos[0].transpose(1, 0, 2).copy(), photos[2][:333, :257]):
        expected = torchvision_rule(Image.fromarray(array), resize, crop)
        np.testing.assert_array_equal(np.asarray(preprocess(array, name, level)), expected)


def test_mosaic_sizes():
    assert sizes("mosaic", 2) == (252, 252)
    assert sizes("mosaic", 5) == (252, 224)
    assert sizes("mosaic", 1) == (256, 224)


def test_preprocess_returns_input_type(photos):
    image = Image.fromarray(photos[0])
    assert isinstance(preprocess(image, "stickers", 1), Image.Image)
    tensor = torch.from_numpy(photos[0]).permute(2, 0, 1).float() / 255
    out = preprocess(tensor, "stickers", 1)
    assert out.shape == (3, 224, 224)
    assert out.dtype == torch.float32
    expected = np.asarray(preprocess(photos[0], "stickers", 1))
    np.testing.assert_array_equal((out * 255).round().byte().permute(1, 2, 0).numpy(), expected)
    batch = preprocess(torch.stack([tensor, tensor]), "stickers", 1)
    assert batch.shape == (2, 3, 224, 224)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_tensor_output_keeps_the_input_dtype(photos, dtype):
    x = torch.from_numpy(photos[0]).permute(2, 0, 1).float() / 255
    ref = corrupt(x, "luminance_checkerboard", 2, rng=0)
    out = corrupt(x.to(dtype), "luminance_checkerboard", 2, rng=0)
    assert out.dtype == dtype
    assert out.shape == (3, 224, 224)
    assert float((out.float() - ref).abs().max()) <= 3 / 255 + 8e-3
