"""Dataset builders: WQA-Synthetic- and WQA-Position-style sets from the user's covers and logos,
and real-invisible-watermark sets, written as per-item files plus an atomically written index.

Scale-out (spec Sec. 7): items are independent, each seeded by its own child of
``numpy.random.SeedSequence(seed).spawn(n)``, so a ``ProcessPoolExecutor`` (``workers=k``) or Ray
(``executor="ray"``, extra ``[ray]``) gives the same files as one process. A rerun skips items
whose record file exists (resume); ``build.json`` holds a digest of the inputs and settings, and
a rerun into the same folder with other ones is refused; ``index.json`` is written to a temporary
file and renamed.

Source: official ``datasetCreating/emb_watermark.py`` (cover resized to 224 x 224, weight
$w \\sim U[0, 0.25]$ rounded to 2 decimals, name ``{cover_id}_{w}.png``, score
$5 - 20w$), ``read_coco_json.py`` (COCO boxes rescaled to the cover size).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

from icml25_core import check_choice, check_scalar

from .levels import MAX_WEIGHT, score_to_level
from .synth import Logo, blend_logo
from .vqa import (
    DESCRIPTION_QUESTIONS,
    position_qa,
    template_description,
    to_record,
)

__all__ = ["build_invisible", "build_position", "build_synthetic", "load_coco_objects"]

Objects = list[tuple[str, tuple[float, float, float, float]]]


def _atomic_write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False, indent=1)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _atomic_save_png(path: Path, rgb: np.ndarray) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".png", dir=path.parent)
    os.close(fd)
    try:
        Image.fromarray(rgb).save(tmp, format="PNG")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_coco_objects(coco_json, size: int | tuple[int, int] = 224) -> dict[str, Objects]:
    """Object names and boxes of a COCO instances file, rescaled to the cover size.

    Parameters
    ----------
    coco_json : path
        COCO ``instances_*.json`` (``images``, ``annotations`` with ``bbox = [x, y, w, h]``,
        ``categories``).
    size : int or tuple of int, default=224
        Cover size ``(width, height)`` the boxes are rescaled to (x and y separately).

    Returns
    -------
    dict
        ``file_name -> [(category name, (x0, y0, x1, y1)), ...]``.

    Raises
    ------
    ValueError
        If the file is not a COCO instances JSON.

    Notes
    -----
    Source: official ``datasetCreating/read_coco_json.py``, which takes ``annotations[i-1]``
    (off by one, spec Sec. 9); here annotations join images by ``image_id``. Read with the
    ``json`` module: boxes need nothing of pycocotools' index.
    """
    path = Path(coco_json)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        names = {c["id"]: c["name"] for c in data["categories"]}
        images = {im["id"]: im for im in data["images"]}
        annotations = data["annotations"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as error:
        raise ValueError(
            f"`coco_json` {coco_json} is not a COCO instances file ({error})"
        ) from None
    W, H = (size, size) if isinstance(size, int) else size
    out: dict[str, Objects] = {im["file_name"]: [] for im in images.values()}
    for ann in annotations:
        im = images.get(ann["image_id"])
        if im is None:
            continue
        sx, sy = W / im["width"], H / im["height"]
        x, y, w, h = ann["bbox"]
        if w <= 0 or h <= 0:
            continue
        box = (x * sx, y * sy, (x + w) * sx, (y + h) * sy)
        out[im["file_name"]].append((names[ann["category_id"]], box))
    return out


def _cover_array(cover, size: int | None) -> tuple[str, np.ndarray]:
    from PIL import Image

    if isinstance(cover, (str, Path)):
        path = Path(cover)
        if not path.is_file():
            raise ValueError(f"`covers` entry {cover} is not a file")
        name, img = path.stem, Image.open(path).convert("RGB")
    else:
        if isinstance(cover, tuple) and len(cover) == 2 and isinstance(cover[0], str):
            name, arr = cover
        else:
            name, arr = "cover", cover
        arr = np.asarray(arr)
        if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] not in (3, 4):
            raise ValueError(
                f"`covers` arrays must be uint8 [H, W, 3], got {arr.dtype} {arr.shape}"
            )
        img = Image.fromarray(arr[..., :3])
    if size is not None:
        img = img.resize((size, size), Image.Resampling.BICUBIC)
    return name, np.asarray(img)


def _synthetic_item(job: dict) -> dict:
    """Make one stego image and its records (runs in a worker process)."""
    rng = np.random.default_rng(job["seed"])
    name, cover = _cover_array(job["cover"], job["size"])
    logos: list[Logo] = job["logos"]
    logo = logos[int(rng.integers(len(logos)))]
    if job["augment"]:
        if rng.random() < 0.5:
            cover = cover[:, ::-1]
        cover = np.ascontiguousarray(cover)
    H, W = cover.shape[:2]
    if logo.mask.shape[0] > H or logo.mask.shape[1] > W:
        raise ValueError(f"logo {logo.name!r} {logo.mask.shape} is larger than the {W}x{H} cover")
    weight = round(float(rng.uniform(*job["weight_range"])), 2)
    stego = blend_logo(cover, logo.rgb, logo.mask, weight=weight, rng=rng, quantize=job["quantize"])
    cover_id = f"{name}-{job['index']:06d}"
    image_name = f"{cover_id}_{weight}.png"
    _atomic_save_png(Path(job["out_dir"]) / "images" / image_name, stego.image)
    objects = job["objects"]
    base = {
        "weight": weight,
        "wm_box": list(stego.wm_box),
        "logo": logo.name,
        "objects": [[n, list(b)] for n, b in objects],
    }
    records = []
    if job["task"] == "position":
        for k, qa in enumerate(position_qa(stego.wm_box, objects, rng=rng)):
            rec = to_record(
                f"images/{image_name}",
                qa["question"],
                qa["answer"],
                id=f"{cover_id}-q{k}",
                format=job["format"],
            )
            records.append({**rec, **base})
    else:
        question = DESCRIPTION_QUESTIONS[int(rng.integers(len(DESCRIPTION_QUESTIONS)))]
        if job["describer"] is None:
            answer = template_description(objects, stego.wm_box, stego.level, (W, H))
        else:
            answer = job["describer"](
                Path(job["out_dir"]) / "images" / image_name, objects, stego.wm_box, stego.level
            )
        rec = to_record(
            f"images/{image_name}",
            question,
            answer,
            id=cover_id,
            visibility=stego.level,
            gt_score=stego.score,
            format=job["format"],
        )
        records.append({**rec, **base})
    return {"index": job["index"], "records": records}


def _invisible_item(job: dict) -> dict:
    from .invisible import bit_accuracy, decode_invisible, embed_invisible, jpeg, psnr

    rng = np.random.default_rng(job["seed"])
    name, cover = _cover_array(job["cover"], None)
    method = job["methods"][job["index"] % len(job["methods"])]
    bits = rng.integers(0, 2, job["n_bits"]).astype(bool)
    stego = embed_invisible(cover, bits, method)
    cover_id = f"{name}-{job['index']:06d}"
    image_name = f"{cover_id}_{method}.png"
    _atomic_save_png(Path(job["out_dir"]) / "images" / image_name, stego)
    accuracy = {}
    for attack in job["attacks"]:
        attacked = stego if attack == "none" else jpeg(stego, int(attack[4:]), "4:4:4")
        accuracy[attack] = bit_accuracy(decode_invisible(attacked, job["n_bits"], method), bits)
    rec: dict[str, Any] = {
        "image": f"images/{image_name}",
        "id": cover_id,
        "method": method,
        "bits": [int(b) for b in bits],
        "psnr": psnr(cover, stego),
        "bit_accuracy": accuracy,
    }
    gt = job["gt_score"]
    if gt is not None:
        level = score_to_level(gt)
        question = DESCRIPTION_QUESTIONS[int(rng.integers(len(DESCRIPTION_QUESTIONS)))]
        answer = template_description([], (0, 0, 1, 1), level, cover.shape[1::-1])
        rec.update(
            to_record(rec["image"], question, answer, id=cover_id, visibility=level, gt_score=gt)
        )
    return {"index": job["index"], "records": [rec]}


def _fingerprint(jobs: list[dict]) -> dict:
    """What fixes a build's files: everything of the jobs but the output folder, made JSON-able
    (cover arrays and logos by a digest of their bytes)."""
    import hashlib

    def plain(value):
        if isinstance(value, np.ndarray):
            return (
                "sha256:" + hashlib.sha256(value.tobytes() + str(value.shape).encode()).hexdigest()
            )
        if isinstance(value, Logo):
            return [value.name, plain(value.rgb), plain(value.mask)]
        if isinstance(value, np.random.SeedSequence):
            return [value.entropy, list(value.spawn_key)]
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items() if k != "out_dir"}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, (str, int, float, bool)) or value is None:
            return value
        return getattr(value, "__qualname__", type(value).__qualname__)

    digest = hashlib.sha256(json.dumps(plain(jobs), sort_keys=True).encode()).hexdigest()
    return {"format": "wmarkgpt-build-v1", "items": len(jobs), "sha256": digest}


def _run(
    jobs: list[dict],
    worker: Callable[[dict], dict],
    out_dir: Path,
    workers: int,
    executor: str,
    desc: str,
    progress: bool,
) -> list[dict]:
    from tqdm.auto import tqdm

    done_dir = out_dir / "records"
    stamp, fingerprint = out_dir / "build.json", _fingerprint(jobs)
    if stamp.exists():
        if json.loads(stamp.read_text(encoding="utf-8")) != fingerprint:
            raise ValueError(
                f"`out_dir` {out_dir} holds a build with other inputs or settings; resume only "
                "with the same call, or use a new folder"
            )
    elif done_dir.exists() and any(done_dir.iterdir()):
        raise ValueError(f"`out_dir` {out_dir} holds records of an unknown build; use a new folder")
    else:
        _atomic_write_json(stamp, fingerprint)
    results: dict[int, list[dict]] = {}
    todo = []
    for job in jobs:
        path = done_dir / f"{job['index']:06d}.json"
        if path.exists():  # resume: this item was written by an earlier run
            results[job["index"]] = json.loads(path.read_text(encoding="utf-8"))
        else:
            todo.append(job)

    def finish(result: dict) -> None:
        _atomic_write_json(done_dir / f"{result['index']:06d}.json", result["records"])
        results[result["index"]] = result["records"]

    bar = tqdm(total=len(jobs), initial=len(jobs) - len(todo), desc=desc, disable=not progress)
    try:
        if executor == "ray":  # pragma: no cover - documented path (extra [ray]), not run here
            import ray

            remote = ray.remote(worker)
            refs = [remote.remote(job) for job in todo]
            while refs:
                ready, refs = ray.wait(refs)
                for ref in ready:
                    finish(ray.get(ref))
                    bar.update()
        elif workers == 1:
            for job in todo:
                finish(worker(job))
                bar.update()
        else:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(worker, job) for job in todo]
                for future in as_completed(futures):
                    finish(future.result())
                    bar.update()
    finally:
        bar.close()
    records = [r for i in sorted(results) for r in results[i]]
    _atomic_write_json(out_dir / "index.json", records)
    return records


def _common(covers, n, out_dir, seed, workers, executor):
    if isinstance(covers, (str, Path)) or len(covers) == 0:
        raise ValueError("`covers` must be a non-empty sequence of image paths or arrays")
    check_scalar(n, "n", kind=int, low=1)
    check_scalar(seed, "seed", kind=int, low=0)
    check_scalar(workers, "workers", kind=int, low=1)
    check_choice(executor, "executor", ("process", "ray"))
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"`out_dir` {out_dir} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    seeds = np.random.SeedSequence(seed).spawn(n)
    return out, seeds


def build_synthetic(
    covers: Sequence,
    logos: Sequence[Logo],
    n: int,
    out_dir,
    *,
    seed: int,
    size: int | None = 224,
    objects: Mapping[str, Objects] | None = None,
    coco_json=None,
    describer: Callable | None = None,
    weight_range: tuple[float, float] = (0.0, MAX_WEIGHT),
    augment: bool = False,
    quantize: str = "round",
    format: str = "llava",
    workers: int = 1,
    executor: str = "process",
    progress: bool = True,
    _task: str = "description",
) -> list[dict]:
    """Build a WQA-Synthetic-style set: stego images at random visibility plus description
    records.

    Parameters
    ----------
    covers : sequence of path, uint8 array, or (name, array)
        Cover images; item ``i`` uses ``covers[i % len(covers)]``.
    logos : sequence of Logo
        From :func:`~wmarkgpt.synth.prepare_logo`; each item draws one.
    n : int
        Number of images.
    out_dir : path
        Gets ``images/``, ``records/`` (one JSON per item) and ``index.json``.
    seed : int
        Root seed; item ``i`` uses ``SeedSequence(seed).spawn(n)[i]``.
    size : int or None, default=224
        Covers are resized to ``size x size`` (Pillow bicubic); None keeps them.
    objects : mapping, optional
        Cover name (file stem or given name) -> ``[(name, box), ...]`` at the cover size.
    coco_json : path, optional
        COCO instances file (:func:`load_coco_objects`), keyed by file name.
    describer : callable, optional
        ``describer(image_path, objects, wm_box, level) -> str`` (e.g. an LLM called with
        :func:`~wmarkgpt.vqa.description_prompt`); default
        :func:`~wmarkgpt.vqa.template_description`. Must be picklable when ``workers > 1``.
    weight_range : tuple of float, default=(0, 0.25)
    augment : bool, default=False
        Random horizontal flips of the covers.
    quantize : {"round", "truncate"}, default="round"
    format : {"llava", "sharegpt"}, default="llava"
    workers : int, default=1
        Processes (``ProcessPoolExecutor``).
    executor : {"process", "ray"}, default="process"
        "ray" sends items to a running Ray cluster (``ray.init()`` first; extra ``[ray]``).
    progress : bool, default=True
        tqdm bar.

    Returns
    -------
    list of dict
        The records of ``index.json``: ``image, id, conversations, visibility, gt_score`` (LLaVA)
        plus ``weight, wm_box, logo, objects``.

    Raises
    ------
    ValueError
        If `covers` or `logos` is empty, `n`, `seed`, `workers` is out of range, a logo is larger
        than a cover, a choice is unknown, or `out_dir` holds a build of other inputs or
        settings.
    """
    out, seeds = _common(covers, n, out_dir, seed, workers, executor)
    if len(logos) == 0 or not all(isinstance(lg, Logo) for lg in logos):
        raise ValueError("`logos` must be a non-empty sequence of Logo (wmarkgpt.prepare_logo)")
    check_choice(format, "format", ("llava", "sharegpt"))
    check_choice(quantize, "quantize", ("round", "truncate"))
    a, b = weight_range
    if not 0 <= a <= b <= 1:
        raise ValueError(f"`weight_range` must satisfy 0 <= a <= b <= 1, got {weight_range}")
    if size is not None:
        check_scalar(size, "size", kind=int, low=8)
    table: dict[str, Objects] = dict(objects or {})
    if coco_json is not None:
        coco = load_coco_objects(coco_json, size if size is not None else 224)
        table.update({Path(k).stem: v for k, v in coco.items()})
    jobs = []
    for i in range(n):
        cover = covers[i % len(covers)]
        key = (
            Path(cover).stem
            if isinstance(cover, (str, Path))
            else (cover[0] if isinstance(cover, tuple) else "cover")
        )
        jobs.append(
            {
                "index": i,
                "seed": seeds[i],
                "cover": cover,
                "logos": list(logos),
                "size": size,
                "objects": table.get(key, []),
                "describer": describer,
                "augment": augment,
                "weight_range": (a, b),
                "quantize": quantize,
                "format": format,
                "out_dir": str(out),
                "task": _task,
            }
        )
    if _task == "position" and not any(job["objects"] for job in jobs):
        raise ValueError("`objects` (or `coco_json`) must give objects for position questions")
    return _run(jobs, _synthetic_item, out, workers, executor, f"wmarkgpt {_task}", progress)


def build_position(
    covers: Sequence,
    logos: Sequence[Logo],
    n: int,
    out_dir,
    *,
    seed: int,
    objects: Mapping[str, Objects] | None = None,
    coco_json=None,
    **kwargs,
) -> list[dict]:
    """Build a WQA-Position-style set: stego images plus one single-word position question per
    object (answers from :func:`~wmarkgpt.vqa.relative_position`, our rule).

    Parameters
    ----------
    covers, logos, n, out_dir, seed, objects, coco_json
        As in :func:`build_synthetic`; covers without objects get no question.
    **kwargs
        Other keywords of :func:`build_synthetic` (size, workers, format, ...).

    Returns
    -------
    list of dict
        One record per question.

    Raises
    ------
    ValueError
        As :func:`build_synthetic`, and if no cover has objects.
    """
    return build_synthetic(
        covers,
        logos,
        n,
        out_dir,
        seed=seed,
        objects=objects,
        coco_json=coco_json,
        _task="position",
        **kwargs,
    )


def build_invisible(
    covers: Sequence,
    n: int,
    out_dir,
    *,
    methods: Sequence[str] = ("dwtDctSvd", "rivaGan"),
    attacks: Sequence[str] = ("none", "jpeg50"),
    seed: int,
    n_bits: int = 32,
    gt_scores: Sequence[float] | None = None,
    workers: int = 1,
    executor: str = "process",
    progress: bool = True,
) -> list[dict]:
    """Build a set of real invisible watermarks (extra ``[invisible]``), with PSNR and bit
    accuracy per attack.

    Parameters
    ----------
    covers : sequence of path, uint8 array, or (name, array)
        Covers of at least 256 x 256 pixels (kept at their size).
    n : int
    out_dir : path
    methods : sequence of {"dwtDct", "dwtDctSvd", "rivaGan"}, default=("dwtDctSvd", "rivaGan")
        Item ``i`` uses ``methods[i % len(methods)]``.
    attacks : sequence of str, default=("none", "jpeg50")
        "none" or "jpeg<quality>" (Pillow, 4:4:4).
    seed : int
    n_bits : int, default=32
    gt_scores : sequence of float, optional
        Human visibility scores per item (the WQA-Real ``gt_score``): only then do records get a
        description question and answer; invisible watermarks have no synthetic score.
    workers, executor, progress
        As in :func:`build_synthetic`.

    Returns
    -------
    list of dict
        ``image, id, method, bits, psnr, bit_accuracy`` (+ ``conversations, visibility,
        gt_score`` with `gt_scores`).

    Raises
    ------
    ValueError
        If a method or attack is unknown, `gt_scores` has the wrong length or a score is outside
        [0, 5], or a cover is smaller than 256 x 256.
    """
    from .invisible import METHODS

    out, seeds = _common(covers, n, out_dir, seed, workers, executor)
    if len(methods) == 0:
        raise ValueError("`methods` is empty")
    for m in methods:
        check_choice(m, "methods", METHODS)
    for attack in attacks:
        if attack != "none" and not (
            attack.startswith("jpeg") and attack[4:].isdigit() and 1 <= int(attack[4:]) <= 95
        ):
            raise ValueError(f"`attacks` entries must be 'none' or 'jpeg<1..95>', got {attack!r}")
    if gt_scores is not None:
        if len(gt_scores) != n:
            raise ValueError(f"`gt_scores` has {len(gt_scores)} values for n = {n}")
        for s in gt_scores:
            score_to_level(s)
    jobs = [
        {
            "index": i,
            "seed": seeds[i],
            "cover": covers[i % len(covers)],
            "methods": list(methods),
            "attacks": list(attacks),
            "n_bits": n_bits,
            "out_dir": str(out),
            "gt_score": None if gt_scores is None else float(gt_scores[i]),
        }
        for i in range(n)
    ]
    return _run(jobs, _invisible_item, out, workers, executor, "wmarkgpt invisible", progress)
