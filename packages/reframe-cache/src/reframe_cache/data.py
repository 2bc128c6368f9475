r"""Real frame sequences: video clips read with OpenCV, and the ×2 super-resolution degradation.

Axis letters: T frames, C channels (RGB), H height, W width.

The reproduce reads Debian ``opencv-doc``'s rendered CG clip ``Megamind.avi`` (270 frames, 24 fps,
shot cuts) and the static-camera ``vtest.avi`` (795 frames) (spec §4).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from icml25_core import check_scalar, check_tensor

__all__ = ["video_frames", "opencv_sample", "degrade_x2", "OPENCV_DATA"]

#: Where Debian's opencv-doc puts its example data (overridable with REFRAME_OPENCV_DATA).
OPENCV_DATA = Path("/usr/share/doc/opencv-doc/examples/data")


def opencv_sample(name: str) -> Path:
    """Path of a file of Debian ``opencv-doc``'s example data (``Megamind.avi``, ``vtest.avi``).

    Parameters
    ----------
    name : str
        File name inside ``examples/data``.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    FileNotFoundError
        If the file is missing, with the ``apt-get install opencv-doc`` line.
    """
    if not isinstance(name, str) or not name or "/" in name:
        raise ValueError(f"`name` must be a file name such as 'Megamind.avi', got {name!r}")
    root = Path(os.environ.get("REFRAME_OPENCV_DATA", OPENCV_DATA))
    for candidate in (root / name, root / (name + ".gz")):
        if candidate.exists():
            if candidate.suffix == ".gz":
                raise FileNotFoundError(f"{candidate} is gzipped; gunzip it first")
            return candidate
    raise FileNotFoundError(
        f"{root / name} not found: install Debian's example data with "
        "`apt-get install opencv-doc` (or set REFRAME_OPENCV_DATA to its examples/data folder)"
    )


def video_frames(path, size: tuple[int, int], n: int | None = None, start: int = 0) -> torch.Tensor:
    """Decode frames of a video with OpenCV, as RGB float32 in [0, 1], resized with INTER_AREA.

    Parameters
    ----------
    path : str or Path
        A video file OpenCV can read.
    size : (int, int)
        Output (H, W), e.g. (96, 128) for the reproduce's 128×96 frames.
    n : int, optional
        Number of frames (default: all to the end).
    start : int, default=0
        First frame index.

    Returns
    -------
    Tensor, shape [T, 3, H, W], float32

    Raises
    ------
    ImportError
        Without the ``[video]`` extra.
    FileNotFoundError
        If `path` does not exist or OpenCV cannot open it.
    ValueError
        For a bad `size`, `n` or `start`, or when no frame could be read.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"`path` {path} does not exist")
    if not (isinstance(size, tuple | list) and len(size) == 2):
        raise ValueError(f"`size` must be (H, W), got {size!r}")
    for s in size:
        check_scalar(s, "size", kind=int, low=1)
    check_scalar(start, "start", kind=int, low=0)
    if n is not None:
        check_scalar(n, "n", kind=int, low=1)
    try:
        import cv2
    except ImportError as err:
        raise ImportError("video_frames needs OpenCV: pip install 'reframe-cache[video]'") from err
    cap = cv2.VideoCapture(str(path))
    if not cap.isOpened():
        raise FileNotFoundError(f"OpenCV cannot open `path` {path}")
    frames: list[np.ndarray] = []
    try:
        index = 0
        while n is None or len(frames) < n:
            ok, bgr = cap.read()
            if not ok:
                break
            if index >= start:
                small = cv2.resize(bgr, (size[1], size[0]), interpolation=cv2.INTER_AREA)
                frames.append(cv2.cvtColor(small, cv2.COLOR_BGR2RGB))
            index += 1
    finally:
        cap.release()
    if not frames:
        raise ValueError(f"no frame read from {path} at `start` {start}")
    arr = np.stack(frames).astype(np.float32) / 255.0
    return torch.from_numpy(arr).permute(0, 3, 1, 2).contiguous()


def degrade_x2(frames: torch.Tensor) -> torch.Tensor:
    """The ×2 super-resolution input: antialiased bilinear ×½, then bilinear ×2 (spec §4).

    Parameters
    ----------
    frames : Tensor, shape [T, C, H, W], floating point (H, W even)

    Returns
    -------
    Tensor, shape [T, C, H, W], same dtype
    """
    check_tensor(frames, "frames", ndim=4)
    if frames.shape[-1] % 2 or frames.shape[-2] % 2:
        raise ValueError(f"`frames` needs even H and W, got {tuple(frames.shape[-2:])}")
    low = F.interpolate(
        frames, scale_factor=0.5, mode="bilinear", antialias=True, align_corners=False
    )
    return F.interpolate(low, size=frames.shape[-2:], mode="bilinear", align_corners=False)


def cornell_box_sequence(
    n: int,
    size: int = 96,
    spp: int = 4,
    *,
    deg_per_frame: float = 0.5,
    seed: int = 0,
    reference_spp: int = 64,
    cache: str | Path | None = None,
) -> dict[str, torch.Tensor]:
    """Path-trace an orbiting-camera Cornell box with mitsuba: noisy colour, G-buffers, target.

    Parameters
    ----------
    n : int
        Frames (>= 1).
    size : int, default=96
        Square frame side in pixels.
    spp : int, default=4
        Samples per pixel of the noisy colour and the AOVs.
    deg_per_frame : float, default=0.5
        Camera rotation about the box's vertical axis per frame, in degrees.
    seed : int, default=0
        Sampler seed of frame 0 (frame t uses ``seed + t``; the reference ``seed + 10_000 + t``).
    reference_spp : int, default=64
        Samples per pixel of the target.
    cache : str or Path, optional
        An ``.npz`` file: loaded when it exists (same arguments), written otherwise.

    Returns
    -------
    dict of Tensor
        ``color`` [T, 3, H, W] (linear radiance, noisy), ``albedo`` [T, 3, H, W], ``normal``
        [T, 3, H, W] (shading normal), ``depth`` [T, 1, H, W] and ``reference`` [T, 3, H, W],
        float32.

    Raises
    ------
    ImportError
        Without the ``[render]`` extra (``pip install 'reframe-cache[render]'``).
    ValueError
        For bad counts or sizes.

    Notes
    -----
    Source: spec §4 ``--full`` (mitsuba 3 ``scalar_rgb``, ``mi.cornell_box()``, 4-spp colour plus
    albedo/normal/depth AOVs by mitsuba's ``aov`` integrator, 64-spp target).
    """
    import math

    check_scalar(n, "n", kind=int, low=1)
    check_scalar(size, "size", kind=int, low=8)
    check_scalar(spp, "spp", kind=int, low=1)
    check_scalar(reference_spp, "reference_spp", kind=int, low=1)
    check_scalar(deg_per_frame, "deg_per_frame")
    key = np.array([n, size, spp, deg_per_frame, seed, reference_spp], dtype=np.float64)
    if cache is not None and Path(cache).exists():
        stored = np.load(cache)
        if np.array_equal(stored["key"], key):
            return {k: torch.from_numpy(stored[k]) for k in stored.files if k != "key"}
    try:
        import mitsuba as mi
    except ImportError as err:
        raise ImportError(
            "cornell_box_sequence needs mitsuba: pip install 'reframe-cache[render]'"
        ) from err
    mi.set_variant("scalar_rgb")
    out: dict[str, list[np.ndarray]] = {k: [] for k in ("color", "albedo", "normal", "depth")}
    out["reference"] = []
    for t in range(n):
        angle = math.radians(deg_per_frame * t)
        scene = mi.cornell_box()
        scene["sensor"]["film"]["width"] = scene["sensor"]["film"]["height"] = size
        origin = [3.9 * math.sin(angle), 0.0, 3.9 * math.cos(angle)]
        scene["sensor"]["to_world"] = mi.ScalarTransform4f().look_at(
            origin=origin, target=[0, 0, 0], up=[0, 1, 0]
        )
        path = scene["integrator"]
        scene["integrator"] = {"type": "aov", "aovs": "albedo:albedo,nn:sh_normal,dd:depth",
                               "integrator": path}  # fmt: skip
        loaded = mi.load_dict(scene)
        image = np.array(mi.render(loaded, spp=spp, seed=mi.UInt32(seed + t)), dtype=np.float32)
        # channels of the aov integrator's film (mitsuba 3.9): R, G, B of the nested path
        # tracer, then albedo (3), nn = shading normal (3), dd = depth (1)
        color, albedo = image[..., 0:3], image[..., 3:6]
        normal, depth = image[..., 6:9], image[..., 9:10]
        scene["integrator"] = path
        reference = np.array(
            mi.render(mi.load_dict(scene), spp=reference_spp, seed=mi.UInt32(seed + 10_000 + t)),
            dtype=np.float32,
        )[..., :3]
        for name, arr in (("color", color), ("albedo", albedo), ("normal", normal),
                          ("depth", depth), ("reference", reference)):  # fmt: skip
            out[name].append(np.ascontiguousarray(arr.transpose(2, 0, 1)))
    result = {k: np.stack(v) for k, v in out.items()}
    if cache is not None:
        Path(cache).parent.mkdir(parents=True, exist_ok=True)
        arrays: dict[str, Any] = {"key": key, **result}
        np.savez_compressed(cache, **arrays)
    return {k: torch.from_numpy(v) for k, v in result.items()}
