"""InternVL tiling rule (spec test 4) against a port of ``dynamic_preprocess``."""

import numpy as np
import pytest
from _official_ref import ref_dynamic_preprocess
from comemo_lvlm import TileGrid, candidate_grids, closest_grid, dynamic_tiles
from PIL import Image


def test_grid_equals_internvl_rule_over_sweep_including_ties():
    tie_outcomes = set()
    n_ties = 0
    for tile in (448, 8, 5):
        for w in range(1, 120, 3) if tile < 448 else range(100, 4000, 97):
            for h in range(1, 120, 5) if tile < 448 else range(100, 4000, 89):
                _, want, ties = ref_find(w, h, tile)
                got = closest_grid(w, h, tile=tile, max_num=12)
                assert tuple(got) == want, (w, h, tile)
                if ties:
                    n_ties += 1
                    tie_outcomes.add(w * h > 0.5 * tile * tile * want[0] * want[1])
    assert n_ties > 0
    assert tie_outcomes == {True, False}


def ref_find(w, h, tile):
    from _official_ref import ref_find_closest_aspect_ratio

    targets = sorted(
        {
            (i, j)
            for n in range(1, 13)
            for i in range(1, n + 1)
            for j in range(1, n + 1)
            if 1 <= i * j <= 12
        },
        key=lambda x: x[0] * x[1],
    )
    best, ties = ref_find_closest_aspect_ratio(w / h, targets, w, h, tile)
    return None, best, ties


@pytest.mark.parametrize("size", [(600, 400), (512, 512), (1000, 872), (90, 700), (1301, 1299)])
def test_tiles_pixel_equal_to_pil_resize_crop_and_thumbnail_rule(size):
    rng = np.random.default_rng(0)
    img = Image.fromarray(rng.integers(0, 255, (size[1], size[0], 3), dtype=np.uint8))
    tiles, grid = dynamic_tiles(img, tile=64, max_num=12)
    want, (X, Y), _ = ref_dynamic_preprocess(img, max_num=12, image_size=64)
    assert grid == TileGrid(X, Y)
    assert len(tiles) == len(want) == X * Y + (1 if X * Y > 1 else 0)
    for a, b in zip(tiles, want, strict=True):
        assert a.size == (64, 64)
        assert np.array_equal(np.asarray(a), np.asarray(b))


def test_no_thumbnail_when_disabled_or_single_tile():
    img = Image.new("RGB", (300, 100))
    tiles, grid = dynamic_tiles(img, tile=100, thumbnail=False)
    assert len(tiles) == grid.n_tiles == 3
    tiles, grid = dynamic_tiles(Image.new("RGB", (100, 100)), tile=100)
    assert grid == TileGrid(1, 1)
    assert len(tiles) == 1


def test_candidate_order_sorted_by_area():
    grids = candidate_grids(1, 12)
    areas = [g.n_tiles for g in grids]
    assert areas == sorted(areas)
    assert len(set(grids)) == len(grids)
    assert all(1 <= a <= 12 for a in areas)


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: dynamic_tiles(np.zeros((4, 4, 3))), TypeError, "img"),
        (lambda: dynamic_tiles(Image.new("RGB", (4, 4)), max_num=0), ValueError, "max_num"),
        (
            lambda: dynamic_tiles(Image.new("RGB", (4, 4)), min_num=5, max_num=2),
            ValueError,
            "max_num",
        ),
        (lambda: dynamic_tiles(Image.new("RGB", (4, 4)), tile=0), ValueError, "tile"),
        (lambda: closest_grid(0, 5), ValueError, "width"),
        (lambda: closest_grid(5, 2.5), TypeError, "height"),
    ],
)
def test_tiling_rejects_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
