"""Readable loop versions of the distortions: the executable spec the fast ones are tested on.

Each function takes and returns a uint8 ``(H, W, 3)`` array and follows the official
``distortions/apply_distortions.py`` step by step (pixel loops, one random call at a time,
Pillow's ``ImageDraw.line`` for every segment). They are slow on purpose.
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image, ImageDraw

from .params import CHECKER_SIZE, PARAMS, STICKER_SIZE, crop_margin


def vertical_lines(array: np.ndarray, level: int) -> np.ndarray:
    """Loop version of :func:`laion_c.functional.vertical_lines`."""
    n_lines, step = PARAMS["vertical_lines"][level]
    h, w = array.shape[:2]
    grey = np.asarray(Image.fromarray(array).convert("L"))
    canvas = Image.new("RGB", (w, h))
    pen = ImageDraw.Draw(canvas)
    for i in range(n_lines):
        x = (i / n_lines) * w
        c0, c1 = int(x), min(int(x + w / n_lines), w)
        previous = (x, 0)
        for y in range(0, h, step):
            block = array[y : min(y + step, h), c0:c1].astype(np.int64)
            count = block.shape[0] * block.shape[1]
            if count == 0:  # an empty block (W < l): black, full offset, as the official code
                color, intensity = (0, 0, 0), 0
            else:
                color = tuple(int(block[:, :, c].sum()) // count for c in range(3))
                intensity = int(grey[y : min(y + step, h), c0:c1].astype(np.int64).sum()) // count
            e = -40 * (1 - intensity / 255)
            point = (x + e, y)
            pen.line([previous, point], fill=color, width=1)
            previous = point
    return np.asarray(canvas)


def geometric_shapes(array: np.ndarray, level: int, rs: np.random.RandomState) -> np.ndarray:
    """Loop version of :func:`laion_c.functional.geometric_shapes` with the official calls."""
    image = Image.fromarray(array)
    w, h = image.size
    pen = ImageDraw.Draw(image)
    kinds = ["triangle", "square", "star", "circle"]
    for _ in range(PARAMS["geometric_shapes"][level]):
        kind = kinds.index(rs.choice(kinds))
        x = rs.randint(0, w)
        y = rs.randint(0, h)
        s = rs.randint(6, 16)
        fill = tuple(int(c) for c in rs.randint(0, 256, size=3))
        rot = rs.randint(0, 360)
        if kind == 0:
            pen.polygon([(x, y), (x + s, y), (x + s / 2, y + s)], fill=fill)
        elif kind == 1:
            pen.rectangle([(x, y), (x + s, y + s)], fill=fill)
        elif kind == 2:
            points = []
            for k in range(10):
                r = s / 1.2 if k % 2 == 0 else s / 2.4
                angle = math.radians(36 * k + rot)
                points.append((x + r * math.sin(angle), y + r * math.cos(angle)))
            pen.polygon(points, fill=fill)
        else:
            pen.ellipse([(x, y), (x + s, y + s)], fill=fill)
    return np.asarray(image)


def stickers(array, level: int, tiles: np.ndarray, rs: np.random.RandomState) -> np.ndarray:
    """Loop version of :func:`laion_c.functional.stickers` with the official calls: tile indices
    by ``choice``, a discarded position draw, then one ``randint`` into the row-major list of
    allowed top-left corners per sticker (``sticker_augmentations``)."""
    n = PARAMS["stickers"][level]
    h, w = array.shape[:2]
    out = array.copy()
    chosen = rs.choice(len(tiles), (1, n), replace=True)[0]
    rs.choice(h - STICKER_SIZE, size=(1, n, 2), replace=True)  # discarded by the official code
    allowed = np.ones((h, w), dtype=bool)
    allowed[-STICKER_SIZE:, :] = False
    allowed[:, -STICKER_SIZE:] = False
    positions = np.argwhere(allowed)
    for k in range(n):
        y, x = positions[rs.randint(0, len(positions))]
        out[y : y + STICKER_SIZE, x : x + STICKER_SIZE] = tiles[chosen[k]]
    return out


def luminance_checkerboard(array, level: int, rs: np.random.RandomState) -> np.ndarray:
    """Loop version of :func:`laion_c.functional.luminance_checkerboard` (float32 arithmetic)."""
    low, high = PARAMS["luminance_checkerboard"][level]
    h, w = array.shape[:2]
    values = array.astype(np.float32) / np.float32(255)
    for i in range(0, -(-h // CHECKER_SIZE)):
        for j in range(0, -(-w // CHECKER_SIZE)):
            s = rs.uniform(low, high)
            offset = np.float32((-1) ** (i + j) * s / 255)
            rows = slice(i * CHECKER_SIZE, (i + 1) * CHECKER_SIZE)
            cols = slice(j * CHECKER_SIZE, (j + 1) * CHECKER_SIZE)
            values[rows, cols] = values[rows, cols] + offset
    return (np.clip(values, 0, 1) * np.float32(255)).astype(np.uint8)


def mosaic(array: np.ndarray, level: int, tiles: np.ndarray) -> np.ndarray:
    """Loop version of :func:`laion_c.functional.mosaic`: brute-force nearest key per block,
    then the official final crop (14 px per side at level 2, t = 6)."""
    t, margin = PARAMS["mosaic"][level], crop_margin("mosaic", level)
    h, w = array.shape[:2]
    small = np.asarray(Image.fromarray(array).resize((w // t, h // t), Image.Resampling.BICUBIC))
    keys = (tiles.astype(np.float32) / np.float32(255)).astype(np.float64).mean(axis=(1, 2))
    out = np.empty_like(array)
    for by in range(h // t):
        for bx in range(w // t):
            color = (small[by, bx].astype(np.float32) / np.float32(255)).astype(np.float64)
            best = int(np.argmin(((keys - color) ** 2).sum(axis=1)))
            out[by * t : (by + 1) * t, bx * t : (bx + 1) * t] = tiles[best]
    return out[margin : h - margin, margin : w - margin]
