"""InternVL dynamic-resolution tiling, as CoMemo uses it (official ``dataset.py``).

The image is resized to an ``X x Y`` grid of ``tile x tile`` squares chosen by aspect ratio
(``find_closest_aspect_ratio``, tie-break included), cropped row-major, and followed by a
``tile x tile`` thumbnail of the whole image when the grid has more than one tile.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from PIL import Image as _PILImage

__all__ = ["MAX_TILES", "TileGrid", "candidate_grids", "closest_grid", "dynamic_tiles"]


def _check_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


#: Upper bound on ``max_num`` (X*Y) accepted by :func:`candidate_grids` and the functions built on
#: it; InternVL and CoMemo use 6 to 40.
MAX_TILES = 10_000


class _GridFields(NamedTuple):
    cols: int
    rows: int


class TileGrid(_GridFields):
    """A dynamic-resolution grid: ``cols`` tiles across (X) and ``rows`` tiles down (Y).

    Attributes
    ----------
    cols : int
        X, the number of tile columns (image width / tile), >= 1.
    rows : int
        Y, the number of tile rows (image height / tile), >= 1.

    Raises
    ------
    TypeError
        ``cols`` or ``rows`` is not an int (numpy integers are converted; bools are refused).
    ValueError
        ``cols`` or ``rows`` < 1.
    """

    __slots__ = ()

    def __new__(cls, cols: int, rows: int) -> TileGrid:
        return super().__new__(cls, _check_int("cols", cols, 1), _check_int("rows", rows, 1))

    @property
    def n_tiles(self) -> int:
        """X*Y, the tiles without the thumbnail."""
        return self.cols * self.rows

    @property
    def n_images(self) -> int:
        """X*Y + [X*Y > 1]: the ViT inputs of this image (tiles plus thumbnail)."""
        return self.n_tiles + (1 if self.n_tiles > 1 else 0)


def candidate_grids(min_num: int = 1, max_num: int = 12) -> tuple[TileGrid, ...]:
    """The grids InternVL considers, in the order its search visits them.

    All (X, Y) with ``min_num <= X*Y <= max_num``, sorted by X*Y. Among equal X*Y the order is
    CPython's iteration order of a ``set`` of int tuples (deterministic), exactly as the
    official code builds its candidate list; it decides ties between grids of equal area.
    The pairs are enumerated directly (O(max_num log max_num)) and inserted into the set in the
    order the official triple loop first meets them, so the set, and the order, are the same.

    Parameters
    ----------
    min_num, max_num : int
        Bounds on the number of tiles (official defaults 1 and 12 in the shell scripts).

    Returns
    -------
    tuple of TileGrid

    Raises
    ------
    ValueError
        ``min_num < 1``, ``max_num < min_num`` or ``max_num > MAX_TILES`` (10 000).
    TypeError
        Non-integer bounds.
    """
    min_num = _check_int("min_num", min_num, 1)
    max_num = _check_int("max_num", max_num, 1)
    if max_num < min_num:
        raise ValueError(f"max_num ({max_num}) must be >= min_num ({min_num})")
    if max_num > MAX_TILES:
        raise ValueError(f"max_num must be <= {MAX_TILES} tiles, got {max_num}")
    return _candidates(min_num, max_num)


@lru_cache(maxsize=64)
def _candidates(min_num: int, max_num: int) -> tuple[TileGrid, ...]:
    # The official loop ``for n in range(min_num, max_num + 1): for x in 1..n: for y in 1..n``
    # first meets (x, y) at n = max(x, y, min_num), in (x, y) order within one n.
    found = [
        (x, y)
        for x in range(1, max_num + 1)
        for y in range(max(1, -(-min_num // x)), max_num // x + 1)
    ]
    found.sort(key=lambda p: (max(p[0], p[1], min_num), p[0], p[1]))
    pairs = set()
    for p in found:
        pairs.add(p)
    return tuple(TileGrid(x, y) for x, y in sorted(pairs, key=lambda p: p[0] * p[1]))


def closest_grid(
    width: int, height: int, *, tile: int = 448, min_num: int = 1, max_num: int = 12
) -> TileGrid:
    """The grid whose aspect ratio X/Y is closest to ``width/height`` (InternVL's rule).

    Candidates are visited in :func:`candidate_grids` order; a strictly smaller ratio distance
    wins; on an exactly equal distance the later (larger) grid wins when the image area
    ``w*h > 0.5 * tile^2 * X * Y`` (official ``find_closest_aspect_ratio``).

    Parameters
    ----------
    width, height : int
        Image size in pixels (> 0).
    tile : int, default=448
        Tile side s in pixels (InternVL's ``image_size``).
    min_num, max_num : int, default=1, 12
        Bounds on X*Y (``max_num=12`` in CoMemo's shell scripts; the dataset default is 6).

    Returns
    -------
    TileGrid

    Raises
    ------
    ValueError
        Non-positive sizes or bad bounds (``max_num`` at most ``MAX_TILES``).
    TypeError
        Non-integer sizes or bounds (numpy integers are accepted).
    """
    width = _check_int("width", width, 1)
    height = _check_int("height", height, 1)
    tile = _check_int("tile", tile, 1)
    aspect = width / height
    area = width * height
    best = TileGrid(1, 1)
    best_diff = float("inf")
    for grid in candidate_grids(min_num, max_num):
        diff = abs(aspect - grid.cols / grid.rows)
        if diff < best_diff:
            best, best_diff = grid, diff
        elif diff == best_diff and area > 0.5 * tile * tile * grid.cols * grid.rows:
            best = grid
    return best


def dynamic_tiles(
    img: _PILImage.Image,
    *,
    tile: int = 448,
    min_num: int = 1,
    max_num: int = 12,
    thumbnail: bool = True,
) -> tuple[list[_PILImage.Image], TileGrid]:
    """Cut an image into InternVL dynamic-resolution tiles (+ thumbnail).

    The image is resized (PIL's default filter, as the official code) to ``(s*X, s*Y)`` and
    cropped row-major: tile t covers column ``t % X``, row ``t // X``. A thumbnail (the whole
    image resized to ``s x s``) is appended only when X*Y > 1 and ``thumbnail`` is true.

    Parameters
    ----------
    img : PIL.Image.Image
        Any size and mode; convert to RGB yourself for a ViT (greyscale stays greyscale).
    tile : int, default=448
        Tile side s in pixels.
    min_num, max_num : int, default=1, 12
        Bounds on X*Y.
    thumbnail : bool, default=True
        Append the thumbnail when X*Y > 1.

    Returns
    -------
    tiles : list of PIL.Image.Image
        X*Y (+1) images of size ``tile x tile``.
    grid : TileGrid
        (X, Y).

    Raises
    ------
    TypeError
        ``img`` is not a PIL image.
    ValueError
        Empty image or bad bounds.
    """
    from PIL import Image

    if not isinstance(img, Image.Image):
        raise TypeError(f"img must be a PIL.Image.Image, got {type(img).__name__}")
    width, height = img.size
    if width < 1 or height < 1:
        raise ValueError(f"img must be non-empty, got size {img.size}")
    grid = closest_grid(width, height, tile=tile, min_num=min_num, max_num=max_num)
    resized = img.resize((tile * grid.cols, tile * grid.rows))
    tiles = []
    for t in range(grid.n_tiles):
        col, row = t % grid.cols, t // grid.cols
        tiles.append(resized.crop((col * tile, row * tile, (col + 1) * tile, (row + 1) * tile)))
    if thumbnail and grid.n_tiles > 1:
        tiles.append(img.resize((tile, tile)))
    return tiles, grid
