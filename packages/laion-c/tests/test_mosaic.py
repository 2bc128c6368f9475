"""Spec §5.4: every mosaic block is a library tile and the brute-force nearest key; the t = 6
block phase after the final crop; tile keys and library I/O."""

import numpy as np
import pytest
import skimage.data
from laion_c import (
    PARAMS,
    TileLibrary,
    build_tiles,
    corrupt,
    load_tiles,
    mosaic,
    preprocess,
    save_tiles,
)
from PIL import Image


def brute_force_blocks(array, t, library):
    """Expected tile index of every block: argmin of the squared key distance (first on ties),
    with the official ToTensor arithmetic (float32 v / 255, means in float64)."""
    h, w = array.shape[:2]
    small = np.asarray(Image.fromarray(array).resize((w // t, h // t), Image.BICUBIC))
    colors = (small.astype(np.float32) / np.float32(255)).astype(np.float64)
    unit = (library.tiles.astype(np.float32) / np.float32(255)).astype(np.float64)
    keys = unit.mean(axis=(1, 2))
    dist = ((colors[:, :, None, :] - keys[None, None]) ** 2).sum(-1)
    return dist.argmin(-1)


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_every_block_is_the_nearest_library_tile(photos, tiles, level):
    t = PARAMS["mosaic"][level]
    array = np.asarray(preprocess(photos[1], "mosaic", level))
    out = mosaic(array, level, tiles)
    expected = brute_force_blocks(array, t, tiles[t])
    h, w = array.shape[:2]
    full = np.empty_like(array)
    for by in range(h // t):
        for bx in range(w // t):
            full[by * t : (by + 1) * t, bx * t : (bx + 1) * t] = tiles[t].tiles[expected[by, bx]]
    # the official pipeline's final CenterCrop(224): offset round((252 - 224) / 2) = 14 at t = 6
    top, left = round((h - 224) / 2), round((w - 224) / 2)
    np.testing.assert_array_equal(out, full[top : top + 224, left : left + 224])


def test_t6_is_built_at_252_and_cropped_to_224_with_phase_2(photos, tiles):
    array = np.asarray(preprocess(photos[0], "mosaic", 2))
    assert array.shape == (252, 252, 3)
    out = np.asarray(corrupt(photos[0], "mosaic", 2, tiles=tiles))
    assert out.shape == (224, 224, 3)
    np.testing.assert_array_equal(mosaic(array, 2, tiles), out)
    # the crop starts at 14, so blocks start at 14 mod 6 = 2 and the first complete block of
    # the crop starts at row/column 6 - 2 = 4
    block = out[4:10, 4:10]
    assert any((block == tile).all() for tile in tiles[6].tiles)


def test_tile_keys_are_channel_means():
    tiles = np.random.default_rng(0).integers(0, 256, size=(5, 4, 4, 3), dtype=np.uint8)
    library = TileLibrary(tiles)
    for k in range(5):
        np.testing.assert_allclose(library.keys[k], tiles[k].reshape(-1, 3).mean(0) / 255)
    np.testing.assert_array_equal(library.nearest(library.keys), np.arange(5))


def test_official_tile_is_resize_crop_resize(photos):
    tile = TileLibrary.tile_of(Image.fromarray(photos[0]), 8)
    image = Image.fromarray(photos[0])
    w, h = image.size  # 451 x 300 -> 384 x 256, crop 224 at (80, 16)
    resized = image.resize((int(256 * w / h), 256), Image.BILINEAR)
    left, top = round((resized.size[0] - 224) / 2), round((256 - 224) / 2)
    expected = resized.crop((left, top, left + 224, top + 224)).resize((8, 8), Image.BILINEAR)
    np.testing.assert_array_equal(tile, np.asarray(expected))


def test_tiles_round_trip_through_npz(tiles, tmp_path):
    path = save_tiles(tiles, tmp_path / "tiles.npz")
    loaded = load_tiles(path)
    assert sorted(loaded) == sorted(tiles)
    for t in tiles:
        np.testing.assert_array_equal(loaded[t].tiles, tiles[t].tiles)
    single = tiles[16].save(tmp_path / "one.npz")
    np.testing.assert_array_equal(TileLibrary.load(single).tiles, tiles[16].tiles)


def test_from_images_counts_crops(photos):
    library = TileLibrary.from_images(photos[:2], 6, crops_per_image=10, rng=1)
    assert len(library) == 22
    assert library.tiles.shape[1:] == (6, 6, 3)
    again = TileLibrary.from_images(photos[:2], 6, crops_per_image=10, rng=1)
    np.testing.assert_array_equal(library.tiles, again.tiles)


def test_build_tiles_accepts_a_folder(tmp_path):
    for name in ("rocket", "coffee"):
        Image.fromarray(getattr(skimage.data, name)()).save(tmp_path / f"{name}.png")
    from_folder = build_tiles(tmp_path, sizes=(4, 16), crops_per_image=2, rng=0)
    from_paths = build_tiles(sorted(tmp_path.glob("*.png")), sizes=(4, 16), crops_per_image=2)
    for t in (4, 16):
        np.testing.assert_array_equal(from_folder[t].tiles, from_paths[t].tiles)
    assert len(build_tiles(str(tmp_path), sizes=(4,))[4]) == 2
