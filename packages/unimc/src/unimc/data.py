"""COCO-keypoint records (HAIG-style), normalisation and padding into batches.

HAIG-2.9M (UniMC's data set, not released) pairs COCO-style instance annotations (class, box,
keypoints) with a global ``caption`` and per-instance ``instance_caption``; this module reads
that schema (the captions are optional) and pads variable instance counts with masks (ours).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = ["load_coco_keypoints", "normalize", "collate"]


def load_coco_keypoints(path_or_dict, *, class_map: Mapping[int, int]) -> list[dict[str, Any]]:
    """Read COCO keypoint annotations into one record per image.

    Parameters
    ----------
    path_or_dict : str, Path or dict
        A COCO keypoint JSON file or its parsed dict.
    class_map : mapping of int to int
        COCO ``category_id`` -> class index of the tokenizer; annotations of other categories
        are skipped.

    Returns
    -------
    list of dict
        Per image: ``image_id``, ``file_name``, ``width``, ``height``, ``caption`` (or ""),
        ``classes`` int64 [N], ``boxes`` float64 [N, 4] (xyxy, pixels), ``keypoints`` float64
        [N, K, 3] (pixels), ``instance_captions`` list of str.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        If the dict lacks ``images`` / ``annotations``, `class_map` is empty, an image lacks
        ``id`` / ``width`` / ``height``, an annotation lacks ``image_id`` / ``category_id``
        (or, for a mapped category, ``bbox`` / ``keypoints``), names an image that is not in
        ``images``, has a keypoint list whose length is not a multiple of 3 or a bbox with a
        negative size, or annotations of one image have different K.
    """
    if isinstance(path_or_dict, str | Path):
        data = json.loads(Path(path_or_dict).read_text())
    elif isinstance(path_or_dict, Mapping):
        data = path_or_dict
    else:
        raise TypeError("`path_or_dict` must be a path or a COCO dict")
    if not isinstance(class_map, Mapping) or not class_map:
        raise ValueError("`class_map` must be a non-empty mapping category_id -> class index")
    for key in ("images", "annotations"):
        if key not in data:
            raise ValueError(f"`path_or_dict` lacks the {key!r} list")
    for im in data["images"]:
        lacks = [key for key in ("id", "width", "height") if key not in im]
        if lacks:
            raise ValueError(f"`path_or_dict`: image {im.get('id', '?')} lacks {lacks}")
    by_img: dict[int, list[Mapping[str, Any]]] = {int(im["id"]): [] for im in data["images"]}
    all_k = set()
    for a in data["annotations"]:
        lacks = [key for key in ("image_id", "category_id") if key not in a]
        if lacks:
            raise ValueError(f"`path_or_dict`: annotation {a.get('id', '?')} lacks {lacks}")
        if int(a["category_id"]) not in class_map:
            continue
        aid = a.get("id", "?")
        lacks = [key for key in ("bbox", "keypoints") if key not in a]
        if lacks:
            raise ValueError(f"`path_or_dict`: annotation {aid} lacks {lacks}")
        if int(a["image_id"]) not in by_img:
            raise ValueError(
                f"`path_or_dict`: annotation {aid} names image_id {a['image_id']}, which is "
                "not in `images`"
            )
        if len(a["keypoints"]) % 3:
            raise ValueError(
                f"`path_or_dict`: annotation {aid} has {len(a['keypoints'])} keypoint values, "
                "not a multiple of 3 (x, y, v)"
            )
        bb = np.asarray(a["bbox"], dtype=np.float64)
        if bb.shape != (4,) or not np.isfinite(bb).all() or (bb[2:] < 0).any():
            raise ValueError(
                f"`path_or_dict`: annotation {aid} needs a bbox [x, y, w, h] of finite values "
                f"with w, h >= 0; got {a['bbox']!r}"
            )
        by_img[int(a["image_id"])].append(a)
        all_k.add(len(a["keypoints"]) // 3)
    # images without instances get the file's K (so that collate keeps 1 + K tokens a slot)
    k_file = all_k.pop() if len(all_k) == 1 else 0
    out = []
    for im in data["images"]:
        anns = by_img[int(im["id"])]
        ks = {len(a["keypoints"]) // 3 for a in anns}
        if len(ks) > 1:
            raise ValueError(f"image {im['id']}: annotations with different K {sorted(ks)}")
        k = ks.pop() if ks else k_file
        boxes = np.array([a["bbox"] for a in anns], dtype=np.float64).reshape(-1, 4)
        boxes[:, 2:] += boxes[:, :2]  # xywh -> xyxy
        out.append(
            {
                "image_id": int(im["id"]),
                "file_name": im.get("file_name", ""),
                "width": int(im["width"]),
                "height": int(im["height"]),
                "caption": im.get("caption", ""),
                "classes": np.array(
                    [class_map[int(a["category_id"])] for a in anns], dtype=np.int64
                ),
                "boxes": boxes,
                "keypoints": np.array([a["keypoints"] for a in anns], dtype=np.float64).reshape(
                    len(anns), k, 3
                ),
                "instance_captions": [a.get("instance_caption", "") for a in anns],
            }
        )
    return out


def normalize(boxes, keypoints, size, *, clip: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Divide pixel boxes and keypoints by the image size, giving coordinates in [0, 1].

    Parameters
    ----------
    boxes : array, shape [N, 4], float
        xyxy, pixels.
    keypoints : array, shape [N, K, 3], float
        ``(x, y, v)``, pixels; v is kept.
    size : (int, int)
        ``(width, height)`` of the image, pixels.
    clip : bool, default=False
        Clip to [0, 1] (otherwise out-of-image coordinates stay out and the tokenizer rejects
        them).

    Returns
    -------
    (ndarray [N, 4], ndarray [N, K, 3]), float64

    Raises
    ------
    ValueError
        On wrong shapes, NaN/inf or a non-positive size.
    """
    b = np.asarray(boxes, dtype=np.float64)
    k = np.asarray(keypoints, dtype=np.float64)
    if b.ndim != 2 or b.shape[1] != 4:
        raise ValueError(f"`boxes` must have shape [N, 4]; got {b.shape}")
    if k.ndim != 3 or k.shape[2] != 3 or k.shape[0] != b.shape[0]:
        raise ValueError(f"`keypoints` must have shape [{b.shape[0]}, K, 3]; got {k.shape}")
    if not (np.isfinite(b).all() and np.isfinite(k).all()):
        raise ValueError("`boxes` or `keypoints` contains NaN or inf")
    if len(size) != 2 or min(size) <= 0:
        raise ValueError(f"`size` must be (width, height) > 0; got {size!r}")
    w, h = float(size[0]), float(size[1])
    b = b / np.array([w, h, w, h])
    k = k.copy()
    k[..., 0] /= w
    k[..., 1] /= h
    if clip:
        b = b.clip(0, 1)
        k[..., :2] = k[..., :2].clip(0, 1)
    return b, k


def collate(
    samples: Sequence[Mapping[str, Any]], max_instances: int = 32
) -> dict[str, torch.Tensor]:
    """Pad per-image instances into a batch with an instance mask.

    Parameters
    ----------
    samples : sequence of dict
        Each with ``classes`` [N_i], ``boxes`` [N_i, 4] and ``keypoints`` [N_i, K, 3], already
        normalised (:func:`normalize`); K equal across samples.
    max_instances : int, default=32
        Cap on instances per image; extra instances are dropped (the first are kept).

    Returns
    -------
    dict
        ``classes`` int64 [B, N], ``boxes`` float32 [B, N, 4], ``keypoints`` float32
        [B, N, K, 3], ``instance_mask`` bool [B, N], N = the largest (capped) count.

    Raises
    ------
    ValueError
        If `samples` is empty, `max_instances` < 1, a sample lacks ``classes`` / ``boxes`` /
        ``keypoints``, or K / shapes disagree.
    TypeError
        If a sample's ``classes`` are not integers.

    Notes
    -----
    If no sample has an instance, K is read from the empty ``keypoints`` arrays' shape
    ``[0, K, 3]`` (what :func:`load_coco_keypoints` gives), else it is 0.
    """
    if not samples:
        raise ValueError("`samples` is empty")
    if isinstance(max_instances, bool) or not isinstance(max_instances, int) or max_instances < 1:
        raise ValueError(f"`max_instances` must be an int >= 1; got {max_instances!r}")
    ks: set[int] = set()
    k_empty: set[int] = set()
    for i, s in enumerate(samples):
        lacks = [key for key in ("classes", "boxes", "keypoints") if key not in s]
        if lacks:
            raise ValueError(f"`samples[{i}]` lacks {lacks}")
        kp = np.asarray(s["keypoints"])
        if kp.ndim != 3 or kp.shape[-1] != 3:
            raise ValueError(f"`samples`: keypoints must have shape [N, K, 3]; got {kp.shape}")
        (ks if kp.shape[0] else k_empty).add(kp.shape[1])
        c = np.asarray(s["classes"])
        if c.size and c.dtype.kind not in "iu":
            raise TypeError(
                f"`samples[{i}]`: classes must be integers (class indices); got dtype {c.dtype}"
            )
    if len(ks) > 1:
        raise ValueError(f"`samples` have different K {sorted(ks)}")
    k_empty.discard(0)
    # a batch of empty images: K from the empty arrays' shape ([0, K, 3]) when they carry it
    k = ks.pop() if ks else (k_empty.pop() if len(k_empty) == 1 else 0)
    n = max(1, min(max_instances, max(len(np.asarray(s["classes"])) for s in samples)))
    b = len(samples)
    classes = torch.zeros(b, n, dtype=torch.int64)
    boxes = torch.zeros(b, n, 4)
    kps = torch.zeros(b, n, k, 3)
    mask = torch.zeros(b, n, dtype=torch.bool)
    for i, s in enumerate(samples):
        c = np.asarray(s["classes"], dtype=np.int64)[:n]
        m = len(c)
        bx = np.asarray(s["boxes"], dtype=np.float32).reshape(-1, 4)[:n]
        if len(bx) != m:
            raise ValueError(f"`samples[{i}]`: {len(bx)} boxes for {m} classes")
        classes[i, :m] = torch.from_numpy(c)
        boxes[i, :m] = torch.from_numpy(bx)
        if m and k:
            kps[i, :m] = torch.from_numpy(np.asarray(s["keypoints"], dtype=np.float32)[:n])
        mask[i, :m] = True
    return {"classes": classes, "boxes": boxes, "keypoints": kps, "instance_mask": mask}
