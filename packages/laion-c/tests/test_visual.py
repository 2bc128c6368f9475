"""Visual statistics per level, checked against bounds that follow from the definitions (not
against stored outputs): strength grows with the level, black scan lines, sticker / shape areas."""

import itertools

import numpy as np
import pytest
from laion_c import DISTORTIONS, LEVELS, PARAMS, distort, glitch, preprocess


def strength(photos, tiles, name, level):
    """Mean |distorted - clean| over 3 photos x 2 seeds (0-255 units)."""
    values = []
    for photo in photos:
        clean = np.asarray(preprocess(photo, name, level))
        for seed in range(2):
            out = distort(clean, name, level, rng=seed, tiles=tiles)
            m = (clean.shape[0] - out.shape[0]) // 2  # mosaic level 2 crops 252 -> 224
            values.append(np.abs(out.astype(float) - clean[m : m + 224, m : m + 224]).mean())
    return float(np.mean(values))


@pytest.mark.parametrize("name", DISTORTIONS)
def test_strength_grows_with_level(photos, tiles, name):
    values = [strength(photos, tiles, name, level) for level in LEVELS]
    assert values[-1] > 1.2 * values[0]
    for before, after in itertools.pairwise(values):
        assert after >= 0.95 * before  # glitch is not strictly monotone (random band heights)


@pytest.mark.parametrize("level", LEVELS)
def test_glitch_blackens_exactly_the_even_rows(crops, level):
    for array in crops:
        out = glitch(array, level)
        assert not out[::2].any()
        assert (out[1::2].reshape(112, -1) > 0).any(axis=1).mean() > 0.9


@pytest.mark.parametrize("level", LEVELS)
def test_sticker_and_shape_areas_are_bounded(crops, tiles, level):
    area = 224 * 224
    n_stickers, n_shapes = PARAMS["stickers"][level], PARAMS["geometric_shapes"][level]
    for seed, array in enumerate(crops):
        changed = (distort(array, "stickers", level, rng=seed, tiles=tiles) != array).any(axis=2)
        assert changed.mean() <= min(1.0, n_stickers * 256 / area)
        changed = (distort(array, "geometric_shapes", level, rng=seed) != array).any(axis=2)
        star_box = (2 * 15 / 1.2 + 2) ** 2  # the largest shape's bounding box
        assert 0 < changed.mean() <= min(1.0, n_shapes * star_box / area)
