"""The six LAION-C distortions as functions (numpy, PIL and tensor in; the same type out).

Every function takes a PIL image (converted to RGB), a uint8 ``(H, W, 3)`` array, or a float
tensor ``(3, H, W)`` / ``(B, 3, H, W)`` in [0, 1] (read with ``to_pil_image`` semantics,
``(x * 255)`` truncated) and returns the input's type. Sides must be >= 32 pixels. Constants
and the exact arithmetic follow ``distortions/apply_distortions.py`` of the official repository
(github.com/FanfeiLi/LAION-C); see :mod:`laion_c._reference` for plain loop versions.

Randomness: ``rng`` is an int seed, a ``numpy.random.Generator`` (default; ``None`` draws fresh
entropy) or a legacy ``numpy.random.RandomState``, with which the official call sequence is
replayed, so ``np.random.seed(s)`` + the official script equals ``rng=RandomState(s)``.
"""

from __future__ import annotations

import math
import numbers
import random

import numpy as np
from PIL import Image, ImageDraw

from . import _image
from .params import (
    CHECKER_SIZE,
    PARAMS,
    STICKER_SIZE,
    check_level,
    crop_margin,
    preprocess_sizes,
    resolve,
)
from .raster import draw_segments
from .tiles import select_tiles

SHAPE_KINDS = ("triangle", "square", "star", "circle")


def as_rng(rng) -> np.random.Generator | np.random.RandomState:
    """`rng` as a Generator, or the RandomState itself (official legacy call order).

    Raises
    ------
    TypeError
        If `rng` is not None, an int, a Generator, a SeedSequence or a RandomState.
    """
    if isinstance(rng, np.random.RandomState | np.random.Generator):
        return rng
    if rng is None or isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"`rng` must be a non-negative seed, got {rng}")
        return np.random.default_rng(int(rng))
    raise TypeError(
        f"`rng` must be None, an int, a numpy Generator or RandomState, got {type(rng).__name__}"
    )


# ---------------------------------------------------------------------------- preprocessing
def preprocess(img, distortion: str, level: int):
    """Official preprocessing of `distortion` at `level` (before the distortion is applied).

    torchvision ``Resize(s)`` (shorter side, bilinear, antialiased) + ``CenterCrop(c)``;
    ``(s, c) = (256, 224)``, for mosaic ``s = 256 - 256 mod t`` and ``s = c = 252`` at t = 6
    (spec §2; :func:`laion_c.params.preprocess_sizes`). Pillow implementation, see
    :mod:`laion_c._image`.

    Parameters
    ----------
    img : PIL.Image.Image, uint8 ndarray (H, W, 3) or float tensor (3, H, W) / (B, 3, H, W)
    distortion : str
    level : int in 1..5

    Returns
    -------
    Same type as `img`, ``c x c``.

    Raises
    ------
    ValueError, TypeError
        Bad image, unknown distortion, level outside 1..5.
    """
    resize, crop = preprocess_sizes(distortion, level)

    def run(array):
        image = _image.resize_shorter(Image.fromarray(array), resize)
        return np.asarray(_image.center_crop(image, crop))

    return _image.apply(img, run)


def corrupt(img, name: str, level: int, *, rng=None, tiles=None, glitch_seed: int = 1):
    """The full official pipeline: :func:`preprocess`, then :func:`distort` (224 x 224 out).

    The official final ``CenterCrop(224)`` only changes mosaic level 2 (t = 6, made at
    252 x 252); :func:`mosaic` applies it itself, so
    ``corrupt(img, n, k) == distort(preprocess(img, n, k), n, k)`` for every cell.

    Parameters
    ----------
    img : PIL.Image.Image, uint8 ndarray (H, W, 3) or float tensor (3, H, W) / (B, 3, H, W)
        Any size with both sides >= 32 px. PIL images are converted to 8-bit RGB (alpha
        dropped; 16-bit modes scaled by 255/65535, float mode ``F`` read as [0, 1], else
        [0, 255], else refused with a ``ValueError`` naming the mode).
    name, level, rng, tiles, glitch_seed
        As in :func:`distort`.

    Returns
    -------
    Same type as `img` (PIL images come back in mode RGB, tensors keep their dtype and
    device), 224 x 224.

    Raises
    ------
    ValueError
        Unknown name, level outside 1..5 or a bool, bad image, negative `glitch_seed`.
    TypeError
        Mosaic or stickers without `tiles`, `img` of another type.
    """
    name, level = resolve(name), check_level(level)
    rng = as_rng(rng)
    if name == "glitched":
        glitch_seed = _check_glitch_seed(glitch_seed, "glitch_seed")

    def run(array):
        array = np.asarray(preprocess(array, name, level))
        return _distort_array(array, name, level, rng, tiles, glitch_seed)

    return _image.apply(img, run)


def distort(img, name: str, level: int, *, rng=None, tiles=None, glitch_seed: int = 1):
    """Apply distortion `name` at `level` to an already preprocessed image.

    Parameters
    ----------
    img : PIL.Image.Image, uint8 ndarray (H, W, 3) or float tensor (3, H, W) / (B, 3, H, W)
    name : str
        One of :data:`laion_c.params.DISTORTIONS` or an alias (``sticker``, ``luminance``).
    level : int in 1..5
    rng : None, int, numpy Generator or RandomState
        Used by geometric_shapes, stickers and luminance_checkerboard.
    tiles : TileLibrary or dict of int to TileLibrary
        Required by mosaic (t x t tiles) and stickers (16 x 16 tiles).
    glitch_seed : int >= 0, default=1
        The seed of ``glitched`` (official: 1).

    Returns
    -------
    Same type as `img`, and its size; mosaic level 2 returns the official centre crop,
    14 px smaller on every side (see :func:`mosaic`).

    Raises
    ------
    ValueError
        Unknown name, level outside 1..5 or a bool, bad image.
    TypeError
        Mosaic or stickers without `tiles`.
    """
    name, level = resolve(name), check_level(level)
    rng = as_rng(rng) if name in ("geometric_shapes", "stickers", "luminance_checkerboard") else rng
    if name == "glitched":
        glitch_seed = _check_glitch_seed(glitch_seed, "glitch_seed")
    return _image.apply(img, lambda a: _distort_array(a, name, level, rng, tiles, glitch_seed))


def _distort_array(array, name, level, rng, tiles, glitch_seed):
    if name == "mosaic":
        return _mosaic(array, PARAMS["mosaic"][level], tiles, crop_margin(name, level))
    if name == "glitched":
        return _glitch(array, PARAMS["glitched"][level], glitch_seed, "glitch_seed")
    if name == "vertical_lines":
        return _vertical_lines(array, *PARAMS["vertical_lines"][level])
    if name == "geometric_shapes":
        return _geometric_shapes(array, PARAMS["geometric_shapes"][level], rng)
    if name == "stickers":
        return _stickers(array, PARAMS["stickers"][level], tiles, rng)
    low, high = PARAMS["luminance_checkerboard"][level]
    return _luminance(array, low, high, rng)


# ---------------------------------------------------------------------------- mosaic
def mosaic(img, level: int, tiles):
    """Photo mosaic: each ``t x t`` block becomes the tile with the nearest mean colour.

    Block colours are ``PIL.Image.resize((W // t, H // t))`` (bicubic, Pillow's default) / 255;
    the tile is the L2-nearest key of the library (``cKDTree``), ``apply_distortions.py``.
    At level 2 (t = 6) the official pipeline builds the mosaic on a 252 x 252 image
    (``preprocess(img, "mosaic", 2)``) and then centre-crops 224: this function applies that
    crop too (14 px off every side), so ``mosaic(preprocess(img, "mosaic", k), k, tiles)``
    equals ``corrupt(img, "mosaic", k, tiles=tiles)`` at every level.

    Parameters
    ----------
    img : image (see module doc), ``H x W``; H and W multiples of t
    level : int in 1..5, t = 4, 6, 8, 16, 28
    tiles : TileLibrary of t x t tiles, or dict {t: TileLibrary}

    Returns
    -------
    Same type as `img`: ``H x W``, or ``(H - 28) x (W - 28)`` at level 2.

    Raises
    ------
    TypeError
        If `tiles` is None.
    ValueError
        If H or W is not a multiple of t, a side is under 60 px at level 2 (the crop would leave
        less than 32), or no t x t library is given.
    """
    level = check_level(level)
    t, margin = PARAMS["mosaic"][level], crop_margin("mosaic", level)
    return _image.apply(img, lambda a: _mosaic(a, t, tiles, margin))


def mosaic_colors(array: np.ndarray, t: int) -> np.ndarray:
    """``(H/t, W/t, 3)`` block colours: bicubic ``Image.resize``, then ``ToTensor``'s float32
    ``/ 255`` (as ``process_data_mosaic``), returned as float64."""
    h, w = array.shape[:2]
    small = np.asarray(Image.fromarray(array).resize((w // t, h // t), Image.Resampling.BICUBIC))
    return (small.astype(np.float32) / np.float32(255)).astype(np.float64)


def _mosaic(array, t, tiles, margin=0):
    library = select_tiles(tiles, t)
    h, w = array.shape[:2]
    if h % t or w % t:
        raise ValueError(f"`img` size {h}x{w} must be a multiple of the mosaic tile size {t}")
    if min(h, w) - 2 * margin < _image.MIN_SIDE:
        raise ValueError(
            f"`img` size {h}x{w}: the official crop of {margin} px per side at t = {t} needs "
            f"sides >= {_image.MIN_SIDE + 2 * margin}"
        )
    colors = mosaic_colors(array, t)
    idx = library.nearest(colors.reshape(-1, 3))
    blocks = library.tiles[idx].reshape(h // t, w // t, t, t, 3)
    out = blocks.transpose(0, 2, 1, 3, 4).reshape(h, w, 3)
    return np.ascontiguousarray(out[margin : h - margin, margin : w - margin])


# ---------------------------------------------------------------------------- glitch
def glitch(img, level: int, *, seed: int = 1):
    """Glitch art, bit-exact to ``glitch-this`` 1.0.3 ``glitch_image(img, g, seed=seed,
    glitch_change=0, cycle=False, scan_lines=True, color_offset=True)``.

    ``m = int(g**2 / 100 * W)``; for ``k < 2g`` with ``Random(seed + k)``: ``off = randint(-m, m)``;
    if nonzero, ``y0 = randint(0, H)``, ``h = min(randint(1, int(H / 4)), H - y0)`` and output rows
    ``[y0, y0 + h)`` become the *input* rows rolled right by ``off``. Then ``Random(seed)``:
    channel ``randint(0, 2)``, ``dx, dy = randint(-2g, 2g)`` twice; that channel is rewritten from
    the input rolled down by ``dy``, the row receiving input row 0 also rolled right by ``dx``.
    Finally even rows are set to 0. Local ``random.Random`` objects: the global state is
    untouched (glitch-this reseeds the global ``random``, and treats seed 0 as unseeded).

    Parameters
    ----------
    img : image (see module doc)
    level : int in 1..5, g = 2, 4, 5, 8, 10
    seed : int, default=1 (official)

    Raises
    ------
    ValueError
        If `seed` is not an int or is negative, plus the image and level errors.
    """
    g = PARAMS["glitched"][check_level(level)]
    return _image.apply(img, lambda a: _glitch(a, g, seed))


def _check_glitch_seed(seed, name: str = "seed") -> int:
    """`seed` as a non-negative int (``Random(-s)`` equals ``Random(s)``: streams would collide)."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ValueError(f"`{name}` must be an int, got {seed!r}")
    if seed < 0:
        raise ValueError(f"`{name}` must be >= 0, got {seed}")
    return int(seed)


def _glitch(array, g, seed, name: str = "seed"):
    seed = _check_glitch_seed(seed, name)
    h, w = array.shape[:2]
    out = array.copy()
    max_offset = int((g**2 / 100) * w)
    doubled = int(g * 2)
    for k in range(doubled):
        draw = random.Random(seed + k)
        offset = draw.randint(-max_offset, max_offset)
        if offset == 0:
            continue
        start = draw.randint(0, h)
        stop = start + min(draw.randint(1, int(h / 4)), h - start)
        out[start:stop] = np.roll(array[start:stop], offset, axis=1)
    draw = random.Random(seed)
    channel = draw.randint(0, 2)
    dx, dy = draw.randint(-doubled, doubled), draw.randint(-doubled, doubled)
    shifted = np.roll(array[:, :, channel], dy, axis=0)
    shifted[dy % h] = np.roll(array[0, :, channel], dx)
    out[:, :, channel] = shifted
    out[::2] = 0
    return out


# ---------------------------------------------------------------------------- vertical lines
def vertical_lines(img, level: int):
    """Redraw the image as ``l`` wavy vertical lines on black (``apply_distortions.py``).

    Column ``i < l`` sits at ``x = (i / l) W``; its block columns are
    ``[int(x), min(int(x + W / l), W))`` (empty blocks, only when ``W < l``, count as black with
    ``I = 0`` as in the official code). For rows
    ``y = 0, step, ...``: the block ``[y, y + step)`` gives the colour ``floor(mean RGB)`` and the
    grey level ``I = floor(mean L)`` (PIL ``convert('L')``); ``e = -40 (1 - I / 255)`` and a
    1-px line in that colour joins the previous point to ``(x + e, y)``, the first from
    ``(x, 0)``. Pixels equal Pillow's ``ImageDraw.line`` (see :mod:`laion_c.raster`).

    Parameters
    ----------
    img : image (see module doc)
    level : int in 1..5, (l, step) = (224, 1), (178, 2), (112, 4), (84, 6), (60, 8)
    """
    params = PARAMS["vertical_lines"][check_level(level)]
    return _image.apply(img, lambda a: _vertical_lines(a, *params))


def line_columns(width: int, n_lines: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``x`` (float64) and the block columns ``[c0, c1)`` of every line."""
    x = (np.arange(n_lines) / n_lines) * width
    c0 = x.astype(np.int64)
    c1 = np.minimum((x + width / n_lines).astype(np.int64), width)
    return x, c0, np.maximum(c1, c0)


def _vertical_lines(array, n_lines, step):
    h, w = array.shape[:2]
    grey = np.asarray(Image.fromarray(array).convert("L"))
    x, c0, c1 = line_columns(w, n_lines)
    y = np.arange(0, h, step)
    r1 = np.minimum(y + step, h)
    # exact integer block sums: rows summed per block (reduceat), then column prefix sums
    stacked = np.concatenate([array, grey[:, :, None]], axis=2).astype(np.int32)
    rows = np.add.reduceat(stacked, y, axis=0)  # (n_rows, W, 4)
    prefix = np.zeros((len(y), w + 1, 4), dtype=np.int32)
    np.cumsum(rows, axis=1, out=prefix[:, 1:])
    sums = (prefix[:, c1] - prefix[:, c0]).transpose(1, 0, 2)  # (l, n_rows, 4)
    area = ((r1 - y)[None, :] * (c1 - c0)[:, None])[..., None]
    # an empty block (only when W < l) is black with I = 0, as in the official code
    means = sums // np.maximum(area, 1)
    colors = means[..., :3].astype(np.uint8)
    e = -40 * (1 - means[..., 3] / 255)
    end_x = x[:, None] + e
    start_x = np.concatenate([x[:, None], end_x[:, :-1]], axis=1)
    start_y = np.concatenate(
        [np.zeros((n_lines, 1)), np.broadcast_to(y[:-1], (n_lines, len(y) - 1))], axis=1
    )
    end_y = np.broadcast_to(y.astype(np.float64), end_x.shape)
    points = np.stack([start_x, start_y, end_x, end_y], axis=-1).reshape(-1, 4)
    canvas = np.zeros_like(array)
    return draw_segments(canvas, points, colors.reshape(-1, 3))


# ---------------------------------------------------------------------------- geometric shapes
def geometric_shapes(img, level: int, rng=None):
    """Draw ``n`` opaque random shapes with ``PIL.ImageDraw`` in order (``apply_distortions.py``).

    Per shape: kind in (triangle, square, star, circle), ``x in [0, W)``, ``y in [0, H)``,
    ``s in [6, 16)``, RGB in ``[0, 256)^3``, ``rot in [0, 360)`` (all integers). Triangle
    ``(x, y), (x + s, y), (x + s/2, y + s)``; square = rectangle ``[(x, y), (x + s, y + s)]``;
    circle = ellipse in that box; star = 10 points at angle ``radians(36 k + rot)``, radius
    ``s / 1.2`` (k even) or ``s / 2.4``, point ``(x + r sin, y + r cos)``.

    Parameters
    ----------
    img : image (see module doc)
    level : int in 1..5, n = 150, 300, 600, 800, 1000
    rng : None, int, Generator or RandomState (official legacy call order)
    """
    n = PARAMS["geometric_shapes"][check_level(level)]
    rng = as_rng(rng)
    return _image.apply(img, lambda a: _geometric_shapes(a, n, rng))


def draw_shape_params(rng, n: int, height: int, width: int) -> np.ndarray:
    """``(n, 8)`` int64 rows ``(kind, x, y, s, r, g, b, rot)``.

    A RandomState replays the official per-shape calls ``randint(0, 4)``, ``(0, W)``, ``(0, H)``,
    ``(6, 16)``, ``(0, 256, size=3)``, ``(0, 360)``; a Generator draws each column at once.
    """
    if isinstance(rng, np.random.RandomState):
        rows = []
        for _ in range(n):
            kind = rng.randint(0, 4)
            x, y, s = rng.randint(0, width), rng.randint(0, height), rng.randint(6, 16)
            color = rng.randint(0, 256, size=3)
            rows.append((kind, x, y, s, *color, rng.randint(0, 360)))
        return np.asarray(rows, dtype=np.int64).reshape(n, 8)
    return np.column_stack(
        [
            rng.integers(0, 4, n),
            rng.integers(0, width, n),
            rng.integers(0, height, n),
            rng.integers(6, 16, n),
            rng.integers(0, 256, (n, 3)),
            rng.integers(0, 360, n),
        ]
    ).astype(np.int64)


def star_points(x: float, y: float, s: float, rot: float) -> list[tuple[float, float]]:
    """The 10 vertices of the official star (radius ``s / 1.2`` and ``s / 2.4``)."""
    points = []
    for k in range(10):
        angle = math.radians(36 * k + rot)
        r = s / 1.2 if k % 2 == 0 else s / 2.4
        points.append((x + r * math.sin(angle), y + r * math.cos(angle)))
    return points


def paint_shapes(array: np.ndarray, params: np.ndarray) -> np.ndarray:
    """Draw the shapes of :func:`draw_shape_params` onto a copy of `array`, in order."""
    image = Image.fromarray(array)
    pen = ImageDraw.Draw(image)
    for kind, x, y, s, r, g, b, rot in params.tolist():
        fill = (r, g, b)
        if kind == 0:
            pen.polygon([(x, y), (x + s, y), (x + s / 2, y + s)], fill=fill)
        elif kind == 1:
            pen.rectangle([(x, y), (x + s, y + s)], fill=fill)
        elif kind == 2:
            pen.polygon(star_points(x, y, s, rot), fill=fill)
        else:
            pen.ellipse([(x, y), (x + s, y + s)], fill=fill)
    return np.asarray(image)


def _geometric_shapes(array, n, rng):
    h, w = array.shape[:2]
    return paint_shapes(array, draw_shape_params(rng, n, h, w))


# ---------------------------------------------------------------------------- stickers
def stickers(img, level: int, tiles, rng=None):
    """Paste ``n`` random 16 x 16 tiles (with replacement), opaque, in order, overlapping.

    Top-left corners ``(y, x)`` uniform on ``[0, H - 16) x [0, W - 16)``. A RandomState replays
    the official calls: ``randint(0, T, (1, n))``, a discarded ``randint(0, H - 16, (1, n, 2))``,
    then ``n`` times ``randint(0, (H - 16)(W - 16))`` split by ``divmod(., W - 16)``.

    Parameters
    ----------
    img : image (see module doc)
    level : int in 1..5, n = 100, 200, 400, 600, 1200
    tiles : TileLibrary of 16 x 16 tiles, or dict {16: TileLibrary}
    rng : None, int, Generator or RandomState

    Raises
    ------
    TypeError
        If `tiles` is None.
    """
    n = PARAMS["stickers"][check_level(level)]
    rng = as_rng(rng)
    return _image.apply(img, lambda a: _stickers(a, n, tiles, rng))


def draw_sticker_params(rng, n: int, n_tiles: int, height: int, width: int) -> np.ndarray:
    """``(n, 3)`` int64 rows ``(tile index, y, x)``."""
    span_y, span_x = height - STICKER_SIZE, width - STICKER_SIZE
    if isinstance(rng, np.random.RandomState):
        index = rng.randint(0, n_tiles, (1, n))[0]
        rng.randint(0, span_y, (1, n, 2))  # drawn and discarded by the official code
        flat = np.array([rng.randint(0, span_y * span_x) for _ in range(n)], dtype=np.int64)
        y, x = np.divmod(flat, span_x)
    else:
        index = rng.integers(0, n_tiles, n)
        y, x = rng.integers(0, span_y, n), rng.integers(0, span_x, n)
    return np.column_stack([index, y, x]).astype(np.int64)


def _stickers(array, n, tiles, rng):
    library = select_tiles(tiles, STICKER_SIZE)
    h, w = array.shape[:2]
    params = draw_sticker_params(rng, n, len(library), h, w)
    out = array.copy()
    size = STICKER_SIZE
    for index, y, x in params.tolist():
        out[y : y + size, x : x + size] = library.tiles[index]
    return out


# ---------------------------------------------------------------------------- luminance
def luminance_checkerboard(img, level: int, rng=None):
    """Brighten and darken 14 x 14 squares in a checkerboard (``apply_distortions.py``).

    Square ``(i, j)`` (row-major, ``ceil(H / 14) x ceil(W / 14)``) gets the offset
    ``(-1)^(i + j) s_ij / 255`` with ``s_ij ~ U[a, b]``; official float32 arithmetic:
    ``v / 255 + offset``, clipped to [0, 1], times 255, truncated to uint8.

    Parameters
    ----------
    img : image (see module doc)
    level : int in 1..5, [a, b] = [0, 50], [50, 100], [100, 125], [125, 150], [150, 255]
    rng : None, int, Generator or RandomState (one ``uniform(a, b)`` per square, row-major)
    """
    low, high = PARAMS["luminance_checkerboard"][check_level(level)]
    rng = as_rng(rng)
    return _image.apply(img, lambda a: _luminance(a, low, high, rng))


def checker_offsets(rng, low, high, height: int, width: int) -> np.ndarray:
    """``(rows, cols)`` float32 offsets ``(-1)^(i + j) s_ij / 255``, ``s_ij ~ U[low, high]``."""
    rows, cols = -(-height // CHECKER_SIZE), -(-width // CHECKER_SIZE)
    s = rng.uniform(low, high, size=(rows, cols))
    sign = np.where((np.arange(rows)[:, None] + np.arange(cols)[None, :]) % 2 == 0, 1.0, -1.0)
    return (sign * s / 255).astype(np.float32)


def _luminance(array, low, high, rng):
    h, w = array.shape[:2]
    offsets = checker_offsets(rng, low, high, h, w)
    full = np.repeat(np.repeat(offsets, CHECKER_SIZE, axis=0), CHECKER_SIZE, axis=1)[:h, :w]
    values = array.astype(np.float32) / np.float32(255) + full[:, :, None]
    return (np.clip(values, 0, 1) * np.float32(255)).astype(np.uint8)
