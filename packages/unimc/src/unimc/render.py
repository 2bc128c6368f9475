"""Render skeletons as images: the skeleton-image condition that UniMC replaces (its baseline).

Drawing with Pillow; limbs are lines between labelled keypoints (v > 0). Colours are ours.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw

from .skeletons import Skeleton

__all__ = ["render_skeleton"]


def render_skeleton(
    keypoints,
    skeleton: Skeleton | Sequence[Skeleton],
    size: tuple[int, int],
    colors=None,
    *,
    width: int = 1,
    image: Image.Image | None = None,
) -> Image.Image:
    """Draw the limbs of each instance on a black RGB image.

    Parameters
    ----------
    keypoints : array, shape [N, K, 3], float
        ``(x, y, v)`` in pixels; limbs with an unlabelled end (v = 0) are not drawn.
    skeleton : Skeleton or sequence of Skeleton (one per instance)
        Limb layout(s).
    size : (int, int)
        ``(width, height)`` in pixels.
    colors : sequence of RGB tuples, optional
        One colour per instance; default white for all (class-agnostic, like a pose map).
    width : int, default=1
        Line width, pixels.
    image : PIL.Image, optional
        Draw onto this RGB image instead of a black one.

    Returns
    -------
    PIL.Image.Image
        Mode ``"RGB"``.

    Raises
    ------
    ValueError
        On wrong shapes, NaN/inf, a K different from the skeleton, a bad size, colours that
        are not RGB triples of ints in [0, 255], or a `width` < 1.
    """
    k = np.asarray(keypoints, dtype=np.float64)
    if k.ndim != 3 or k.shape[2] != 3:
        raise ValueError(f"`keypoints` must have shape [N, K, 3]; got {k.shape}")
    if not np.isfinite(k).all():
        raise ValueError("`keypoints` contains NaN or inf")
    sks = [skeleton] * len(k) if isinstance(skeleton, Skeleton) else list(skeleton)
    if len(sks) != len(k) or not all(isinstance(s, Skeleton) for s in sks):
        raise ValueError("`skeleton` must be a Skeleton or one Skeleton per instance")
    if len(size) != 2 or min(int(size[0]), int(size[1])) < 1:
        raise ValueError(f"`size` must be (width, height) >= 1; got {size!r}")
    cols = [(255, 255, 255)] * len(k) if colors is None else [tuple(c) for c in colors]
    if len(cols) != len(k):
        raise ValueError(f"`colors` must give one colour per instance ({len(k)})")
    for c in cols:
        if len(c) != 3 or not all(
            isinstance(v, int | np.integer) and not isinstance(v, bool) and 0 <= v <= 255 for v in c
        ):
            raise ValueError(f"`colors` must be RGB tuples of 3 ints in [0, 255]; got {c!r}")
    if isinstance(width, bool) or not isinstance(width, int | np.integer) or width < 1:
        raise ValueError(f"`width` must be an int >= 1; got {width!r}")
    img = Image.new("RGB", (int(size[0]), int(size[1]))) if image is None else image
    draw = ImageDraw.Draw(img)
    for inst, sk, col in zip(k, sks, cols, strict=True):
        if inst.shape[0] != sk.num_keypoints:
            raise ValueError(
                f"`keypoints` has K={inst.shape[0]}, skeleton {sk.name} {sk.num_keypoints}"
            )
        for a, b in sk.limbs:
            if inst[a, 2] > 0 and inst[b, 2] > 0:
                draw.line(
                    [(inst[a, 0], inst[a, 1]), (inst[b, 0], inst[b, 1])], fill=col, width=width
                )
    return img
