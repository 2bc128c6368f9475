r"""Synthetic visible watermarks at a set visibility (WMarkGPT's WQA-Synthetic generator).

Source: official ``datasetCreating/create_secret_json.py`` (logo box) and
``datasetCreating/emb_watermark.py`` (blend), TanSongBai/WMarkGPT@2d812b4; paper Sec. 3.

Axes: images are ``[H, W, 3]`` uint8 (rows y grow downward, columns x); boxes are
``(x0, y0, x1, y1)`` with exclusive ends.

The blend on the logo's foreground pixels, with cover $I$ and logo $L$ as floats in $[0, 1]$:

$$ I'_{yx} = (1 - w) I_{yx} + w L_{yx}, $$

quantised to uint8, then shifted by $\bar I - \bar{I'}$ (means over all pixels and channels) and
clipped to $[0, 255]$, so that the stego keeps the cover's brightness.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from icml25_core import as_generator, check_array, check_choice, check_scalar

from .levels import MAX_WEIGHT, score_to_level, weight_to_score

Box = tuple[int, int, int, int]

__all__ = [
    "Logo",
    "RandomLogoWatermark",
    "Stego",
    "blend_logo",
    "logo_box_from_mask",
    "mask_from_gray",
    "prepare_logo",
    "scale_box",
]


def pil_to_rgb(img, name: str = "image") -> np.ndarray:
    """An 8-bit RGB array of a PIL image; 16-bit greyscale (``I;16*``) is scaled to 8 bits
    (``>> 8``), not clipped as Pillow's ``convert("RGB")`` does; 32-bit ``I`` / ``F`` images
    are refused (their range is unknown). Not part of the public API."""
    mode = img.mode
    if mode.startswith("I;16"):
        arr = np.asarray(img, dtype=np.uint16) >> 8
        return np.repeat(arr.astype(np.uint8)[..., None], 3, axis=2)
    if mode in ("I", "F"):
        raise ValueError(
            f"`{name}` is a 32-bit {mode!r} image: convert it to 8-bit RGB first (its value "
            "range is unknown)"
        )
    return np.asarray(img.convert("RGB"))


def _check_mask(mask, name: str = "mask") -> np.ndarray:
    mask = check_array(mask, name, ndim=2, dtype="bool")
    return mask


def mask_from_gray(gray, threshold: float = 150) -> np.ndarray:
    """Foreground of an official-style mask image: dark pixels are the logo.

    Parameters
    ----------
    gray : ndarray of shape (h, w), uint8
        Mask image (0 = logo, 255 = background, as the official ``mask/`` folder).
    threshold : float, default=150
        Foreground is ``gray < threshold``.

    Returns
    -------
    ndarray of shape (h, w), bool

    Raises
    ------
    ValueError
        If `gray` is not a 2-D numeric array, is a float array in [0, 1] (scale it by 255
        first), or `threshold` is outside [0, 256].

    Notes
    -----
    Source: ``emb_watermark.py`` uses ``mask < 150`` for the blend, ``create_secret_json.py``
    uses ``mask > 150`` as background (so 150 counts as foreground there): the two disagree at
    exactly 150 (spec Sec. 9); this library uses ``< 150`` for both.
    """
    gray = check_array(gray, "gray", ndim=2)
    check_scalar(threshold, "threshold", low=0, high=256)
    if gray.dtype.kind == "f" and gray.size and float(np.nanmax(gray)) <= 1.0:
        raise ValueError(
            "`gray` is a float array in [0, 1]: pass 0..255 grey levels (e.g. "
            "`(gray * 255).astype(np.uint8)`)"
        )
    return gray < threshold


def logo_box_from_mask(mask, edge_fraction: float = 0.05) -> Box:
    r"""Box of a logo from its mask, trimming the nearest and farthest foreground pixels.

    Foreground pixels (row-major order) are sorted by squared distance to the mask image's
    centre $(h/2, w/2)$ (a stable sort); the first $\lfloor n f\rfloor$ and those from
    $\lfloor n (1-f)\rfloor$ on are dropped; the box spans the rest.

    Parameters
    ----------
    mask : ndarray of shape (h, w), bool
        True on the logo.
    edge_fraction : float, default=0.05
        $f$, the fraction dropped at each end (official ``edge_percentage = 0.05``).

    Returns
    -------
    tuple of int
        ``(x0, y0, x1, y1)``, exclusive ends.

    Raises
    ------
    ValueError
        If `mask` is not 2-D bool, `edge_fraction` is outside [0, 0.5), or no foreground pixel
        survives the trimming.

    Notes
    -----
    Source: official ``datasetCreating/create_secret_json.py`` (its box is inclusive,
    ``[min_x, min_y, max_x, max_y]``; here the end is exclusive: ``max + 1``). The official code
    sorts with ``np.argsort`` (not stable); ties at the trimming cut may fall either way there.

    Examples
    --------
    >>> m = np.zeros((8, 8), bool); m[2:5, 3:7] = True
    >>> logo_box_from_mask(m, edge_fraction=0)
    (3, 2, 7, 5)
    """
    mask = _check_mask(mask)
    check_scalar(edge_fraction, "edge_fraction", low=0, high=0.5, inclusive="left")
    h, w = mask.shape
    coords = np.argwhere(mask)
    n = len(coords)
    dist = (coords[:, 0] - h / 2) ** 2 + (coords[:, 1] - w / 2) ** 2
    coords = coords[np.argsort(dist, kind="stable")]
    kept = coords[int(n * edge_fraction) : int(n * (1 - edge_fraction))]
    if len(kept) == 0:
        raise ValueError(
            f"`mask` has {n} foreground pixel(s): none left after trimming {edge_fraction} at "
            "each end"
        )
    y0, x0 = kept.min(0)
    y1, x1 = kept.max(0)
    return int(x0), int(y0), int(x1) + 1, int(y1) + 1


def scale_box(box: Sequence[int], src_size: tuple[int, int], dst_size: tuple[int, int]) -> Box:
    r"""Map a box from an image of size ``src_size`` to a resized one, x and y separately.

    $x' = \lfloor x_0 s_x\rfloor, \lceil x_1 s_x\rceil$ with $s_x = W'/W$, and the same for y.

    Parameters
    ----------
    box : sequence of 4 int
        ``(x0, y0, x1, y1)``, exclusive ends, inside ``src_size``.
    src_size, dst_size : tuple of int
        ``(width, height)`` before and after resizing.

    Returns
    -------
    tuple of int
        The box in the resized image.

    Raises
    ------
    ValueError
        If a size is not positive or the box is empty or outside `src_size`.

    Notes
    -----
    The official ``embed_watermark`` uses one scale ``h_ / 224`` with ``h_, w_ = image2.size``
    (the width, named as a height) for both axes, so non-square logos are mis-boxed (spec
    Sec. 9); here each axis has its own scale.

    Examples
    --------
    >>> scale_box((10, 5, 50, 25), (100, 50), (224, 224))
    (22, 22, 112, 112)
    """
    x0, y0, x1, y1 = (int(v) for v in box)
    (sw, sh), (dw, dh) = src_size, dst_size
    if min(sw, sh, dw, dh) <= 0:
        raise ValueError(f"sizes must be positive, got {src_size} and {dst_size}")
    if not (0 <= x0 < x1 <= sw and 0 <= y0 < y1 <= sh):
        raise ValueError(f"`box` {tuple(box)} is empty or outside the {sw}x{sh} image")
    sx, sy = dw / sw, dh / sh
    return (
        math.floor(x0 * sx),
        math.floor(y0 * sy),
        min(math.ceil(x1 * sx), dw),
        min(math.ceil(y1 * sy), dh),
    )


@dataclass(frozen=True)
class Logo:
    """A logo ready to paste: its pixels and foreground mask, cropped to its box.

    Attributes
    ----------
    rgb : ndarray of shape (h, w, 3), uint8
    mask : ndarray of shape (h, w), bool
    name : str
    """

    rgb: np.ndarray
    mask: np.ndarray
    name: str = "logo"

    def __post_init__(self):
        rgb = check_array(self.rgb, "rgb", ndim=3, dtype=np.uint8)
        mask = _check_mask(self.mask)
        if rgb.shape[2] != 3 or rgb.shape[:2] != mask.shape:
            raise ValueError(
                f"`mask` shape {mask.shape} must equal the logo's (h, w) {rgb.shape[:2]} and the "
                "logo must be RGB"
            )
        if not mask.any():
            raise ValueError(f"`mask` of logo {self.name!r} has no foreground pixel")


def prepare_logo(
    image,
    mask=None,
    *,
    size: int | tuple[int, int] | None = (224, 224),
    edge_fraction: float = 0.05,
    name: str = "logo",
) -> Logo:
    """Resize a logo and its mask, find its box and crop both: what the generator pastes.

    Parameters
    ----------
    image : ndarray of shape (h, w, 3) or (h, w, 4), uint8
        The logo (RGBA: its alpha gives the mask when `mask` is None).
    mask : ndarray of shape (h, w), bool, optional
        Foreground. Default: alpha >= 128 when the alpha channel has transparency, else the
        pixels farther than 40 grey levels (max over channels) from the median border colour
        (our rule for logos on a flat background).
    size : int, tuple of int or None, default=(224, 224)
        ``(width, height)`` the logo and mask are resized to (official: 224 x 224, aspect not
        kept; an int is a square side); None keeps the logo's size.
    edge_fraction : float, default=0.05
        As in :func:`logo_box_from_mask`.
    name : str, default="logo"

    Returns
    -------
    Logo

    Raises
    ------
    ValueError
        If the shapes disagree or the mask is empty.

    Notes
    -----
    Source: official ``create_secret_json.py`` (box on the original mask) and
    ``emb_watermark.py`` (logo and mask resized to 224 x 224, box rescaled, cropped); the box is
    rescaled with separate x and y scales (:func:`scale_box`), resizing uses Pillow's bilinear
    filter for the logo and nearest for the mask.
    """
    from PIL import Image

    image = check_array(image, "image", ndim=3, dtype=np.uint8)
    if image.shape[2] not in (3, 4):
        raise ValueError(f"`image` must be RGB or RGBA, got {image.shape[2]} channels")
    rgb = image[..., :3]
    if mask is None:
        if image.shape[2] == 4 and (image[..., 3] < 255).any():
            mask = image[..., 3] >= 128
        else:
            border = np.concatenate([rgb[0], rgb[-1], rgb[:, 0], rgb[:, -1]]).astype(int)
            background = np.median(border, axis=0)
            mask = np.abs(rgb.astype(int) - background).max(-1) > 40
    mask = _check_mask(mask)
    if mask.shape != rgb.shape[:2]:
        raise ValueError(f"`mask` shape {mask.shape} must equal the logo's {rgb.shape[:2]}")
    box = logo_box_from_mask(mask, edge_fraction)
    h, w = mask.shape
    if size is not None:
        wh: tuple[int, int] = (
            (int(size), int(size)) if isinstance(size, (int, np.integer)) else tuple(size)  # type: ignore[assignment]
        )
        box = scale_box(box, (w, h), wh)
        rgb = np.asarray(Image.fromarray(rgb).resize(wh, Image.Resampling.BILINEAR))
        mask = np.asarray(Image.fromarray(mask).resize(wh, Image.Resampling.NEAREST))
    x0, y0, x1, y1 = box
    return Logo(rgb[y0:y1, x0:x1].copy(), mask[y0:y1, x0:x1].copy(), name)


@dataclass(frozen=True)
class Stego:
    """A watermarked image and what was done to it.

    Attributes
    ----------
    image : ndarray of shape (H, W, 3), uint8
        The stego image.
    wm_box : tuple of int
        ``(x0, y0, x1, y1)``, exclusive ends: the box of the foreground pixels pasted.
    weight : float
        Blend weight $w$.
    score : float
        $\\operatorname{round}(5 - 20 w, 2)$ (:func:`~wmarkgpt.levels.weight_to_score`).
    level : str
        Visibility level of `score`.
    blended : ndarray of shape (H, W, 3), float64
        $I'$ in $[0, 1]$ before quantisation and the brightness shift.
    """

    image: np.ndarray
    wm_box: Box
    weight: float
    score: float
    level: str
    blended: np.ndarray


def _quantize(x: np.ndarray, quantize: str) -> np.ndarray:
    if quantize == "round":
        return np.rint(x)
    return np.trunc(x)  # the official uint8 cast of non-negative floats


def _check_blend_inputs(cover, logo, mask, weight, xy, quantize):
    cover = check_array(cover, "cover", ndim=3, dtype=np.uint8)
    logo = check_array(logo, "logo", ndim=3, dtype=np.uint8)
    mask = _check_mask(mask)
    if cover.shape[2] != 3 or logo.shape[2] != 3:
        raise ValueError(
            f"`cover` and `logo` must be RGB [H, W, 3], got {cover.shape} and {logo.shape}"
        )
    if mask.shape != logo.shape[:2]:
        raise ValueError(f"`mask` shape {mask.shape} must equal the logo's (h, w) {logo.shape[:2]}")
    if not mask.any():
        raise ValueError("`mask` has no foreground pixel")
    H, W = cover.shape[:2]
    h, w = logo.shape[:2]
    if h > H or w > W:
        raise ValueError(f"`logo` ({w}x{h}) is larger than `cover` ({W}x{H})")
    weight = float(check_scalar(weight, "weight", low=0.0, high=1.0))
    check_choice(quantize, "quantize", ("round", "truncate"))
    if xy is not None:
        if len(xy) != 2:
            raise ValueError(f"`xy` must be (x, y), got {xy!r}")
        if not all(float(v).is_integer() for v in xy):
            raise ValueError(f"`xy` must be integer pixel positions, got {tuple(xy)!r}")
        x, y = (int(v) for v in xy)
        if not (0 <= x <= W - w and 0 <= y <= H - h):
            raise ValueError(f"`xy` {tuple(xy)} puts the {w}x{h} logo outside the {W}x{H} cover")
    return cover, logo, mask, weight


def _finish(cover, fused_q, renorm_brightness, quantize):
    if not renorm_brightness:
        return fused_q.astype(np.uint8)
    shifted = np.clip(fused_q + (cover.mean() - fused_q.mean()), 0, 255)
    return _quantize(shifted, quantize).astype(np.uint8)


def blend_logo(
    cover,
    logo,
    mask,
    *,
    weight: float,
    xy: tuple[int, int] | None = None,
    rng=None,
    renorm_brightness: bool = True,
    quantize: str = "round",
) -> Stego:
    r"""Paste a logo on its foreground pixels at blend weight $w$ (vectorised).

    $I' = (1 - w) I + w L$ on the foreground (floats in $[0, 1]$), quantised, then shifted by
    $\bar I - \bar{I'}$ and clipped to $[0, 255]$.

    Parameters
    ----------
    cover : ndarray of shape (H, W, 3), uint8
    logo : ndarray of shape (h, w, 3), uint8
        The cropped logo (:class:`Logo`'s ``rgb``), at most the cover's size.
    mask : ndarray of shape (h, w), bool
        Its foreground.
    weight : float
        $w \in [0, 1]$ (official draws $U[0, 0.25]$ rounded to 2 decimals).
    xy : tuple of int, optional
        Top-left ``(x, y)`` of the logo; default uniform over the positions that fit.
    rng : int, numpy Generator or None
        Seed of the position.
    renorm_brightness : bool, default=True
        Apply the mean shift (official ``adjust_brightness``).
    quantize : {"round", "truncate"}, default="round"
        How floats become uint8. "truncate" is the official ``astype(np.uint8)`` (compat).

    Returns
    -------
    Stego

    Raises
    ------
    ValueError
        If `weight` is outside [0, 1], the mask and logo shapes differ, the logo is larger than
        the cover, `xy` does not fit, or an array has the wrong shape or dtype.

    Notes
    -----
    Source: official ``datasetCreating/emb_watermark.py`` (``embed_watermark`` and
    ``adjust_brightness``); its per-pixel loop is replaced by one masked assignment (exactly equal,
    ``tests/test_synth.py``). Compat: ``quantize="truncate"`` reproduces its two uint8 casts.

    Examples
    --------
    >>> cover = np.full((32, 32, 3), 100, np.uint8)
    >>> logo = np.full((8, 8, 3), 200, np.uint8); mask = np.ones((8, 8), bool)
    >>> s = blend_logo(cover, logo, mask, weight=0.1, xy=(4, 4))
    >>> s.wm_box, s.level
    ((4, 4, 12, 12), 'obvious')
    """
    cover, logo, mask, weight = _check_blend_inputs(cover, logo, mask, weight, xy, quantize)
    H, W = cover.shape[:2]
    h, w = logo.shape[:2]
    if xy is None:
        gen = as_generator(rng)
        x, y = int(gen.integers(0, W - w + 1)), int(gen.integers(0, H - h + 1))
    else:
        x, y = int(xy[0]), int(xy[1])
    fused = cover / 255.0
    region = fused[y : y + h, x : x + w]
    region[mask] = (1 - weight) * region[mask] + weight * (logo[mask] / 255.0)
    image = _finish(cover, _quantize(fused * 255, quantize), renorm_brightness, quantize)
    rows, cols = np.nonzero(mask)
    box = (
        x + int(cols.min()),
        y + int(rows.min()),
        x + int(cols.max()) + 1,
        y + int(rows.max()) + 1,
    )
    score = weight_to_score(weight)
    return Stego(image, box, weight, score, score_to_level(score), fused)


def naive_blend_logo(
    cover, logo, mask, *, weight, xy, renorm_brightness=True, quantize="round"
) -> np.ndarray:
    """Per-pixel reference of :func:`blend_logo` (the official loop): the executable spec that
    the tests and ``benchmarks/bench_blend.py`` compare with. Not part of the public API."""
    cover, logo, mask, weight = _check_blend_inputs(cover, logo, mask, weight, xy, quantize)
    x, y = xy
    fused = cover / 255.0
    logo_f = logo / 255.0
    for i, j in zip(*np.where(mask), strict=True):
        fused[y + i, x + j, :] = (1 - weight) * fused[y + i, x + j, :] + weight * logo_f[i, j, :]
    return _finish(cover, _quantize(fused * 255, quantize), renorm_brightness, quantize)


class RandomLogoWatermark:
    """Torchvision-style transform: paste a random logo at a random weight and position.

    Parameters
    ----------
    logos : sequence of Logo
        Logos to draw from (:func:`prepare_logo`).
    weight_range : tuple of float, default=(0, 0.25)
        $w \\sim U[a, b]$ rounded to 2 decimals (official generator).
    seed : int or None
        Seed of the transform's own generator.
    quantize : {"round", "truncate"}, default="round"

    Attributes
    ----------
    last_ : Stego or None
        The last stego made (its weight, score, level and box).

    Raises
    ------
    ValueError
        If `logos` is empty or `weight_range` is not an ordered pair in [0, 1].

    Notes
    -----
    Call convention of torchvision transforms (DECISIONS 8): a PIL image in, a PIL image out; a
    CHW uint8 or float tensor in [0, 1] in, the same type out (dtype kept; a float tensor outside
    [0, 1] or with NaN is refused; floats come out on the 1/255 grid); an HWC uint8 array in, an
    array out. "L" and "RGBA" PIL images come back in their mode (alpha kept); other modes as
    "RGB" (16-bit greyscale is scaled to 8 bits). Logos larger than
    the image are shrunk to fit (Pillow bilinear, keeping the aspect).
    """

    def __init__(
        self,
        logos: Sequence[Logo],
        weight_range=(0.0, MAX_WEIGHT),
        seed=None,
        quantize: str = "round",
    ):
        if len(logos) == 0:
            raise ValueError("`logos` must hold at least one Logo")
        for logo in logos:
            if not isinstance(logo, Logo):
                raise TypeError(f"`logos` must hold Logo objects, got {type(logo).__name__}")
        a, b = (float(v) for v in weight_range)
        if not 0 <= a <= b <= 1:
            raise ValueError(
                f"`weight_range` must be (a, b) with 0 <= a <= b <= 1, got {weight_range}"
            )
        check_choice(quantize, "quantize", ("round", "truncate"))
        self.logos = list(logos)
        self.weight_range = (a, b)
        self.quantize = quantize
        self._rng = as_generator(seed)
        self.last_: Stego | None = None

    def _fit(self, logo: Logo, H: int, W: int) -> Logo:
        h, w = logo.mask.shape
        if h <= H and w <= W:
            return logo
        from PIL import Image

        scale = min(H / h, W / w)
        size = (max(1, int(w * scale)), max(1, int(h * scale)))
        rgb = np.asarray(Image.fromarray(logo.rgb).resize(size, Image.Resampling.BILINEAR))
        mask = np.asarray(Image.fromarray(logo.mask).resize(size, Image.Resampling.NEAREST))
        if not mask.any():
            mask = np.ones_like(mask)
        return Logo(rgb, mask, logo.name)

    def __call__(self, img):
        """Watermark one image (PIL or CHW tensor); returns the same type."""
        kind = type(img).__module__.split(".")[0]
        if kind == "torch":
            import torch

            if img.ndim != 3 or img.shape[0] != 3:
                raise ValueError(
                    f"`img` tensor must be CHW with 3 channels, got {tuple(img.shape)}"
                )
            floating = img.is_floating_point()
            if floating:
                if bool(torch.isnan(img).any()):
                    raise ValueError("`img` tensor has NaN values")
                lo, hi = float(img.min()), float(img.max())
                if lo < 0 or hi > 1:
                    raise ValueError(
                        f"`img` float tensor must be in [0, 1], got values in [{lo:g}, {hi:g}] "
                        "(divide 0..255 values by 255, or pass a uint8 tensor)"
                    )
            arr = img.detach().cpu().permute(1, 2, 0).float().numpy()
            arr = np.clip(np.rint(arr * 255), 0, 255).astype(np.uint8) if floating else arr
        else:
            arr = pil_to_rgb(img, "img") if hasattr(img, "convert") else np.asarray(img)
        a, b = self.weight_range
        weight = round(float(self._rng.uniform(a, b)), 2)
        logo = self.logos[int(self._rng.integers(len(self.logos)))]
        logo = self._fit(logo, arr.shape[0], arr.shape[1])
        stego = blend_logo(
            np.ascontiguousarray(arr, dtype=np.uint8),
            logo.rgb,
            logo.mask,
            weight=weight,
            rng=self._rng,
            quantize=self.quantize,
        )
        self.last_ = stego
        if kind == "torch":
            out = torch.from_numpy(stego.image).permute(2, 0, 1).to(img.device)
            return (out.float() / 255).to(img.dtype) if floating else out.to(img.dtype)
        if not hasattr(img, "convert"):
            return stego.image
        from PIL import Image

        out_img = Image.fromarray(stego.image)
        if img.mode == "L":
            return out_img.convert("L")
        if img.mode == "RGBA":
            out_img.putalpha(img.getchannel("A"))
        return out_img

    def __repr__(self) -> str:
        return f"RandomLogoWatermark({len(self.logos)} logos, weight_range={self.weight_range})"
