"""Issue 33.1: every public distortion returns its input's size — mosaic level 2 applies the
official final ``CenterCrop(224)`` to its 252 x 252 canvas — and on the preprocessed image each
equals the full pipeline ``corrupt()`` pixel for pixel, for all six distortions x five levels."""

import numpy as np
import pytest
import torch
from laion_c import (
    DISTORTIONS,
    LEVELS,
    corrupt,
    distort,
    geometric_shapes,
    glitch,
    luminance_checkerboard,
    mosaic,
    preprocess,
    stickers,
    vertical_lines,
)
from PIL import Image


def public(name, level, tiles):
    """The per-distortion public function of `name` at `level` (seed 0 where it draws)."""
    return {
        "mosaic": lambda img: mosaic(img, level, tiles),
        "glitched": lambda img: glitch(img, level),
        "vertical_lines": lambda img: vertical_lines(img, level),
        "geometric_shapes": lambda img: geometric_shapes(img, level, rng=0),
        "stickers": lambda img: stickers(img, level, tiles, rng=0),
        "luminance_checkerboard": lambda img: luminance_checkerboard(img, level, rng=0),
    }[name]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", DISTORTIONS)
def test_every_distortion_returns_its_inputs_size_and_equals_corrupt(photos, tiles, name, level):
    x = np.asarray(preprocess(photos[0], name, level))
    # the official pipeline crops 252 -> 224 after the t = 6 mosaic: (252 - 224) / 2 per side
    margin = 14 if (name, level) == ("mosaic", 2) else 0
    h, w = x.shape[0] - 2 * margin, x.shape[1] - 2 * margin
    fn = public(name, level, tiles)
    out = fn(x)
    assert out.shape == (h, w, 3) == (224, 224, 3)
    expected = np.asarray(corrupt(photos[0], name, level, rng=0, tiles=tiles))
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(distort(x, name, level, rng=0, tiles=tiles), expected)
    assert fn(Image.fromarray(x)).size == (w, h)
    batch = torch.from_numpy(np.stack([x, x])).permute(0, 3, 1, 2).float() / 255
    assert fn(batch).shape == (2, 3, h, w)


def test_mosaic_level_2_refuses_a_canvas_too_small_to_crop(tiles):
    with pytest.raises(ValueError, match="img"):
        mosaic(np.zeros((54, 60, 3), np.uint8), 2, tiles)
    assert mosaic(np.zeros((60, 60, 3), np.uint8), 2, tiles).shape == (32, 32, 3)
