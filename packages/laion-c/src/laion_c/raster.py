"""Vectorised 1-pixel line rasterizer, pixel-identical to Pillow's ``ImageDraw.line(width=1)``.

Pillow casts each end point to int (truncation toward zero, ``_draw_lines`` in ``_imaging.c``)
and draws the segment with Bresenham's algorithm, end point included (``line8``/``line32`` in
``libImaging/Draw.c``): along the major axis ``i = 0..n`` (``n = max(|dx|, |dy|)``) the minor
coordinate advances ``k_i = floor((2 m i + n) / (2 n))`` steps, ``m = min(|dx|, |dy|)`` — the
closed form of Bresenham's error recursion started at ``e = 2m - n``.
"""

from __future__ import annotations

import numpy as np


def segment_pixels(x0, y0, x1, y1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All pixels of many segments, segment after segment, in Pillow's drawing order.

    Parameters
    ----------
    x0, y0, x1, y1 : array_like of int, shape (S,)
        Integer end points (already truncated).

    Returns
    -------
    xs, ys, seg : numpy.ndarray of int64
        Pixel coordinates and the index of the segment each belongs to (sorted by segment).
    """
    # int32 halves the memory traffic; coordinates are image-sized
    x0, y0, x1, y1 = (np.asarray(v, dtype=np.int32) for v in (x0, y0, x1, y1))
    dx, dy = np.abs(x1 - x0), np.abs(y1 - y0)
    x_major = dx > dy
    major = np.maximum(dx, dy)
    counts = major + 1
    seg = np.repeat(np.arange(len(x0), dtype=np.int32), counts)
    # per-segment fields gathered once per pixel: start, steps along major / minor axis, sizes
    step_x = np.where(x1 < x0, -1, 1).astype(np.int32)
    step_y = np.where(y1 < y0, -1, 1).astype(np.int32)
    fields = np.stack(
        [
            x0,
            y0,
            np.where(x_major, step_x, 0),  # x step per major step
            np.where(x_major, 0, step_x),  # x step per minor step
            np.where(x_major, 0, step_y),
            np.where(x_major, step_y, 0),
            2 * np.minimum(dx, dy),
            np.maximum(major, 1),
            np.cumsum(counts, dtype=np.int32) - counts,
        ],
        axis=1,
    ).astype(np.int32)[seg]
    i = np.arange(len(seg), dtype=np.int32) - fields[:, 8]
    k = (fields[:, 6] * i + fields[:, 7]) // (2 * fields[:, 7])
    xs = fields[:, 0] + fields[:, 2] * i + fields[:, 3] * k
    ys = fields[:, 1] + fields[:, 4] * i + fields[:, 5] * k
    return xs, ys, seg


def draw_segments(canvas: np.ndarray, points: np.ndarray, colors: np.ndarray) -> np.ndarray:
    """Draw segments in order onto `canvas` (in place), later ones over earlier ones.

    Parameters
    ----------
    canvas : numpy.ndarray, shape (H, W, C), uint8
    points : numpy.ndarray, shape (S, 4), float64
        ``(x0, y0, x1, y1)`` per segment, truncated toward zero as Pillow does.
    colors : numpy.ndarray, shape (S, C), uint8

    Returns
    -------
    numpy.ndarray
        `canvas`.
    """
    h, w = canvas.shape[:2]
    ends = np.trunc(points).astype(np.int32)
    xs, ys, seg = segment_pixels(ends[:, 0], ends[:, 1], ends[:, 2], ends[:, 3])
    inside = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
    flat, seg = (ys * w + xs)[inside], seg[inside]
    # the last pixel written wins: the largest write index per pixel
    winner = np.full(h * w, -1, dtype=np.int64)
    np.maximum.at(winner, flat, np.arange(len(flat)))
    drawn = winner >= 0
    canvas.reshape(h * w, -1)[drawn] = colors[seg[winner[drawn]]]
    return canvas
