"""Spec §5.2: vectorised vertical lines equal the loop reference; the rasterizer equals
Pillow's ImageDraw.line on 10 000 random segments, including off-image coordinates."""

import numpy as np
import pytest
from laion_c import _reference, vertical_lines
from laion_c.raster import draw_segments
from PIL import Image, ImageDraw


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_vertical_lines_equal_reference(crops, level):
    for array in crops:
        np.testing.assert_array_equal(
            vertical_lines(array, level), _reference.vertical_lines(array, level)
        )


def test_vertical_lines_equal_reference_on_small_odd_image(photos):
    array = np.asarray(Image.fromarray(photos[0]).resize((97, 61)))
    for level in (1, 5):  # W < l at level 1: one-column blocks
        np.testing.assert_array_equal(
            vertical_lines(array, level), _reference.vertical_lines(array, level)
        )


def test_rasterizer_equals_imagedraw_line_on_random_segments():
    rng = np.random.default_rng(0)
    size = 48
    for batch in range(100):  # 100 x 100 = 10 000 segments
        points = rng.uniform(-30, size + 30, size=(100, 4))
        points[::7, 2] = points[::7, 0]  # vertical
        points[1::7, 3] = points[1::7, 1]  # horizontal
        points[2::7, 2:] = points[2::7, :2]  # single point
        colors = rng.integers(1, 256, size=(100, 3), dtype=np.uint8)
        expected = Image.new("RGB", (size, size))
        pen = ImageDraw.Draw(expected)
        for p, c in zip(points, colors, strict=True):
            pen.line([(p[0], p[1]), (p[2], p[3])], fill=tuple(int(v) for v in c), width=1)
        ours = draw_segments(np.zeros((size, size, 3), np.uint8), points, colors)
        np.testing.assert_array_equal(ours, np.asarray(expected), err_msg=f"batch {batch}")


def test_vertical_lines_draw_only_image_colours_on_black(crops):
    out = vertical_lines(crops[0], 3)
    assert (out == 0).all(axis=2).mean() > 0.3  # mostly black canvas
