"""Dataset builders: WQA-Synthetic- and WQA-Position-style sets from the user's covers and logos,
and real-invisible-watermark sets, written as per-item files plus an atomically written index.

Scale-out (spec Sec. 7): items are independent, each seeded by its own child of
``numpy.random.SeedSequence(seed).spawn(n)``, so a ``ProcessPoolExecutor`` (``workers=k``) or Ray
(``executor="ray"``, extra ``[ray]``) gives the same files as one process. A rerun skips items
whose record file exists and whose image files still have the size and SHA-256 digest the record
file holds (resume; a missing, truncated or unreadable item is made again); ``build.json`` holds
a digest of the inputs (cover files by their content) and settings, and a rerun into the same
folder with other ones is refused; ``index.json`` is written to a temporary
file and renamed.

Source: official ``datasetCreating/emb_watermark.py`` (cover resized to 224 x 224, weight
$w \\sim U[0, 0.25]$ rounded to 2 decimals, name ``{cover_id}_{w}.png``, score
$5 - 20w$), ``read_coco_json.py`` (COCO boxes rescaled to the cover size).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

from icml25_core import check_choice, check_scalar

from .levels import MAX_WEIGHT, score_to_level
from .synth import Logo, blend_logo, pil_to_rgb
from .vqa import (
    DESCRIPTION_QUESTIONS,
    FORMAT_LINE,
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


def _read_coco(coco_json) -> dict[str, tuple[tuple[float, float], Objects]]:
    """``file_name -> ((width, height), objects at that size)`` of a COCO instances file."""
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
    out: dict[str, tuple[tuple[float, float], Objects]] = {}
    for im in images.values():
        try:
            W, H = float(im["width"]), float(im["height"])
            name = str(im["file_name"])
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"`coco_json` {coco_json}: image {im!r} lacks {error}") from None
        if not (math.isfinite(W) and math.isfinite(H) and W > 0 and H > 0):
            raise ValueError(f"`coco_json` {coco_json}: image {name!r} has size {W}x{H}")
        out[name] = ((W, H), [])
    for k, ann in enumerate(annotations):
        where = f"`coco_json` {coco_json}: annotation {ann.get('id', k)!r}"
        im = images.get(ann.get("image_id"))
        if im is None:
            raise ValueError(f"{where} has image_id {ann.get('image_id')!r}, not in `images`")
        if ann.get("category_id") not in names:
            raise ValueError(
                f"{where} has category_id {ann.get('category_id')!r}, not in `categories`"
            )
        try:
            x, y, w, h = (float(v) for v in ann["bbox"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{where} has no bbox [x, y, w, h]") from None
        if not all(math.isfinite(v) for v in (x, y, w, h)):
            raise ValueError(f"{where} has a non-finite bbox {ann['bbox']!r}")
        if w <= 0 or h <= 0:
            continue
        out[str(im["file_name"])][1].append((names[ann["category_id"]], (x, y, x + w, y + h)))
    return out


def _scale_objects(objects: Objects, src: tuple[float, float], dst: tuple[int, int]) -> Objects:
    sx, sy = dst[0] / src[0], dst[1] / src[1]
    return [(n, (b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy)) for n, b in objects]


def load_coco_objects(coco_json, size: int | tuple[int, int] | None = 224) -> dict[str, Objects]:
    """Object names and boxes of a COCO instances file, rescaled to the cover size.

    Parameters
    ----------
    coco_json : path
        COCO ``instances_*.json`` (``images``, ``annotations`` with ``bbox = [x, y, w, h]``,
        ``categories``).
    size : int, tuple of int or None, default=224
        Cover size ``(width, height)`` the boxes are rescaled to (x and y separately); None
        keeps the COCO images' own sizes.

    Returns
    -------
    dict
        ``file_name -> [(category name, (x0, y0, x1, y1)), ...]``.

    Raises
    ------
    ValueError
        If the file is not a COCO instances JSON, an annotation names an unknown image or
        category or has a non-finite box, or `size` is not positive.

    Notes
    -----
    Source: official ``datasetCreating/read_coco_json.py``, which takes ``annotations[i-1]``
    (off by one, spec Sec. 9); here annotations join images by ``image_id``. Read with the
    ``json`` module: boxes need nothing of pycocotools' index.
    """
    if size is not None:
        W, H = (size, size) if isinstance(size, int) else size
        if not (W > 0 and H > 0):
            raise ValueError(f"`size` must be positive, got {size!r}")
    table = _read_coco(coco_json)
    if size is None:
        return {k: objs for k, (_, objs) in table.items()}
    return {k: _scale_objects(objs, src, (W, H)) for k, (src, objs) in table.items()}


def _cover_array(cover, size: int | None) -> tuple[str, np.ndarray]:
    from PIL import Image

    if isinstance(cover, (str, Path)):
        path = Path(cover)
        if not path.is_file():
            raise ValueError(f"`covers` entry {cover} is not a file")
        try:
            with Image.open(path) as opened:
                img = Image.fromarray(pil_to_rgb(opened, f"covers entry {cover}"))
        except (OSError, Image.UnidentifiedImageError) as error:
            raise ValueError(f"`covers` entry {cover} is not a readable image ({error})") from None
        name = path.stem
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


def _built_size(cover, size: int | None) -> tuple[int, int]:
    """``(width, height)`` of a cover as the builder uses it."""
    if size is not None:
        return size, size
    if isinstance(cover, (str, Path)):
        from PIL import Image

        try:
            with Image.open(cover) as img:
                return img.size
        except (OSError, Image.UnidentifiedImageError) as error:
            raise ValueError(f"`covers` entry {cover} is not a readable image ({error})") from None
    arr = np.asarray(cover[1] if isinstance(cover, tuple) else cover)
    return int(arr.shape[1]), int(arr.shape[0])


def _synthetic_item(job: dict) -> dict:
    """Make one stego image and its records (runs in a worker process)."""
    rng = np.random.default_rng(job["seed"])
    name, cover = _cover_array(job["cover"], job["size"])
    logos: list[Logo] = job["logos"]
    logo = logos[int(rng.integers(len(logos)))]
    objects = job["objects"]
    H, W = cover.shape[:2]
    for obj_name, b in objects:
        if not (b[0] >= -1 and b[1] >= -1 and b[2] <= W + 1 and b[3] <= H + 1):
            raise ValueError(
                f"`objects` box {tuple(b)} of {obj_name!r} is outside the {W}x{H} cover "
                f"{name!r} (boxes are at the cover's size as built)"
            )
    if job["augment"]:
        if rng.random() < 0.5:  # mirror the cover and its object boxes: x -> W - x
            cover = cover[:, ::-1]
            objects = [(n, (W - b[2], b[1], W - b[0], b[3])) for n, b in objects]
        cover = np.ascontiguousarray(cover)
    if logo.mask.shape[0] > H or logo.mask.shape[1] > W:
        raise ValueError(f"logo {logo.name!r} {logo.mask.shape} is larger than the {W}x{H} cover")
    weight = round(float(rng.uniform(*job["weight_range"])), 2)
    stego = blend_logo(cover, logo.rgb, logo.mask, weight=weight, rng=rng, quantize=job["quantize"])
    cover_id = f"{name}-{job['index']:06d}"
    image_name = f"{cover_id}_{weight}.png"
    _atomic_save_png(Path(job["out_dir"]) / "images" / image_name, stego.image)
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
    return {"index": job["index"], "records": records, "files": _digests(job, records)}


def _invisible_item(job: dict) -> dict:
    from .invisible import bit_accuracy, decode_invisible, embed_invisible, jpeg, psnr

    rng = np.random.default_rng(job["seed"])
    name, cover = _cover_array(job["cover"], None)
    method = job["methods"][job["index"] % len(job["methods"])]
    bits = rng.integers(0, 2, job["n_bits"]).astype(bool)
    try:
        stego = embed_invisible(cover, bits, method)
    except ValueError as error:
        entry = job["cover"] if isinstance(job["cover"], (str, Path)) else name
        raise ValueError(f"`covers` entry {entry}: {error}") from None
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
        answer = (
            f"[template] The watermark is embedded invisibly ({method}): no logo or pattern "
            f"is drawn on the image. {FORMAT_LINE.format(level=level)}."
        )
        rec.update(
            to_record(rec["image"], question, answer, id=cover_id, visibility=level, gt_score=gt)
        )
    return {"index": job["index"], "records": [rec], "files": _digests(job, [rec])}


def _file_digest(path: Path) -> dict:
    data = path.read_bytes()
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _digests(job: dict, records: list[dict]) -> dict:
    """Size and SHA-256 of the image files an item wrote (checked on resume)."""
    images = sorted({r["image"] for r in records if "image" in r})
    return {im: _file_digest(Path(job["out_dir"]) / im) for im in images}


def _fingerprint(jobs: list[dict]) -> dict:
    """What fixes a build's files: everything of the jobs but the output folder, made JSON-able
    (cover arrays, logos and cover files by a digest of their bytes)."""
    files: dict[str, str] = {}

    def cover_file(value) -> list:
        key = str(value)
        if key not in files:
            if not Path(key).is_file():
                raise ValueError(f"`covers` entry {key} is not a file")
            files[key] = _file_digest(Path(key))["sha256"]
        return [key, "sha256:" + files[key]]

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
            return {
                k: cover_file(v) if k == "cover" and isinstance(v, (str, Path)) else plain(v)
                for k, v in value.items()
                if k != "out_dir"
            }
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, (str, int, float, bool)) or value is None:
            return value
        return getattr(value, "__qualname__", type(value).__qualname__)

    def sha(value) -> str:
        return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()

    plain_jobs = plain(jobs)
    parts = {k: sha([job.get(k) for job in plain_jobs]) for k in sorted(plain_jobs[0])}
    return {
        "format": "wmarkgpt-build-v1",
        "items": len(jobs),
        "sha256": sha(plain_jobs),
        "parts": parts,  # per setting, to name the one that differs
    }


_CORE = ("format", "items", "sha256")


def _same_build(stored: Any, jobs: list[dict], fingerprint: dict, out_dir: Path) -> bool:
    """Whether `stored` (build.json) is the build of `jobs` (True), of its first items (False:
    the build is extended), else a ValueError naming what differs."""
    if not isinstance(stored, dict):
        stored = {}
    core = {k: stored.get(k) for k in _CORE}
    if core == {k: fingerprint[k] for k in _CORE}:
        return True
    k = stored.get("items")
    if isinstance(k, int) and 0 < k < len(jobs):
        head = _fingerprint(jobs[:k])
        if core == {key: head[key] for key in _CORE}:
            return False  # the same build with more items: item i does not depend on n
    if isinstance(k, int) and k != len(jobs):
        what = f"n = {k} there, {len(jobs)} now (only a larger n with the same settings resumes)"
    else:
        parts = stored.get("parts") if isinstance(stored.get("parts"), dict) else {}
        names = [p for p, d in fingerprint["parts"].items() if parts.get(p) != d]
        what = f"differs in: {', '.join(names)}" if parts and names else "differs"
    raise ValueError(
        f"`out_dir` {out_dir} holds a build with other inputs or settings ({what}); resume "
        "only with the same call, or use a new folder"
    )


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
        try:
            stored = json.loads(stamp.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(
                f"{stamp} is corrupt ({error}): the settings of the build in `out_dir` are "
                "unknown; use a new folder, or delete the folder to rebuild"
            ) from None
        if not _same_build(stored, jobs, fingerprint, out_dir):
            _atomic_write_json(stamp, fingerprint)
    elif done_dir.exists() and any(done_dir.iterdir()):
        raise ValueError(f"`out_dir` {out_dir} holds records of an unknown build; use a new folder")
    else:
        _atomic_write_json(stamp, fingerprint)
    results: dict[int, list[dict]] = {}
    todo = []
    for job in jobs:
        path = done_dir / f"{job['index']:06d}.json"
        done = _load_done(path, out_dir) if path.exists() else None
        if done is not None:  # resume: this item was written (whole) by an earlier run
            results[job["index"]] = done
        else:
            todo.append(job)

    def finish(result: dict) -> None:
        stored = {"records": result["records"], "files": result["files"]}
        _atomic_write_json(done_dir / f"{result['index']:06d}.json", stored)
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
            pool = ProcessPoolExecutor(max_workers=workers)
            try:
                futures = [pool.submit(worker, job) for job in todo]
                for future in as_completed(futures):
                    finish(future.result())
                    bar.update()
            except BaseException:  # Ctrl-C or a failed item: drop the items not started
                pool.shutdown(wait=True, cancel_futures=True)
                raise
            pool.shutdown(wait=True)
    finally:
        bar.close()
    records = [r for i in sorted(results) for r in results[i]]
    _atomic_write_json(out_dir / "index.json", records)
    return records


def _load_done(path: Path, out_dir: Path) -> list[dict] | None:
    """The records of a finished item, or None (with a warning) when its record file is corrupt
    or an image it lists is missing or changed: then the item is made again."""
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        warnings.warn(f"{path} is corrupt ({error}); the item is made again", stacklevel=3)
        return None
    if isinstance(stored, list):  # written before the digests were kept: existence only
        records, files = stored, None
    elif isinstance(stored, dict) and isinstance(stored.get("records"), list):
        records, files = stored["records"], stored.get("files")
    else:
        warnings.warn(f"{path} is not a record file; the item is made again", stacklevel=3)
        return None
    images = files if isinstance(files, dict) else {r.get("image"): None for r in records}
    for image, expected in images.items():
        file = out_dir / str(image)
        if not file.is_file() or (expected is not None and _file_digest(file) != expected):
            warnings.warn(
                f"{file} (listed in {path}) is missing or changed; the item is made again",
                stacklevel=3,
            )
            return None
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
        Cover name (file name, file stem or given name) -> ``[(name, box), ...]`` at the
        cover's size as built (``size x size``, or its own size when `size` is None); e.g.
        :func:`load_coco_objects`.
    coco_json : path, optional
        COCO instances file (:func:`load_coco_objects`), keyed by file name; its boxes are
        rescaled to each cover's size as built.
    describer : callable, optional
        ``describer(image_path, objects, wm_box, level) -> str`` (e.g. an LLM called with
        :func:`~wmarkgpt.vqa.description_prompt`); default
        :func:`~wmarkgpt.vqa.template_description`. Must be picklable when ``workers > 1``.
    weight_range : tuple of float, default=(0, 0.25)
    augment : bool, default=False
        Random horizontal flips of the covers (object boxes flipped with them).
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
    if 0 < b < 0.005:
        warnings.warn(
            f"`weight_range` {weight_range}: weights are rounded to 2 decimals, so every "
            "weight is 0.0 (no watermark)",
            stacklevel=2,
        )
    table: dict[str, Any] = {}
    for k, v in (objects or {}).items():  # by file name and by stem
        table[str(k)] = v
        table.setdefault(Path(str(k)).stem, v)
    if coco_json is not None:
        for k, value in _read_coco(coco_json).items():
            table[k] = table[Path(k).stem] = value  # ((width, height), boxes): scaled below
    jobs = []
    for i in range(n):
        cover = covers[i % len(covers)]
        if isinstance(cover, (str, Path)):
            keys = [Path(cover).name, Path(cover).stem]
        else:
            keys = [cover[0] if isinstance(cover, tuple) else "cover"]
        found: Any = next((table[k] for k in keys if k in table), [])
        if isinstance(found, tuple):  # COCO boxes at the COCO image's size
            src, boxes = found
            found = _scale_objects(boxes, src, _built_size(cover, size))
        jobs.append(
            {
                "index": i,
                "seed": seeds[i],
                "cover": cover,
                "logos": list(logos),
                "size": size,
                "objects": found,
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
        raise ValueError(
            "`objects` (or `coco_json`) must give objects for position questions: no key "
            "matches a cover's file name, stem or given name"
        )
    if table and not any(job["objects"] for job in jobs):
        warnings.warn(
            "no key of `objects` / `coco_json` matches a cover's file name, stem or given name: "
            "the records have no objects",
            stacklevel=2,
        )
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

    for arg, value in (("methods", methods), ("attacks", attacks)):
        if isinstance(value, str):
            raise ValueError(f"`{arg}` must be a sequence of str, not a str: use [{value!r}]")
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
        for k, s in enumerate(gt_scores):
            try:
                score_to_level(s)
            except (TypeError, ValueError) as error:
                raise ValueError(f"`gt_scores`[{k}]: {error}".replace("`s` ", "")) from None
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
