"""Offline photo sets and seeded patch sampling.

Everything here reads images that are already on the machine, never the network:

- ``"skimage"``: ten photos shipped in the scikit-image wheel (:data:`SKIMAGE_IMAGES`);
- ``"opencv"``: the 59 jpgs of the Debian package ``opencv-doc``
  (``/usr/share/doc/opencv-doc/examples/data/*.jpg``, :data:`OPENCV_DATA`);
- ``"sklearn"``: scikit-learn's two sample photos (china, flower);
- a folder of png/jpg files.

Images come back as float32 tensors of shape (3, H, W) in [0, 1] (greyscale repeated to RGB).
:func:`reproduce_split` builds the data of ``finola reproduce`` (spec §4), :func:`sample_patches`
draws seeded random crops and :func:`eval_patches` the fixed test crops.

Pillow, scikit-image and scikit-learn belong to the optional extra ``finola[images]``; they are
imported inside the functions that need them, so ``import finola.data`` needs none of them.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from icml25_core import as_generator, check_scalar
from icml25_core.extras import requires_extra

__all__ = [
    "EVAL_PATCH_SEED",
    "IMAGE_SUFFIXES",
    "OPENCV_DATA",
    "SKIMAGE_IMAGES",
    "ImageSplit",
    "eval_patches",
    "load_images",
    "reproduce_split",
    "sample_patches",
]

SKIMAGE_IMAGES = (
    "astronaut",
    "chelsea",
    "coffee",
    "rocket",
    "motorcycle_left",
    "retina",
    "hubble_deep_field",
    "grass",
    "gravel",
    "brick",
)
"""The scikit-image photos of ``load_images("skimage")``, in this order (spec §4).
``motorcycle_left`` is ``skimage.data.stereo_motorcycle()[0]``; grass, gravel and brick are
greyscale and come back repeated to RGB."""

OPENCV_DATA = Path("/usr/share/doc/opencv-doc/examples/data")
"""Where Debian's ``opencv-doc`` puts its example images (``apt-get install opencv-doc``)."""

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
"""File suffixes read from a folder (any case)."""

EVAL_PATCH_SEED = 20251
"""Seed of :func:`eval_patches`, apart from the small seeds (0, 1, 2, ...) used for training."""

_SOURCES = ("skimage", "opencv", "sklearn")


def _to_chw(array: np.ndarray, name: str) -> torch.Tensor:
    """uint8/uint16 (H, W) or (H, W, 3|4) array -> float32 (3, H, W) tensor in [0, 1]."""
    if array.dtype == np.uint8:
        scaled = array.astype(np.float32) / np.float32(255)
    elif array.dtype == np.uint16:
        scaled = array.astype(np.float32) / np.float32(65535)
    else:
        raise ValueError(f"{name}: unsupported pixel type {array.dtype} (expected 8 or 16 bit)")
    if scaled.ndim == 2:
        scaled = np.repeat(scaled[:, :, None], 3, axis=2)
    elif scaled.ndim == 3 and scaled.shape[2] in (3, 4):
        scaled = scaled[:, :, :3]
    else:
        raise ValueError(f"{name}: unsupported image shape {array.shape}")
    return torch.from_numpy(np.ascontiguousarray(scaled.transpose(2, 0, 1)))


def _load_skimage() -> tuple[list[torch.Tensor], list[str]]:
    with requires_extra("finola", "images"):
        import skimage.data

    images = []
    for name in SKIMAGE_IMAGES:
        if name == "motorcycle_left":
            array = skimage.data.stereo_motorcycle()[0]
        else:
            array = getattr(skimage.data, name)()
        images.append(_to_chw(array, f"skimage.data.{name}"))
    return images, list(SKIMAGE_IMAGES)


def read_image(path) -> torch.Tensor:
    """One photo file as a float32 tensor (3, H, W) in [0, 1] (Pillow; EXIF orientation
    applied; greyscale and 16-bit images converted).

    Raises
    ------
    ImportError
        Without the ``[images]`` extra.
    OSError
        If Pillow cannot read the file.
    """
    path = Path(path)
    with requires_extra("finola", "images"):
        from PIL import Image, ImageOps

    with Image.open(path) as opened:
        image = ImageOps.exif_transpose(opened)
        if image.mode in ("I;16", "I;16L", "I;16B", "I;16N"):
            array = np.asarray(image).astype(np.uint16)
        else:
            array = np.asarray(image.convert("RGB"))
    return _to_chw(array, str(path))


def _load_folder(folder: Path, suffixes, name: str) -> tuple[list[torch.Tensor], list[str]]:
    files = sorted(
        (p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in suffixes),
        key=lambda p: p.name,
    )
    if not files:
        kinds = "/".join(s.lstrip(".") for s in suffixes)
        raise FileNotFoundError(f"`{name}`: no {kinds} files in {str(folder)!r}")
    return [read_image(p) for p in files], [p.name for p in files]


def _load_opencv(folder: Path) -> tuple[list[torch.Tensor], list[str]]:
    if not folder.is_dir() or not any(folder.glob("*.jpg")):
        raise FileNotFoundError(
            f"the opencv-doc example images are not in {str(folder)!r}; install them with "
            "`apt-get install opencv-doc` (Debian/Ubuntu), or use source='skimage'"
        )
    return _load_folder(folder, (".jpg",), "source")


def _load_sklearn() -> tuple[list[torch.Tensor], list[str]]:
    with requires_extra("finola", "images"):
        from sklearn.datasets import load_sample_images

    bunch = load_sample_images()
    names = [Path(f).name for f in bunch.filenames]
    order = sorted(range(len(names)), key=names.__getitem__)
    images = [_to_chw(bunch.images[i], f"sklearn sample image {names[i]}") for i in order]
    return images, [names[i] for i in order]


def load_images(source="skimage", *, return_names: bool = False):
    """Load a set of photos from this machine as RGB float32 tensors in [0, 1].

    Parameters
    ----------
    source : {"skimage", "opencv", "sklearn"} or path-like, default="skimage"
        ``"skimage"``: the ten scikit-image photos of :data:`SKIMAGE_IMAGES`, in that order
        (the spec's order, which :func:`reproduce_split` depends on).
        ``"opencv"``: every ``*.jpg`` of :data:`OPENCV_DATA` (Debian ``opencv-doc``, 59 files),
        sorted by file name (code-point order, so capitals first).
        ``"sklearn"``: ``sklearn.datasets.load_sample_images`` (china.jpg, flower.jpg).
        A folder: every png/jpg/jpeg file in it (not in sub-folders), sorted by file name.
    return_names : bool, default=False
        Also return the image names (scikit-image function names, or file names).

    Returns
    -------
    images : list of torch.Tensor, each float32 of shape (3, H, W) with values in [0, 1]
        Greyscale files and photos are repeated to three channels; an alpha channel is
        dropped; EXIF orientation is applied; 16-bit files are divided by 65535.
    names : list of str
        Only with ``return_names=True``: one name per image, in the same order.

    Raises
    ------
    TypeError
        If `source` is neither a str nor a path, or `return_names` is not a bool.
    ValueError
        If `source` is a str that names no known set and does not look like a path (no
        separator or dot).
    FileNotFoundError
        If ``source="opencv"`` and opencv-doc is not installed (the message names
        ``apt-get install opencv-doc``), or a folder holds no png/jpg file.
    NotADirectoryError
        If `source` is a path to a file.
    ImportError
        If the extra ``finola[images]`` (Pillow, scikit-image, scikit-learn) is missing; the
        message names ``pip install 'finola[images]'``.

    Examples
    --------
    >>> images = load_images("skimage")  # doctest: +SKIP
    >>> len(images), images[0].shape, images[0].dtype  # doctest: +SKIP
    (10, torch.Size([3, 512, 512]), torch.float32)
    """
    if not isinstance(return_names, bool):
        raise TypeError(f"`return_names` must be a bool, got {type(return_names).__name__}")
    if isinstance(source, str) and source in _SOURCES:
        if source == "skimage":
            images, names = _load_skimage()
        elif source == "opencv":
            images, names = _load_opencv(OPENCV_DATA)
        else:
            images, names = _load_sklearn()
    elif isinstance(source, str | os.PathLike):
        folder = Path(source)
        if not folder.exists():
            if isinstance(source, str) and not any(c in source for c in ("/", os.sep, ".")):
                raise ValueError(
                    f"`source` must be one of {', '.join(map(repr, _SOURCES))} or a folder of "
                    f"images; got {source!r}"
                )
            raise FileNotFoundError(f"`source`: the folder {str(folder)!r} does not exist")
        if not folder.is_dir():
            raise NotADirectoryError(f"`source` must be a folder of images, got the file {source}")
        images, names = _load_folder(folder, IMAGE_SUFFIXES, "source")
    else:
        raise TypeError(f"`source` must be a str or a path, got {type(source).__name__}")
    return (images, names) if return_names else images


@dataclass
class ImageSplit:
    """The photos of ``finola reproduce``, split into training and held-out test images.

    Attributes
    ----------
    train, test : list of torch.Tensor, each float32 (3, H, W) in [0, 1]
        Training and held-out images.
    train_names, test_names : list of str
        Their names, prefixed with the set (``"skimage/astronaut"``, ``"opencv/baboon.jpg"``).
    reduced : bool
        True when opencv-doc was missing and scikit-learn's two photos replaced it: the report
        must then say "reduced data".
    description : str
        One line for a report: the sets used, the counts and the hold-out rule.
    """

    train: list = field(repr=False)
    test: list = field(repr=False)
    train_names: list
    test_names: list
    reduced: bool
    description: str


def reproduce_split(*, opencv_dir=OPENCV_DATA, holdout_every: int = 5) -> ImageSplit:
    """The data of ``finola reproduce`` (spec §4): one list of photos, every 5th held out.

    The list is the scikit-image photos (:data:`SKIMAGE_IMAGES`, in that order) followed by the
    opencv-doc jpgs sorted by name (10 + 59 = 69 images). The image at 0-based position ``i`` is
    held out for testing when ``i % holdout_every == holdout_every - 1``: the 5th, 10th, 15th,
    ... images (13 of 69; motorcycle_left and brick among the scikit-image ones). Without
    opencv-doc, scikit-learn's china and flower take its place and the split is flagged
    ``reduced``.

    Parameters
    ----------
    opencv_dir : str or path-like, default=OPENCV_DATA
        Folder of the opencv-doc jpgs; a folder without jpgs counts as opencv-doc missing.
    holdout_every : int, default=5
        Hold out every k-th image (k >= 2).

    Returns
    -------
    ImageSplit
        Training and test images with their names, the ``reduced`` flag and a description.

    Raises
    ------
    TypeError
        If `opencv_dir` is not a str or path, or `holdout_every` is not an int.
    ValueError
        If `holdout_every` < 2.
    ImportError
        If the extra ``finola[images]`` is missing.
    """
    if not isinstance(opencv_dir, str | os.PathLike):
        raise TypeError(f"`opencv_dir` must be a str or a path, got {type(opencv_dir).__name__}")
    check_scalar(holdout_every, "holdout_every", kind=int, low=2)
    images, names = _load_skimage()
    names = [f"skimage/{n}" for n in names]
    try:
        more, more_names = _load_opencv(Path(opencv_dir))
        extra, reduced = "opencv", False
    except FileNotFoundError:
        more, more_names = _load_sklearn()
        extra, reduced = "sklearn", True
    images += more
    names += [f"{extra}/{n}" for n in more_names]
    test_pos = [i for i in range(len(images)) if i % holdout_every == holdout_every - 1]
    train_pos = [i for i in range(len(images)) if i % holdout_every != holdout_every - 1]
    sets = f"scikit-image ({len(SKIMAGE_IMAGES)}) + " + (
        f"scikit-learn china/flower ({len(more)}); reduced data: opencv-doc is not installed "
        f"in {str(opencv_dir)!r} (apt-get install opencv-doc)"
        if reduced
        else f"opencv-doc ({len(more)})"
    )
    description = (
        f"{sets}; 1 image in {holdout_every} held out (0-based index % {holdout_every} == "
        f"{holdout_every - 1}): {len(train_pos)} train, {len(test_pos)} test"
    )
    return ImageSplit(
        train=[images[i] for i in train_pos],
        test=[images[i] for i in test_pos],
        train_names=[names[i] for i in train_pos],
        test_names=[names[i] for i in test_pos],
        reduced=reduced,
        description=description,
    )


def _check_images(images) -> list[torch.Tensor]:
    if isinstance(images, torch.Tensor | np.ndarray) and images.ndim == 4:
        images = list(images)
    if isinstance(images, torch.Tensor | np.ndarray) or not isinstance(images, list | tuple):
        raise TypeError(
            "`images` must be a list of (C, H, W) tensors/arrays or one (N, C, H, W) tensor, "
            f"got {type(images).__name__}"
            + (f" of shape {tuple(images.shape)}" if hasattr(images, "shape") else "")
        )
    if not images:
        raise ValueError("`images` is empty")
    out: list[torch.Tensor] = []
    for i, image in enumerate(images):
        if isinstance(image, np.ndarray):
            image = torch.from_numpy(image)
        if not isinstance(image, torch.Tensor):
            raise TypeError(f"`images`[{i}] must be a tensor or array, got {type(image).__name__}")
        if image.ndim != 3 or 0 in image.shape:
            raise ValueError(f"`images`[{i}] must have shape (C, H, W), got {tuple(image.shape)}")
        if image.shape[-1] in (1, 3, 4) and image.shape[0] not in (1, 3, 4):
            raise ValueError(
                f"`images`[{i}] has shape {tuple(image.shape)}: channels last (H, W, C)? "
                "expected (C, H, W): use image.permute(2, 0, 1)"
            )
        if not image.is_floating_point():
            raise TypeError(f"`images`[{i}] must be floating point in [0, 1], got {image.dtype}")
        if torch.isnan(image).any():
            raise ValueError(f"`images`[{i}] contains NaN")
        lo, hi = float(image.min()), float(image.max())
        if lo < 0 or hi > 1:
            raise ValueError(
                f"`images`[{i}] must lie in [0, 1], got min {lo:g}, max {hi:g} "
                "(divide 8-bit images by 255)"
            )
        if out and image.shape[0] != out[0].shape[0]:
            raise ValueError(
                f"`images` must all have the same number of channels; `images`[0] has "
                f"{out[0].shape[0]}, `images`[{i}] has {image.shape[0]}"
            )
        out.append(image)
    return out


def sample_patches(images, n: int, size: int = 32, seed=0) -> torch.Tensor:
    """Seeded random square crops of a list of images.

    Each crop picks an image uniformly at random among those at least `size` pixels high and
    wide (smaller images are skipped), then a top-left corner uniformly among the valid
    positions. The draws come from ``numpy.random.default_rng(seed)``, so a seed gives the same
    crops on every machine.

    Parameters
    ----------
    images : list of torch.Tensor or numpy.ndarray, each floating (C, H, W) in [0, 1]
        The images (sizes may differ, channel counts may not); a (N, C, H, W) tensor works too.
    n : int
        Number of crops, >= 1.
    size : int, default=32
        Side of a crop in pixels, >= 1.
    seed : int or numpy.random.Generator, default=0
        Seed in [0, 2**32 - 1], or a generator (which the call advances).

    Returns
    -------
    torch.Tensor, float32 of shape (n, C, size, size) on the CPU, values in [0, 1]

    Raises
    ------
    TypeError
        If `images` is not a list of tensors/arrays (or a 4-D tensor), an image is not floating
        point, or `n`, `size` or `seed` has a wrong type.
    ValueError
        If `images` is empty, an image is not 3-D, contains NaN or leaves [0, 1], the channel
        counts differ, `n` or `size` is below 1, or no image is at least `size` × `size`.

    Examples
    --------
    >>> import torch
    >>> patches = sample_patches([torch.rand(3, 40, 50)], n=4, size=32, seed=0)
    >>> tuple(patches.shape)
    (4, 3, 32, 32)
    """
    images = _check_images(images)
    check_scalar(n, "n", kind=int, low=1)
    check_scalar(size, "size", kind=int, low=1)
    rng = as_generator(seed)
    usable = [im for im in images if im.shape[1] >= size and im.shape[2] >= size]
    if not usable:
        largest = max(images, key=lambda im: min(im.shape[1:]))
        raise ValueError(
            f"`images`: none is at least {size} x {size} pixels (the largest is "
            f"{largest.shape[1]} x {largest.shape[2]}); lower `size`"
        )
    heights = np.array([im.shape[1] for im in usable])
    widths = np.array([im.shape[2] for im in usable])
    which = rng.integers(len(usable), size=n)
    tops = rng.integers(0, heights[which] - size + 1)
    lefts = rng.integers(0, widths[which] - size + 1)
    out = torch.empty((n, usable[0].shape[0], size, size), dtype=torch.float32)
    for k, (j, top, left) in enumerate(zip(which, tops, lefts, strict=True)):
        crop = usable[j][:, top : top + size, left : left + size]
        out[k] = crop.to(device="cpu", dtype=torch.float32)
    return out


def eval_patches(images, n: int = 512, size: int = 32, seed=EVAL_PATCH_SEED) -> torch.Tensor:
    """The fixed test crops of ``finola reproduce``: :func:`sample_patches` with its own seed.

    Parameters
    ----------
    images : list of torch.Tensor or numpy.ndarray, each floating (C, H, W) in [0, 1]
        The held-out images (``reproduce_split().test``).
    n : int, default=512
        Number of crops.
    size : int, default=32
        Side of a crop in pixels.
    seed : int or numpy.random.Generator, default=EVAL_PATCH_SEED
        Seed; the default differs from the small training seeds, so the same images never
        give training and test crops from one stream.

    Returns
    -------
    torch.Tensor, float32 of shape (n, C, size, size) on the CPU, values in [0, 1]

    Raises
    ------
    TypeError, ValueError
        As :func:`sample_patches`.
    """
    return sample_patches(images, n, size=size, seed=seed)
