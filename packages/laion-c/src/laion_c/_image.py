"""Image conversion and the official preprocessing, written out with Pillow.

The official pipeline (``distortions/apply_distortions.py``) uses torchvision's ``Resize`` and
``CenterCrop`` on PIL images. torchvision is not a dependency (DECISIONS 8), so both are written
out here exactly as torchvision 0.2x does them for PIL input:

* ``Resize(s)``: the shorter side becomes ``s``, the longer ``int(s * long / short)``;
  ``PIL.Image.resize`` with ``BILINEAR`` (Pillow's resize is antialiased); no-op when the size
  already matches (``torchvision.transforms.functional.resize``).
* ``Resize((h, w))``: ``PIL.Image.resize((w, h), BILINEAR)``.
* ``CenterCrop(c)``: top = ``int(round((H - c) / 2))``, left = ``int(round((W - c) / 2))``
  (``torchvision.transforms.functional.center_crop``).
* ``to_pil_image`` of a float tensor: ``(x * 255).byte()`` (truncation); ``to_tensor``:
  ``uint8 / 255`` as float32.

PIL images of every mode go through :func:`to_rgb`. ``Image.convert("RGB")`` clips the
high-bit modes (16-bit ``I;16*``, 32-bit ``I``, float ``F``) to 0..255 instead of scaling them,
so a 16-bit photo would turn white; :func:`to_rgb` rescales those to 8 bits first and refuses
what it cannot map faithfully.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

MIN_SIDE = 32


def resize_shorter(image: Image.Image, size: int) -> Image.Image:
    """torchvision ``Resize(size)`` for a PIL image (shorter side -> `size`, bilinear)."""
    w, h = image.size
    new = (size, int(size * h / w)) if w <= h else (int(size * w / h), size)
    return image if new == (w, h) else image.resize(new, Image.Resampling.BILINEAR)


def resize_exact(image: Image.Image, height: int, width: int) -> Image.Image:
    """torchvision ``Resize((height, width))`` for a PIL image (bilinear)."""
    if image.size == (width, height):
        return image
    return image.resize((width, height), Image.Resampling.BILINEAR)


def crop_box(height: int, width: int, size: int) -> tuple[int, int]:
    """``(top, left)`` of torchvision's ``CenterCrop(size)`` on an ``height x width`` image."""
    return round((height - size) / 2.0), round((width - size) / 2.0)


def center_crop(image: Image.Image, size: int) -> Image.Image:
    """torchvision ``CenterCrop(size)`` for a PIL image at least `size` on each side."""
    w, h = image.size
    if (w, h) == (size, size):
        return image
    top, left = crop_box(h, w, size)
    return image.crop((left, top, left + size, top + size))


_SIXTEEN_BIT = ("I;16", "I;16L", "I;16B", "I;16N")


def to_rgb(image: Image.Image, name: str = "img") -> Image.Image:
    """`image` as an 8-bit RGB image, with the high-bit modes scaled to 8 bits, not clipped.

    * 8-bit modes (``L``, ``P``, ``RGBA``, ``CMYK``, ...): ``Image.convert("RGB")`` (alpha
      dropped).
    * 16-bit grey (``I;16``, ``I;16L``, ``I;16B``, ``I;16N``) and 32-bit integer ``I`` (how
      Pillow decodes 16-bit PNG / TIFF files): values in [0, 65535], mapped to
      ``round(v * 255 / 65535) = round(v / 257)`` (so ``257 * g`` becomes ``g`` exactly, the
      usual 8 <-> 16 bit correspondence). ``I`` values outside [0, 65535] are refused.
    * float ``F``: values in [0, 1] are read as intensities in [0, 1] and mapped to
      ``round(255 v)``; otherwise values in [0, 255] are rounded as they are; anything else
      (negative, above 255, NaN/inf) is refused. A float image whose values all lie in [0, 1]
      is therefore always read as [0, 1].

    Raises
    ------
    ValueError
        If the mode's values are out of the ranges above, or Pillow cannot convert the mode to
        RGB; the message names `name` and the mode.
    """
    mode = image.mode
    if mode in _SIXTEEN_BIT or mode in ("I", "F"):
        values = np.asarray(image)
        if mode == "F":
            values = values.astype(np.float64)
            finite = bool(np.isfinite(values).all())
            low = float(values.min()) if finite else float("nan")
            high = float(values.max()) if finite else float("nan")
            if finite and low >= 0 and high <= 1:
                grey = np.rint(values * 255)
            elif finite and low >= 0 and high <= 255:
                grey = np.rint(values)
            else:
                raise ValueError(
                    f"`{name}`: a float (mode 'F') image must hold values in [0, 1] or "
                    f"[0, 255], got [{low:.4g}, {high:.4g}]"
                )
        else:
            values = values.astype(np.int64)
            low, high = int(values.min()), int(values.max())
            if low < 0 or high > 65535:
                raise ValueError(
                    f"`{name}`: a {mode!r} image is read as 16-bit (values in [0, 65535]), "
                    f"got [{low}, {high}]"
                )
            grey = np.rint(values / 257.0)
        return Image.fromarray(grey.astype(np.uint8)).convert("RGB")
    try:
        return image.convert("RGB")
    except ValueError as error:
        raise ValueError(
            f"`{name}`: cannot convert a mode {mode!r} image to RGB ({error})"
        ) from None


def read_rgb(path, name: str = "path") -> Image.Image:
    """The image file `path`, decoded and converted to RGB.

    Raises
    ------
    FileNotFoundError
        If `path` does not exist.
    ValueError
        If Pillow cannot read it as an image (truncated, not an image) or :func:`to_rgb` refuses
        its mode; the message names `name` and the file.
    """
    try:
        with Image.open(path) as image:
            image.load()
    except FileNotFoundError:
        raise
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as error:
        raise ValueError(f"`{name}`: {path} is not an image Pillow can read ({error})") from None
    try:
        return to_rgb(image, name)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def _torch():
    import torch

    return torch


def _is_tensor(img) -> bool:
    torch = _torch()
    return isinstance(img, torch.Tensor)


def check_rgb_array(img, name: str = "img") -> np.ndarray:
    """`img` as a C-contiguous ``(H, W, 3)`` uint8 array with both sides >= 32.

    Raises
    ------
    ValueError
        If it is not uint8, not ``(H, W, 3)`` or a side is below 32 pixels.
    """
    if img.dtype != np.uint8:
        raise ValueError(f"`{name}` must be a uint8 (H, W, 3) array, got dtype {img.dtype}")
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"`{name}` must be a uint8 (H, W, 3) array, got shape {img.shape}")
    if min(img.shape[:2]) < MIN_SIDE:
        raise ValueError(
            f"`{name}` must be at least {MIN_SIDE} x {MIN_SIDE} pixels, got {img.shape[:2]}"
        )
    return np.ascontiguousarray(img)


def tensor_to_arrays(img, name: str = "img") -> list[np.ndarray]:
    """A float ``(3, H, W)`` or ``(B, 3, H, W)`` tensor in [0, 1] -> uint8 HWC arrays.

    ``to_pil_image`` semantics: ``(x * 255)`` truncated to uint8.

    Raises
    ------
    ValueError
        If the tensor is not floating, has the wrong shape, holds NaN/inf or values outside
        [0, 1], or is empty.
    """
    torch = _torch()
    if not img.is_floating_point():
        raise ValueError(f"`{name}` must be a float tensor in [0, 1], got dtype {img.dtype}")
    if img.ndim not in (3, 4) or img.shape[-3] != 3:
        raise ValueError(
            f"`{name}` must have shape (3, H, W) or (B, 3, H, W), got {tuple(img.shape)}"
        )
    if img.numel() == 0:
        raise ValueError(f"`{name}` must not be empty, got shape {tuple(img.shape)}")
    if not torch.isfinite(img).all():
        raise ValueError(f"`{name}` holds NaN or infinity")
    if img.min() < 0 or img.max() > 1:
        raise ValueError(f"`{name}` must lie in [0, 1], got [{img.min():.3g}, {img.max():.3g}]")
    batch = img.detach().cpu().reshape(-1, *img.shape[-3:])
    arrays = batch.mul(255).byte().permute(0, 2, 3, 1).contiguous().numpy()
    return [check_rgb_array(a, name) for a in arrays]


def arrays_to_tensor(arrays: list[np.ndarray], like):
    """uint8 HWC arrays -> a tensor shaped like `like`, of its dtype and device
    (``to_tensor``: float32 ``/ 255``, then cast to ``like.dtype``)."""
    torch = _torch()
    batch = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2).float().div(255)
    batch = batch.to(device=like.device, dtype=like.dtype)
    return batch[0] if like.ndim == 3 else batch


def apply(img, func, name: str = "img"):
    """Run ``func(uint8 HWC array) -> uint8 HWC array`` on `img`, returning the input's type.

    PIL images are converted to RGB by :func:`to_rgb`; a batched tensor runs `func` once per
    image, in order.

    Raises
    ------
    TypeError
        If `img` is none of PIL image, numpy array, torch tensor.
    """
    if isinstance(img, Image.Image):
        return Image.fromarray(func(check_rgb_array(np.asarray(to_rgb(img, name)), name)))
    if isinstance(img, np.ndarray):
        return func(check_rgb_array(img, name))
    if _is_tensor(img):
        return arrays_to_tensor([func(a) for a in tensor_to_arrays(img, name)], img)
    raise TypeError(
        f"`{name}` must be a PIL image, a uint8 (H, W, 3) numpy array or a float tensor, "
        f"got {type(img).__name__}"
    )
