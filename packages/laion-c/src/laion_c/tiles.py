"""Tile libraries for the mosaic and sticker distortions.

A tile is a source photo after the official preprocessing, torchvision ``Resize(256)``,
``CenterCrop(224)``, then ``Resize((t, t))``; its key is the per-channel mean colour in [0, 1]
(float64). Mosaic replaces each ``t x t`` block by the tile whose key is nearest (L2) to the
block's colour, found with ``scipy.spatial.cKDTree`` as in ``apply_distortions.py``; stickers
paste whole 16-px tiles.

The official tile source is not published (spec §4 deviation), so :meth:`TileLibrary.from_images`
can also take seeded random square crops of each photo to grow a library from few images.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
from PIL import Image
from scipy.spatial import cKDTree

from icml25_core import as_generator, check_array, check_scalar, progress

from ._image import center_crop, read_rgb, resize_exact, resize_shorter, to_rgb
from .params import CROP, PARAMS, RESIZE, STICKER_SIZE

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp", ".ppm")


class TileLibrary:
    """A set of ``t x t`` RGB tiles and their mean-colour keys.

    Parameters
    ----------
    tiles : array_like, shape (T, t, t, 3), uint8
        The tiles. ``T >= 1``, ``t >= 1``.

    Attributes
    ----------
    tiles : numpy.ndarray, shape (T, t, t, 3), uint8
    keys : numpy.ndarray, shape (T, 3), float64
        Per-channel mean of each tile in [0, 1]: the mean (float64) of ``ToTensor``'s float32
        ``v / 255``, as ``prepare_tiles_mosaic`` computes it.
    tile_size : int
        ``t``.

    Raises
    ------
    TypeError
        If `tiles` is not uint8.
    ValueError
        If `tiles` is empty or not shaped ``(T, t, t, 3)``.
    """

    def __init__(self, tiles):
        tiles = check_array(tiles, "tiles", ndim=4, dtype=np.uint8)
        if tiles.shape[1] != tiles.shape[2] or tiles.shape[3] != 3:
            raise ValueError(f"`tiles` must have shape (T, t, t, 3), got {tiles.shape}")
        self.tiles = np.ascontiguousarray(tiles)
        self.tiles.setflags(write=False)
        unit = (self.tiles.astype(np.float32) / np.float32(255)).astype(np.float64)
        self.keys = unit.mean(axis=(1, 2))
        self.tile_size = int(tiles.shape[1])
        self._tree = None

    def __len__(self) -> int:
        return len(self.tiles)

    def __repr__(self) -> str:
        return f"TileLibrary({len(self)} tiles of {self.tile_size}x{self.tile_size})"

    def nearest(self, colors) -> np.ndarray:
        """Index of the tile whose key is L2-nearest to each colour (``cKDTree.query``).

        Parameters
        ----------
        colors : array_like, shape (N, 3), float
            Colours in [0, 1].

        Returns
        -------
        numpy.ndarray, shape (N,), int64

        Raises
        ------
        ValueError
            If `colors` is not ``(N, 3)``, is empty or holds NaN/inf.
        """
        colors = check_array(colors, "colors", shape=(None, 3), dtype="numeric", cast=np.float64)
        if self._tree is None:
            self._tree = cKDTree(self.keys)
        return self._tree.query(colors, k=1)[1].astype(np.int64)

    @staticmethod
    def tile_of(image: Image.Image, tile_size: int) -> np.ndarray:
        """The official tile of one photo: Resize(256), CenterCrop(224), Resize((t, t))."""
        image = center_crop(resize_shorter(to_rgb(image, "image"), RESIZE), CROP)
        return np.asarray(resize_exact(image, tile_size, tile_size))

    @classmethod
    def from_images(cls, images: Iterable, tile_size: int, *, crops_per_image: int = 0, rng=0):
        """Build a library from photos.

        Parameters
        ----------
        images : iterable of PIL.Image.Image, uint8 (H, W, 3) arrays or paths
        tile_size : int
            ``t`` (4, 6, 8, 16, 28 for the mosaic levels, 16 for stickers).
        crops_per_image : int, default=0
            0: one official tile per image. ``k > 0``: additionally ``k`` random square crops
            (side uniform in [min(H, W) / 8, min(H, W)], uniform position) per image, each
            resized to ``t x t`` (bilinear) — our deviation to grow a library from few photos.
        rng : int, numpy Generator or None, default=0
            Seed of the crops.

        Returns
        -------
        TileLibrary

        Raises
        ------
        ValueError
            If `tile_size` < 1, `crops_per_image` < 0 or `images` is empty.
        """
        tile_size = int(check_scalar(tile_size, "tile_size", kind=int, low=1))
        crops_per_image = int(check_scalar(crops_per_image, "crops_per_image", kind=int, low=0))
        generator = as_generator(rng)
        tiles = []
        for item in images:
            image = _open(item)
            tiles.append(cls.tile_of(image, tile_size))
            w, h = image.size
            short = min(w, h)
            sides = generator.integers(max(1, short // 8), short + 1, size=crops_per_image)
            for side in sides:
                top = int(generator.integers(0, h - side + 1))
                left = int(generator.integers(0, w - side + 1))
                crop = image.crop((left, top, left + int(side), top + int(side)))
                tiles.append(np.asarray(resize_exact(crop, tile_size, tile_size)))
        if not tiles:
            raise ValueError("`images` must hold at least one image")
        return cls(np.stack(tiles))

    @classmethod
    def from_folder(cls, folder, tile_size: int, *, crops_per_image: int = 0, rng=0):
        """:meth:`from_images` on every image file under `folder` (recursive, sorted).

        Raises
        ------
        FileNotFoundError
            If `folder` does not exist.
        ValueError
            If it holds no image file.
        """
        paths = image_files(folder, "folder")
        return cls.from_images(
            progress(paths, desc=f"tiles {tile_size}px", unit="img"),
            tile_size,
            crops_per_image=crops_per_image,
            rng=rng,
        )

    def save(self, path) -> Path:
        """Write the tiles to an ``.npz`` file (key ``tiles``); returns the path."""
        path = Path(path)
        np.savez_compressed(path, tiles=self.tiles)
        return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")

    @classmethod
    def load(cls, path) -> TileLibrary:
        """Read a library written by :meth:`save`."""
        with np.load(path) as data:
            return cls(data["tiles"])


def tile_sizes_needed(distortions, levels) -> list[int]:
    """Tile sizes the given cells need (mosaic t per level, 16 for stickers)."""
    sizes: set[int] = set()
    for name in distortions:
        if name == "mosaic":
            sizes.update(PARAMS["mosaic"][level] for level in levels)
        elif name == "stickers":
            sizes.add(STICKER_SIZE)
    return sorted(sizes)


def build_tiles(images, sizes=(4, 6, 8, 16, 28), *, crops_per_image=0, rng=0):
    """One :class:`TileLibrary` per tile size, from the same photos and crop seed.

    Parameters
    ----------
    images : folder, or iterable of paths, PIL images or uint8 (H, W, 3) arrays
        A folder (str or Path) is searched recursively for image files.
    sizes : iterable of int, default (4, 6, 8, 16, 28)
        Tile sides in pixels (the mosaic levels' t; 16 is also the sticker side).
    crops_per_image : int >= 0, default=0
        Seeded random square crops per photo, on top of the photo's own tile.
    rng : int, numpy Generator or RandomState, default=0

    Returns
    -------
    dict of int to TileLibrary

    Raises
    ------
    FileNotFoundError
        If a path (or the folder) does not exist.
    ValueError
        No image, a file that is not an image, bad `sizes` or `crops_per_image`.
    TypeError
        If an item is not a path, PIL image or array.
    """
    if isinstance(images, str | Path):
        images = image_files(images, "images")
    elif isinstance(images, Image.Image | np.ndarray):
        raise TypeError(
            f"`images` must be a folder or a list of images, got one {type(images).__name__}"
        )
    images = [_open(item) for item in images]
    return {
        int(t): TileLibrary.from_images(images, t, crops_per_image=crops_per_image, rng=rng)
        for t in sizes
    }


def save_tiles(libraries: Mapping, path) -> Path:
    """Write ``{t: TileLibrary}`` to one ``.npz`` (keys ``t4``, ``t16``, ...); returns the path.

    Raises
    ------
    TypeError
        If `libraries` is not a non-empty dict of :class:`TileLibrary`.
    """
    if (
        not isinstance(libraries, Mapping)
        or not libraries
        or not all(isinstance(v, TileLibrary) for v in libraries.values())
    ):
        raise TypeError(
            "`libraries` must be a non-empty dict {tile_size: TileLibrary} (from build_tiles), "
            f"got {type(libraries).__name__}"
        )
    path = Path(path)
    np.savez_compressed(path, **{f"t{t}": lib.tiles for t, lib in libraries.items()})
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")


def load_tiles(path) -> dict[int, TileLibrary]:
    """Read ``{t: TileLibrary}`` written by :func:`save_tiles` (or one :meth:`TileLibrary.save`).

    Raises
    ------
    FileNotFoundError
        If `path` does not exist.
    ValueError
        If `path` is not an ``.npz`` written by :func:`save_tiles` or :meth:`TileLibrary.save`.
    """
    bad = ValueError(f"`path` {path} is not a tile file written by save_tiles / TileLibrary.save")
    try:
        data = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise bad from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise bad
    with data:
        if "tiles" in data.files:
            lib = TileLibrary(data["tiles"])
            return {lib.tile_size: lib}
        if not data.files or not all(
            key.startswith("t") and key[1:].isdigit() for key in data.files
        ):
            raise bad
        return {int(key[1:]): TileLibrary(data[key]) for key in data.files}


def select_tiles(tiles, tile_size: int, name: str = "tiles") -> TileLibrary:
    """The library of side `tile_size` from a :class:`TileLibrary` or a ``{t: TileLibrary}``.

    Raises
    ------
    TypeError
        If `tiles` is None or of another type.
    ValueError
        If no library of side `tile_size` is given.
    """
    if tiles is None:
        raise TypeError(
            f"`{name}` is required for mosaic and stickers: pass a TileLibrary of "
            f"{tile_size}x{tile_size} tiles or a dict {{tile_size: TileLibrary}}"
        )
    if isinstance(tiles, TileLibrary):
        found = {tiles.tile_size: tiles}
    elif isinstance(tiles, Mapping) and all(isinstance(v, TileLibrary) for v in tiles.values()):
        found = {int(k): v for k, v in tiles.items()}
    else:
        raise TypeError(
            f"`{name}` must be a TileLibrary or a dict of them, got {type(tiles).__name__}"
        )
    if tile_size not in found:
        raise ValueError(
            f"`{name}` has no {tile_size}x{tile_size} tiles (sizes given: {sorted(found)})"
        )
    if found[tile_size].tile_size != tile_size:
        raise ValueError(f"`{name}`[{tile_size}] holds {found[tile_size].tile_size}-px tiles")
    return found[tile_size]


def image_files(folder, name: str = "folder") -> list[Path]:
    """Sorted image files under `folder` (recursive).

    Raises
    ------
    FileNotFoundError
        If `folder` is not a directory.
    ValueError
        If it holds no image file.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"`{name}` {folder} is not a directory")
    paths = sorted(
        p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES
    )
    if not paths:
        raise ValueError(f"`{name}` {folder} holds no image file ({', '.join(IMAGE_SUFFIXES)})")
    return paths


def _open(item) -> Image.Image:
    if isinstance(item, Image.Image):
        return to_rgb(item, "images")
    if isinstance(item, np.ndarray):
        check_array(item, "images", ndim=3, dtype=np.uint8)
        return Image.fromarray(item).convert("RGB")
    if isinstance(item, str | Path):
        # truncated or unreadable files raise a ValueError naming `images` and the file
        return read_rgb(item, "images")
    raise TypeError(f"`images` must hold PIL images, uint8 arrays or paths, got {type(item)}")
