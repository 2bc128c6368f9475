r"""Pose metrics: OKS, COCO keypoint AP per class (through pycocotools), count error, FID/KID.

Sources: OKS and keypoint AP are pycocotools' ``COCOeval`` (``computeOks``, ``evaluate``,
``accumulate``, ``summarize``), called per category with that class's ``kpt_oks_sigmas``;
the evaluation protocol (a pose detector on generated images, AP against the input keypoints,
the count difference) follows HumanSD (Ju et al., ICCV 2023; ``utils/metrics``), which UniMC
shares a co-author with (unverified for UniMC). FID/KID are torchmetrics' with a user feature
extractor.
"""

from __future__ import annotations

import contextlib
import copy
import io
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "oks_matrix",
    "keypoint_ap",
    "KeypointAP",
    "area_from_keypoints",
    "count_error",
    "fid_kid",
    "STAT_NAMES",
]

#: Names of the 10 COCO keypoint stats, in ``COCOeval.stats`` order.
STAT_NAMES = (
    "AP",
    "AP50",
    "AP75",
    "AP_medium",
    "AP_large",
    "AR",
    "AR50",
    "AR75",
    "AR_medium",
    "AR_large",
)


def _kpts(a, name: str, k: int | None = None) -> np.ndarray:
    x = np.asarray(a, dtype=np.float64)
    if x.ndim != 3 or x.shape[2] != 3:
        raise ValueError(f"`{name}` must have shape [N, K, 3]; got {x.shape}")
    if k is not None and x.shape[1] != k:
        raise ValueError(f"`{name}` has K={x.shape[1]} keypoints but `sigmas` has {k}")
    if not np.isfinite(x).all():
        raise ValueError(f"`{name}` contains NaN or inf")
    return x


def oks_matrix(dt, gt, gt_area, gt_box, sigmas) -> np.ndarray:
    r"""Object keypoint similarity between every detection and every ground truth (vectorised).

    $$
    e_k = \frac{d_k^2}{(2\sigma_k)^2\,(A + \epsilon)\,2},\qquad
    \mathrm{OKS} = \frac{1}{|\{k: v_k > 0\}|}\sum_{k: v_k>0} \exp(-e_k)
    $$

    Same maths as pycocotools' ``COCOeval.computeOks`` (tested to 1e-12): a gt without a
    labelled keypoint uses the distance of each detected point to its box expanded by the box
    size on every side (``[x - w, x + 2w] x [y - h, y + 2h]``) and averages over all K.

    Parameters
    ----------
    dt : array, shape [Nd, K, 3], float
        Detected keypoints ``(x, y, score/visibility)``, pixels.
    gt : array, shape [Ng, K, 3], float
        Ground-truth keypoints ``(x, y, v)``, pixels; v > 0 marks labelled points.
    gt_area : array, shape [Ng], float
        The gt ``area`` field (pixels², as COCO: the segment area, not the box).
    gt_box : array, shape [Ng, 4], float
        The gt box, COCO ``xywh``, pixels.
    sigmas : array, shape [K], float
        Per-keypoint OKS sigmas (e.g. ``COCO17.sigma_array()``).

    Returns
    -------
    ndarray, shape [Nd, Ng], float64

    Raises
    ------
    ValueError
        On wrong shapes, K different from ``len(sigmas)``, NaN/inf, negative areas or sigmas
        <= 0.
    """
    s = np.asarray(sigmas, dtype=np.float64)
    if s.ndim != 1 or s.size == 0 or not np.isfinite(s).all() or (s <= 0).any():
        raise ValueError("`sigmas` must be a non-empty 1-D array of finite values > 0")
    k = s.size
    d = _kpts(dt, "dt", k)
    g = _kpts(gt, "gt", k)
    area = np.asarray(gt_area, dtype=np.float64)
    box = np.asarray(gt_box, dtype=np.float64)
    if area.shape != (g.shape[0],):
        raise ValueError(f"`gt_area` must have shape [{g.shape[0]}]; got {area.shape}")
    if box.shape != (g.shape[0], 4):
        raise ValueError(f"`gt_box` must have shape [{g.shape[0]}, 4]; got {box.shape}")
    if not (np.isfinite(area).all() and np.isfinite(box).all()) or (area < 0).any():
        raise ValueError("`gt_area` must be finite and >= 0 and `gt_box` finite")
    var = (2 * s) ** 2
    vg = g[:, :, 2] > 0  # [Ng, K]
    has = np.asarray(vg.any(1), dtype=bool)  # [Ng]
    # e = d^2 / var / (area + eps) / 2, with one reciprocal factor per (gt, keypoint)
    scale = 1.0 / (var[None, :] * (area[:, None] + np.spacing(1)) * 2)  # [Ng, K]
    out = np.zeros((d.shape[0], g.shape[0]))
    xd, yd = d[:, None, :, 0], d[:, None, :, 1]  # [Nd, 1, K]
    if has.any():
        gh = g[has]
        e = xd - gh[None, :, :, 0]
        e *= e
        dy = yd - gh[None, :, :, 1]
        dy *= dy
        e += dy
        e *= -scale[has][None]
        np.exp(e, out=e)
        w = vg[has]
        out[:, has] = np.einsum("dgk,gk->dg", e, w.astype(np.float64)) / w.sum(-1)[None]
    if (~has).any():
        # no labelled keypoint: distance to the box expanded by its size on every side
        b = box[~has]
        x0, x1 = b[:, 0] - b[:, 2], b[:, 0] + b[:, 2] * 2
        y0, y1 = b[:, 1] - b[:, 3], b[:, 1] + b[:, 3] * 2
        bx = np.maximum(0, x0[None, :, None] - xd) + np.maximum(0, xd - x1[None, :, None])
        by = np.maximum(0, y0[None, :, None] - yd) + np.maximum(0, yd - y1[None, :, None])
        e = (bx**2 + by**2) * -scale[~has][None]
        out[:, ~has] = np.exp(e).mean(-1)
    return out


def area_from_keypoints(kpts) -> np.ndarray:
    """Area of the box around each instance's LABELLED keypoints (v > 0).

    HumanSD builds the gt box from all keypoints, unlabelled (0, 0) ones included, which
    inflates boxes; this function ignores v = 0 points. An instance with fewer than one labelled
    point gets area 0.

    Parameters
    ----------
    kpts : array, shape [N, K, 3], float
        ``(x, y, v)`` in pixels.

    Returns
    -------
    ndarray, shape [N], float64
        ``(max x - min x) * (max y - min y)`` over labelled points, pixels².

    Raises
    ------
    ValueError
        On a wrong shape or NaN/inf.
    """
    k = _kpts(kpts, "kpts")
    lab = k[:, :, 2] > 0
    x = np.where(lab, k[:, :, 0], np.nan)
    y = np.where(lab, k[:, :, 1], np.nan)
    out = np.zeros(k.shape[0])
    has = lab.any(1)
    if has.any():
        out[has] = (np.nanmax(x[has], 1) - np.nanmin(x[has], 1)) * (
            np.nanmax(y[has], 1) - np.nanmin(y[has], 1)
        )
    return out


class KeypointAP(dict):
    """Result of :func:`keypoint_ap`: ``{category_id: stats[10]}`` plus ``mean`` and ``names``.

    Attributes
    ----------
    mean : ndarray, shape [10]
        Mean of each stat over the evaluated classes (a stat of -1, an empty area range, is
        left out of its mean; -1 if every class has -1).
    names : tuple of str
        ``STAT_NAMES``.
    """

    mean: np.ndarray
    names: tuple[str, ...] = STAT_NAMES

    def summary(self) -> dict[str, float]:
        """``{"AP": mean AP, ...}`` as plain floats."""
        return {n: float(v) for n, v in zip(STAT_NAMES, self.mean, strict=True)}


def _quiet(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args)


def _check_gt(gt_coco: Any) -> dict:
    if not isinstance(gt_coco, Mapping):
        raise TypeError("`gt_coco` must be a COCO-format dict (images, annotations, categories)")
    for key in ("images", "annotations", "categories"):
        if key not in gt_coco:
            raise ValueError(f"`gt_coco` lacks the {key!r} list")
    if not gt_coco["images"]:
        raise ValueError("`gt_coco` has no images")
    return dict(gt_coco)


def _check_score(score: Any) -> float:
    if isinstance(score, bool) or not isinstance(score, int | float | np.integer | np.floating):
        raise TypeError(f"`dets`: a detection's 'score' must be a number; got {score!r}")
    if not np.isfinite(float(score)):
        raise ValueError("`dets`: a detection has a NaN/inf 'score'")
    return float(score)


def keypoint_ap(
    gt_coco: Mapping[str, Any],
    dets: Sequence[Mapping[str, Any]],
    sigmas_by_class: Mapping[int, Any],
    *,
    max_dets: int = 20,
) -> KeypointAP:
    """COCO keypoint AP per class, each with its own OKS sigmas (pycocotools ``COCOeval``).

    Runs ``COCOeval(gt, dt, "keypoints")`` once per category with ``params.catIds = [c]`` and
    ``params.kpt_oks_sigmas = sigmas_by_class[c]``; K may differ from 17. Matching,
    accumulation and the 10 stats are pycocotools' own (never re-implemented here).

    Parameters
    ----------
    gt_coco : dict
        COCO keypoint ground truth (``images``, ``annotations`` with ``keypoints``,
        ``num_keypoints``, ``area``, ``bbox``, ``category_id``, ``iscrowd``; ``categories``).
    dets : list of dict
        COCO results: ``image_id``, ``category_id``, ``keypoints`` (3K floats), ``score``.
    sigmas_by_class : mapping of int to array of shape [K_c]
        Sigmas per category id; every category to evaluate must be listed (no default: a
        silent COCO-17 fallback is the classic bug, cocoapi #264).
    max_dets : int, default=20
        Detections kept per image, highest scores first (COCO keypoints: 20). pycocotools'
        keypoint summary is hard-wired to maxDets 20, so for another N the evaluation and
        accumulation run with ``params.maxDets = [N]`` and the summary reads those arrays
        (the same numbers as ``COCOeval.eval["precision"/"recall"]`` with ``maxDets=[N]``).

    Returns
    -------
    KeypointAP
        ``{category_id: ndarray [10]}`` with ``.mean`` (see ``STAT_NAMES``; -1 = empty range,
        as pycocotools).

    Raises
    ------
    ValueError
        If a category of the gt has no sigmas, sigma length differs from an annotation's K, a
        detection names an unknown image/category, or the inputs are malformed.
    TypeError
        If a detection's ``score`` is not a number.

    Warns
    -----
    UserWarning
        If a gt annotation's ``num_keypoints`` differs from its count of v > 0 (pycocotools
        trusts ``num_keypoints``: it ignores a gt with 0).
    """
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    gt = _check_gt(gt_coco)
    if not isinstance(sigmas_by_class, Mapping) or not sigmas_by_class:
        raise ValueError("`sigmas_by_class` must be a non-empty mapping category_id -> sigmas")
    if isinstance(max_dets, bool) or not isinstance(max_dets, int) or max_dets < 1:
        raise ValueError(f"`max_dets` must be an int >= 1; got {max_dets!r}")
    cats = [int(c["id"]) for c in gt["categories"]]
    sig = {}
    for c in cats:
        if c not in sigmas_by_class:
            raise ValueError(f"`sigmas_by_class` has no sigmas for category {c}")
        s = np.asarray(sigmas_by_class[c], dtype=np.float64)
        if s.ndim != 1 or s.size == 0 or not np.isfinite(s).all() or (s <= 0).any():
            raise ValueError(f"`sigmas_by_class[{c}]` must be a 1-D array of finite values > 0")
        sig[c] = s
    img_ids = {int(im["id"]) for im in gt["images"]}
    bad_num: list[Any] = []
    for a in gt["annotations"]:
        missing = [
            key
            for key in (
                "id",
                "image_id",
                "category_id",
                "keypoints",
                "num_keypoints",
                "area",
                "bbox",
                "iscrowd",
            )
            if key not in a
        ]
        if missing:
            raise ValueError(
                f"`gt_coco` annotation {a.get('id', '?')} lacks {missing} (pycocotools needs them; "
                "area: the instance's segment area, or unimc.area_from_keypoints as a stand-in; "
                "num_keypoints: the count of v > 0)"
            )
        c = int(a["category_id"])
        if c not in sig:
            raise ValueError(f"gt annotation has unknown category_id {c}")
        if len(a["keypoints"]) != 3 * sig[c].size:
            raise ValueError(
                f"gt annotation of category {c} has {len(a['keypoints']) // 3} keypoints but "
                f"`sigmas_by_class[{c}]` has {sig[c].size}"
            )
        n_lab = int((np.asarray(a["keypoints"], dtype=np.float64)[2::3] > 0).sum())
        if int(a["num_keypoints"]) != n_lab:
            bad_num.append(a.get("id", "?"))
    if bad_num:
        warnings.warn(
            f"`gt_coco`: {len(bad_num)} annotation(s) (ids {bad_num[:5]}) have a "
            "`num_keypoints` different from their count of v > 0; pycocotools ignores a gt "
            "with num_keypoints = 0 whatever its keypoints",
            UserWarning,
            stacklevel=2,
        )
    if not isinstance(dets, Sequence) or isinstance(dets, str | bytes):
        raise TypeError("`dets` must be a list of COCO result dicts")
    dets = [dict(d) for d in dets]
    for d in dets:
        for key in ("image_id", "category_id", "keypoints", "score"):
            if key not in d:
                raise ValueError(f"a detection lacks {key!r}")
        if int(d["image_id"]) not in img_ids:
            raise ValueError(f"a detection names unknown image_id {d['image_id']}")
        c = int(d["category_id"])
        if c not in sig:
            raise ValueError(f"a detection names unknown category_id {c}")
        kp = np.asarray(d["keypoints"], dtype=np.float64)
        if kp.size != 3 * sig[c].size or not np.isfinite(kp).all():
            raise ValueError(f"a detection of category {c} needs {3 * sig[c].size} finite values")
        _check_score(d["score"])
    coco_gt = COCO()
    coco_gt.dataset = copy.deepcopy(gt)
    _quiet(coco_gt.createIndex)
    out = KeypointAP()
    for c in cats:
        mine = [d for d in dets if int(d["category_id"]) == c]
        if mine:
            coco_dt = _quiet(coco_gt.loadRes, copy.deepcopy(mine))
        else:
            coco_dt = COCO()
            coco_dt.dataset = {
                "images": gt["images"],
                "categories": gt["categories"],
                "annotations": [],
            }
            _quiet(coco_dt.createIndex)
        ev = COCOeval(coco_gt, coco_dt, "keypoints")
        ev.params.catIds = [c]
        ev.params.kpt_oks_sigmas = sig[c]
        ev.params.maxDets = [max_dets]
        _quiet(ev.evaluate)
        _quiet(ev.accumulate)
        # pycocotools' _summarizeKps looks up maxDets == 20 by value; the accumulated arrays
        # have one maxDets slot (N), so label that slot 20 for the summary (same arrays).
        ev.params.maxDets = [20]
        _quiet(ev.summarize)
        out[c] = np.asarray(ev.stats, dtype=np.float64)
    stack = np.stack([out[c] for c in cats])
    valid = stack >= 0
    with np.errstate(invalid="ignore"):
        mean = np.where(valid.any(0), (stack * valid).sum(0) / np.maximum(valid.sum(0), 1), -1.0)
    out.mean = mean
    return out


def count_error(
    gt_coco: Mapping[str, Any],
    dets: Sequence[Mapping[str, Any]],
    score_thr: float = 0.0,
    *,
    category_id: int | None = None,
) -> float:
    r"""Mean absolute difference between gt and detected instance counts per image.

    $$
    \mathrm{CE} = \frac{1}{|I|}\sum_{i\in I}
    \big|\#\mathrm{gt}_i - \#\{d \in \mathrm{det}_i: s_d \ge \tau\}\big|
    $$

    HumanSD's "human number difference"; crowd annotations (``iscrowd=1``) are not counted.

    Parameters
    ----------
    gt_coco : dict
        COCO ground truth; the mean runs over its ``images``.
    dets : list of dict
        COCO results (``image_id``, ``category_id``, ``score``).
    score_thr : float, default=0.0
        $\tau$; detections with a lower score are not counted.
    category_id : int, optional
        Count only this category (default: all).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        On malformed input, a NaN threshold, a detection of an unknown image or without
        ``score``, or a `category_id` that is not among the gt ``categories``.
    TypeError
        If a detection's ``score`` is not a number.
    """
    gt = _check_gt(gt_coco)
    if not np.isfinite(float(score_thr)):
        raise ValueError("`score_thr` must be finite")
    if category_id is not None:
        cats = {int(c["id"]) for c in gt["categories"]}
        if int(category_id) not in cats:
            raise ValueError(
                f"`category_id` {category_id} is not a category of `gt_coco` {sorted(cats)}"
            )
    if not isinstance(dets, Sequence) or isinstance(dets, str | bytes):
        raise TypeError("`dets` must be a list of COCO result dicts")
    for d in dets:
        for key in ("image_id", "score") + (("category_id",) if category_id is not None else ()):
            if key not in d:
                raise ValueError(f"`dets`: a detection lacks {key!r}")
        _check_score(d["score"])
    ids = [int(im["id"]) for im in gt["images"]]
    n_gt = dict.fromkeys(ids, 0)
    n_dt = dict.fromkeys(ids, 0)
    for a in gt["annotations"]:
        if a.get("iscrowd", 0) or (
            category_id is not None and int(a["category_id"]) != category_id
        ):
            continue
        n_gt[int(a["image_id"])] += 1
    for d in dets:
        i = int(d["image_id"])
        if i not in n_dt:
            raise ValueError(f"a detection names unknown image_id {i}")
        if category_id is not None and int(d["category_id"]) != category_id:
            continue
        if float(d["score"]) >= score_thr:
            n_dt[i] += 1
    return float(np.mean([abs(n_gt[i] - n_dt[i]) for i in ids]))


def _with_width(feature: Any, width: int) -> Any:
    import torch

    class WithWidth(torch.nn.Module):
        num_features = width

        def __init__(self) -> None:
            super().__init__()
            self.feature = feature

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.feature(x)

    return WithWidth()


def fid_kid(
    real,
    fake,
    feature,
    *,
    kid_subset_size: int = 50,
    kid_subsets: int = 10,
    normalize: bool = True,
) -> dict[str, float]:
    """FID and KID through torchmetrics with YOUR feature extractor (extra ``[metrics]``).

    No hub weights and no torch-fidelity Inception: `feature` is any ``nn.Module`` mapping an
    image batch ``[B, 3, H, W]`` to features ``[B, F]``. F is read from its int attribute
    ``num_features`` if it has one, else from its output on two of your images.

    Parameters
    ----------
    real, fake : Tensor, shape [N, 3, H, W]
        Images: floating in [0, 1] when `normalize`, else uint8 (checked). `real` and `fake`
        may differ in N and in H, W (your extractor must accept both, e.g. by pooling).
    feature : nn.Module
        Feature extractor; must return ``[B, F]`` (checked on two images of each side).
    kid_subset_size : int, default=50
        KID subset size (clipped to the smaller image count).
    kid_subsets : int, default=10
        KID subsets.
    normalize : bool, default=True
        Images are floats in [0, 1] (torchmetrics' flag); ``False``: uint8 in [0, 255]. With
        a custom extractor torchmetrics passes the images to it unchanged either way.

    Returns
    -------
    dict
        ``{"fid": float, "kid_mean": float, "kid_std": float}``.

    Raises
    ------
    ImportError
        Without torchmetrics (``pip install 'unimc[metrics]'``).
    ValueError
        On fewer than 2 images per side, a shape other than ``[N, 3, H, W]``, NaN/inf, a
        dtype or value range that does not match `normalize` (e.g. uint8 or 0-255 floats
        with ``normalize=True``), or features that are not ``[B, F]`` with the same F for
        both sides.
    """
    try:
        from torchmetrics.image.fid import FrechetInceptionDistance
        from torchmetrics.image.kid import KernelInceptionDistance
    except ImportError as err:  # pragma: no cover - depends on the extra
        raise ImportError("fid_kid needs torchmetrics: pip install 'unimc[metrics]'") from err
    import torch

    for name, t in (("real", real), ("fake", fake)):
        if not isinstance(t, torch.Tensor) or t.ndim != 4 or t.shape[1] != 3:
            raise ValueError(f"`{name}` must be a tensor [N, 3, H, W]")
        if t.shape[0] < 2:
            raise ValueError(f"`{name}` needs at least 2 images")
        if t.is_floating_point() and not torch.isfinite(t).all():
            raise ValueError(f"`{name}` contains NaN or inf")
        if normalize:
            if not t.is_floating_point():
                raise ValueError(
                    f"`{name}` is {t.dtype} but `normalize`=True expects floats in [0, 1] "
                    f"(convert with {name}.float() / 255, or pass normalize=False for uint8)"
                )
            lo, hi = float(t.min()), float(t.max())
            if lo < 0.0 or hi > 1.0:
                raise ValueError(
                    f"`{name}` has values in [{lo:.4g}, {hi:.4g}] but `normalize`=True expects "
                    "[0, 1] (divide 0-255 images by 255)"
                )
        elif t.dtype != torch.uint8:
            raise ValueError(
                f"`{name}` is {t.dtype} but `normalize`=False expects uint8 in [0, 255] "
                "(pass floats in [0, 1] with normalize=True)"
            )
    if not isinstance(feature, torch.nn.Module):
        raise TypeError("`feature` must be an nn.Module (no default Inception: no hub weights)")
    widths = []
    with torch.no_grad():
        for name, t in (("real", real), ("fake", fake)):
            f = feature(t[:2])
            if not isinstance(f, torch.Tensor) or f.ndim != 2 or f.shape[0] != 2:
                shape = tuple(f.shape) if isinstance(f, torch.Tensor) else type(f).__name__
                raise ValueError(
                    f"`feature` must map `{name}` [B, 3, H, W] to features [B, F]; got {shape} "
                    "for B = 2 (flatten or pool its output)"
                )
            widths.append(int(f.shape[1]))
    nf = getattr(feature, "num_features", None)
    if widths[0] != widths[1] or (isinstance(nf, int) and nf != widths[0]):
        raise ValueError(
            f"`feature` gives F = {widths[0]} for `real` and {widths[1]} for `fake`"
            + (f" but its `num_features` is {nf}" if isinstance(nf, int) else "")
        )
    if not hasattr(feature, "num_features"):
        # give torchmetrics the width we measured: its own probe is a 299 x 299 image
        feature = _with_width(feature, widths[0])
    fid = FrechetInceptionDistance(feature=feature, normalize=normalize)
    sub = min(kid_subset_size, real.shape[0], fake.shape[0])
    kid = KernelInceptionDistance(
        feature=feature, normalize=normalize, subset_size=sub, subsets=kid_subsets
    )
    for m in (fid, kid):
        m.update(real, real=True)
        m.update(fake, real=False)
    km, ks = kid.compute()
    return {"fid": float(fid.compute()), "kid_mean": float(km), "kid_std": float(ks)}
