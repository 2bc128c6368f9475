"""Keypoint skeletons: COCO-17 (humans) and AP-10K-17 (animals), with their OKS sigmas.

Sources: COCO keypoint format (Lin et al. 2014; cocoapi ``person_keypoints`` categories) and
AP-10K (Yu et al., NeurIPS 2021 Datasets track; sigmas from mmpose's ``ap10k.py`` dataset
config, adapted from COCO because the AP-10K paper gives none).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Skeleton", "COCO17", "AP10K17", "get_skeleton", "SKELETONS"]


@dataclass(frozen=True)
class Skeleton:
    r"""A named keypoint layout: keypoint names, limbs and per-keypoint OKS sigmas.

    Parameters
    ----------
    name : str
        Identifier (``"coco17"``, ``"ap10k17"``); also selects the keypoint-type embedding
        table of :class:`unimc.ConditionTokenizer` (same K, different semantics).
    keypoints : tuple of str, length K
        Keypoint names in annotation order.
    limbs : tuple of (int, int)
        Pairs of 0-based keypoint indices joined by a limb (drawn by ``render_skeleton``).
    sigmas : tuple of float, length K
        OKS sigmas $\sigma_k$ (COCO convention: already divided by 10).

    Raises
    ------
    ValueError
        If `sigmas` and `keypoints` differ in length, a sigma is not positive, or a limb names a
        keypoint index outside ``[0, K)``.
    """

    name: str
    keypoints: tuple[str, ...]
    limbs: tuple[tuple[int, int], ...]
    sigmas: tuple[float, ...] = field(repr=False)

    def __post_init__(self) -> None:
        k = len(self.keypoints)
        if k == 0:
            raise ValueError("`keypoints` must not be empty")
        if len(self.sigmas) != k:
            raise ValueError(f"`sigmas` has {len(self.sigmas)} entries for {k} keypoints")
        if not all(np.isfinite(s) and s > 0 for s in self.sigmas):
            raise ValueError("`sigmas` must be finite and > 0")
        for a, b in self.limbs:
            if not (0 <= a < k and 0 <= b < k):
                raise ValueError(f"`limbs` entry ({a}, {b}) is outside [0, {k})")

    @property
    def num_keypoints(self) -> int:
        """Number of keypoints K."""
        return len(self.keypoints)

    def sigma_array(self) -> np.ndarray:
        """The sigmas as a float64 array of shape ``[K]`` (for ``keypoint_ap``)."""
        return np.asarray(self.sigmas, dtype=np.float64)


_COCO_LIMBS_1 = [
    (16, 14),
    (14, 12),
    (17, 15),
    (15, 13),
    (12, 13),
    (6, 12),
    (7, 13),
    (6, 7),
    (6, 8),
    (7, 9),
    (8, 10),
    (9, 11),
    (2, 3),
    (1, 2),
    (1, 3),
    (2, 4),
    (3, 5),
    (4, 6),
    (5, 7),
]
_AP10K_LIMBS_1 = [
    (1, 2),
    (1, 3),
    (2, 3),
    (3, 4),
    (4, 5),
    (4, 6),
    (6, 7),
    (7, 8),
    (4, 9),
    (9, 10),
    (10, 11),
    (5, 12),
    (12, 13),
    (13, 14),
    (5, 15),
    (15, 16),
    (16, 17),
]

#: COCO-17 human skeleton; sigmas from cocoapi ``COCOeval.Params.setKpParams``.
COCO17 = Skeleton(
    name="coco17",
    keypoints=(
        "nose",
        "left_eye",
        "right_eye",
        "left_ear",
        "right_ear",
        "left_shoulder",
        "right_shoulder",
        "left_elbow",
        "right_elbow",
        "left_wrist",
        "right_wrist",
        "left_hip",
        "right_hip",
        "left_knee",
        "right_knee",
        "left_ankle",
        "right_ankle",
    ),
    limbs=tuple((a - 1, b - 1) for a, b in _COCO_LIMBS_1),
    sigmas=tuple(
        s / 10.0
        for s in (
            0.26,
            0.25,
            0.25,
            0.35,
            0.35,
            0.79,
            0.79,
            0.72,
            0.72,
            0.62,
            0.62,
            1.07,
            1.07,
            0.87,
            0.87,
            0.89,
            0.89,
        )
    ),
)

#: AP-10K-17 animal skeleton; sigmas from mmpose ``configs/_base_/datasets/ap10k.py``.
AP10K17 = Skeleton(
    name="ap10k17",
    keypoints=(
        "left_eye",
        "right_eye",
        "nose",
        "neck",
        "root_of_tail",
        "left_shoulder",
        "left_elbow",
        "left_front_paw",
        "right_shoulder",
        "right_elbow",
        "right_front_paw",
        "left_hip",
        "left_knee",
        "left_back_paw",
        "right_hip",
        "right_knee",
        "right_back_paw",
    ),
    limbs=tuple((a - 1, b - 1) for a, b in _AP10K_LIMBS_1),
    sigmas=(
        0.025,
        0.025,
        0.026,
        0.035,
        0.035,
        0.079,
        0.072,
        0.062,
        0.079,
        0.072,
        0.062,
        0.107,
        0.087,
        0.089,
        0.107,
        0.087,
        0.089,
    ),
)

#: The built-in skeletons by name.
SKELETONS: dict[str, Skeleton] = {"coco17": COCO17, "ap10k17": AP10K17}


def get_skeleton(name: str) -> Skeleton:
    """Return a built-in skeleton by name.

    Parameters
    ----------
    name : {"coco17", "ap10k17"}
        Skeleton name (case-insensitive; ``"coco"`` and ``"ap10k"`` are accepted too).

    Returns
    -------
    Skeleton

    Raises
    ------
    ValueError
        If `name` is not a known skeleton.
    """
    if not isinstance(name, str):
        raise TypeError(f"`name` must be a str, got {type(name).__name__}")
    key = name.lower().replace("-", "").replace("_", "")
    key = {"coco": "coco17", "ap10k": "ap10k17"}.get(key, key)
    if key not in SKELETONS:
        raise ValueError(f"`name` must be one of {sorted(SKELETONS)}; got {name!r}")
    return SKELETONS[key]
