"""Spec §5.3: shapes, stickers and luminance with RandomState equal the loop references (the
official call order); with a Generator, the counts, masks, sizes, signs and ranges hold."""

import numpy as np
import pytest
from laion_c import PARAMS, _reference, geometric_shapes, luminance_checkerboard, stickers
from laion_c.functional import checker_offsets, draw_shape_params, draw_sticker_params


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_random_state_replays_the_official_calls(crops, tiles, level):
    for seed, array in enumerate(crops):
        np.testing.assert_array_equal(
            geometric_shapes(array, level, rng=np.random.RandomState(seed)),
            _reference.geometric_shapes(array, level, np.random.RandomState(seed)),
        )
        np.testing.assert_array_equal(
            stickers(array, level, tiles, rng=np.random.RandomState(seed)),
            _reference.stickers(array, level, tiles[16].tiles, np.random.RandomState(seed)),
        )
        np.testing.assert_array_equal(
            luminance_checkerboard(array, level, rng=np.random.RandomState(seed)),
            _reference.luminance_checkerboard(array, level, np.random.RandomState(seed)),
        )


def test_global_seed_equals_random_state(crops):
    np.random.seed(5)  # noqa: NPY002 - the official scripts seed the legacy global state
    expected = _reference.luminance_checkerboard(crops[0], 2, np.random.mtrand._rand)
    np.testing.assert_array_equal(
        luminance_checkerboard(crops[0], 2, rng=np.random.RandomState(5)), expected
    )


@pytest.mark.parametrize("level", [1, 5])
def test_shape_parameters_with_generator(level):
    n = PARAMS["geometric_shapes"][level]
    params = draw_shape_params(np.random.default_rng(0), n, 200, 224)
    assert params.shape == (n, 8)
    kind, x, y, s, rgb, rot = (
        params[:, 0],
        params[:, 1],
        params[:, 2],
        params[:, 3],
        params[:, 4:7],
        params[:, 7],
    )
    assert set(np.unique(kind)) == {0, 1, 2, 3}
    assert x.min() >= 0
    assert x.max() < 224
    assert y.min() >= 0
    assert y.max() < 200
    assert s.min() == 6
    assert s.max() == 15
    assert rgb.min() >= 0
    assert rgb.max() <= 255
    assert rot.min() >= 0
    assert rot.max() < 360


def test_shapes_change_only_pixels_near_shapes(crops):
    params = draw_shape_params(np.random.default_rng(1), 150, 224, 224)
    out = geometric_shapes(crops[0], 1, rng=1)
    changed = (out != crops[0]).any(axis=2)
    near = np.zeros_like(changed)
    for _, x, y, s, *_ in params.tolist():
        r = int(np.ceil(s / 1.2)) + 1  # the star reaches s / 1.2 around (x, y)
        near[max(0, y - r) : y + s + r, max(0, x - r) : x + s + r] = True
    assert changed.any()
    assert not (changed & ~near).any()


@pytest.mark.parametrize("level", [1, 5])
def test_sticker_mask_and_counts_with_generator(crops, tiles, level):
    n = PARAMS["stickers"][level]
    params = draw_sticker_params(np.random.default_rng(3), n, len(tiles[16]), 224, 224)
    assert params.shape == (n, 3)
    assert params[:, 1].max() < 224 - 16
    assert params[:, 2].max() < 224 - 16
    assert params.min() >= 0
    out = stickers(crops[0], level, tiles, rng=3)
    mask = np.zeros((224, 224), bool)
    for _, y, x in params.tolist():
        mask[y : y + 16, x : x + 16] = True
    assert not (out != crops[0]).any(axis=2)[~mask].any()
    # the last sticker is fully visible
    index, y, x = params[-1]
    np.testing.assert_array_equal(out[y : y + 16, x : x + 16], tiles[16].tiles[index])


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_luminance_sign_pattern_and_ranges(level):
    low, high = PARAMS["luminance_checkerboard"][level]
    offsets = checker_offsets(np.random.default_rng(level), low, high, 224, 224).astype(np.float64)
    assert offsets.shape == (16, 16)
    i, j = np.indices(offsets.shape)
    even = (i + j) % 2 == 0
    magnitude = np.abs(offsets) * 255
    assert (offsets[even] >= 0).all()
    assert (offsets[~even] <= 0).all()
    assert magnitude.min() >= low - 1e-4
    assert magnitude.max() <= high + 1e-4


def test_luminance_on_grey_image_matches_closed_form():
    grey = np.full((42, 42, 3), 128, np.uint8)
    out = luminance_checkerboard(grey, 5, rng=np.random.RandomState(0))
    s = np.random.RandomState(0).uniform(150, 255, size=9)  # row-major, one per square
    for k, (i, j) in enumerate((i, j) for i in range(3) for j in range(3)):
        value = np.float32(128 / 255) + np.float32((-1) ** (i + j) * s[k] / 255)
        expected = np.uint8(np.float32(min(max(value, 0), 1)) * np.float32(255))
        assert (out[14 * i : 14 * i + 14, 14 * j : 14 * j + 14] == expected).all()
