"""Synthetic scenes of overlapping stick-figure humans and animals (the reproduce's input).

OURS, not the paper's: HAIG-2.9M and UniMC's weights are unavailable, so the reproduce tests the
mechanism behind the claim (tokens bind keypoints to instances and classes; a class-agnostic
skeleton image does not) on 32 x 32 scenes: red = human (COCO-17 template), green = animal
(AP-10K-17 quadruped), random scale, shift, flip and joint jitter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

from .skeletons import AP10K17, COCO17

__all__ = ["Scene", "make_scene", "CLASS_COLORS", "HUMAN", "ANIMAL"]

#: Class index of humans.
HUMAN = 0
#: Class index of animals.
ANIMAL = 1
#: Rendering colour of each class (RGB).
CLASS_COLORS = {HUMAN: (255, 0, 0), ANIMAL: (0, 255, 0)}
_SKEL = {HUMAN: COCO17, ANIMAL: AP10K17}

# unit templates, x right, y down; height 1 (human) / width 1 (animal), centred at (0, 0.5)
_HUMAN_T = np.array(
    [[0, .08], [.03, .05], [-.03, .05], [.06, .07], [-.06, .07], [.15, .22], [-.15, .22],
     [.2, .4], [-.2, .4], [.22, .55], [-.22, .55], [.1, .55], [-.1, .55], [.11, .77],
     [-.11, .77], [.12, .98], [-.12, .98]]
)  # fmt: skip
_ANIMAL_T = np.array(
    [[-.42, .05], [-.38, .03], [-.5, .12], [-.3, .18], [.4, .2], [-.25, .3], [-.27, .45],
     [-.28, .6], [-.2, .3], [-.2, .45], [-.19, .6], [.35, .3], [.33, .45], [.34, .6],
     [.4, .3], [.41, .45], [.42, .6]]
)  # fmt: skip


@dataclass
class Scene:
    """One synthetic scene.

    Attributes
    ----------
    image : ndarray, shape [S, S, 3], uint8
        Coloured skeletons on black.
    classes : ndarray, shape [N], int64
        0 human, 1 animal.
    boxes : ndarray, shape [N, 4], float64
        xyxy, pixels (box of the keypoints, padded by 1 px, clipped to the image).
    keypoints : ndarray, shape [N, 17, 3], float64
        ``(x, y, v)`` pixels, v = 2.
    limb_masks : ndarray, shape [N, S, S], bool
        Pixels of each instance's own limbs (drawn alone).
    mixed_overlap : bool
        Whether instances of different classes have overlapping boxes.
    """

    image: np.ndarray
    classes: np.ndarray
    boxes: np.ndarray
    keypoints: np.ndarray
    limb_masks: np.ndarray
    mixed_overlap: bool


def _instance(cls: int, rng: np.random.Generator, size: int, centre=None) -> np.ndarray:
    t = _HUMAN_T if cls == HUMAN else _ANIMAL_T
    scale = rng.uniform(0.4, 0.6) * size
    pts = (t - [0, 0.5]) * scale
    if cls == ANIMAL and rng.random() < 0.5:
        pts[:, 0] = -pts[:, 0]
    pts = pts + rng.normal(0, 0.03 * scale, pts.shape)
    if centre is None:
        centre = rng.uniform(0.3 * size, 0.7 * size, 2)
    pts = pts + centre
    return np.clip(pts, 0, size - 1)


def _boxes_overlap(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1]))


def make_scene(
    rng: np.random.Generator, size: int = 32, *, overlap_mixed: bool | None = None
) -> Scene:
    """Draw one scene of 1-3 instances.

    Parameters
    ----------
    rng : numpy.random.Generator
        Random source.
    size : int, default=32
        Image side, pixels.
    overlap_mixed : bool, optional
        Force a human and an animal with nearby centres (True) or draw freely (None / False).

    Returns
    -------
    Scene
    """
    if overlap_mixed:
        n = int(rng.integers(2, 4))
        first = int(rng.integers(0, 2))
        classes = [first, 1 - first] + [int(rng.integers(0, 2)) for _ in range(n - 2)]
        c0 = rng.uniform(0.35 * size, 0.65 * size, 2)
        centres = [c0, c0 + rng.uniform(-0.15 * size, 0.15 * size, 2)] + [None] * (n - 2)
    else:
        n = int(rng.integers(1, 4))
        classes = [int(rng.integers(0, 2)) for _ in range(n)]
        centres = [None] * n
    pts = [_instance(c, rng, size, ce) for c, ce in zip(classes, centres, strict=True)]
    kps = np.zeros((n, 17, 3))
    boxes = np.zeros((n, 4))
    masks = np.zeros((n, size, size), dtype=bool)
    img = Image.new("RGB", (size, size))
    draw = ImageDraw.Draw(img)
    order = rng.permutation(n)
    for i in order:
        p = pts[i]
        kps[i, :, :2] = p
        kps[i, :, 2] = 2
        boxes[i] = np.clip(
            [p[:, 0].min() - 1, p[:, 1].min() - 1, p[:, 0].max() + 1, p[:, 1].max() + 1], 0, size
        )
        one = Image.new("L", (size, size))
        d1 = ImageDraw.Draw(one)
        for a, b in _SKEL[classes[i]].limbs:
            seg = [(p[a, 0], p[a, 1]), (p[b, 0], p[b, 1])]
            draw.line(seg, fill=CLASS_COLORS[classes[i]], width=1)
            d1.line(seg, fill=255, width=1)
        masks[i] = np.asarray(one) > 0
    mixed = any(
        classes[i] != classes[j] and _boxes_overlap(boxes[i], boxes[j])
        for i in range(n)
        for j in range(i + 1, n)
    )
    return Scene(np.array(img), np.array(classes, dtype=np.int64), boxes, kps, masks, mixed)
