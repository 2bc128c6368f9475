"""Write a LAION-C-style corrupted copy of an image folder, in parallel and resumably.

Every source image ``SRC/<rel>/<stem>.<ext>`` becomes, for each distortion and level,
``OUT/<distortion>/intensity_level_<k>/<rel>/<stem>_<distortion>_<k>.JPEG`` (the official
layout and naming, without the official ``name[:-4]`` dot bug), saved as JPEG with quality 100 and
no chroma subsampling (``apply_distortions.py``), after the full official pipeline
(:func:`laion_c.functional.corrupt`).

Determinism: each (image, distortion, level) draws from its own
``SeedSequence([seed, crc32(rel path), distortion index, level])``, so the bytes do not depend on
the number of workers, the order, interruptions or the sharding (``shard=(i, n)`` takes
``sorted(paths)[i::n]``). Files are written to a temporary name and renamed (atomic), so an
existing output is always complete and a rerun only writes what is missing. ``OUT/manifest.json``
records the parameters; rerunning with other parameters raises unless ``overwrite=True``.
Sources that share a folder and a stem (``a.jpg``, ``a.png``) would share output names, so the
build refuses them up front, listing every such group (across all shards).
"""

from __future__ import annotations

import hashlib
import json
import numbers
import os
import zlib
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
from PIL import Image

from icml25_core import check_scalar, progress

from ._image import read_rgb
from ._version import __version__
from .functional import distort, preprocess
from .params import DISTORTIONS, LEVELS, check_level, preprocess_sizes, resolve
from .tiles import image_files, select_tiles, tile_sizes_needed

MANIFEST = "manifest.json"
_TILES: dict = {}  # a worker's tile pool (select_tiles' output), set by _init_worker


def output_path(out: Path, rel: Path, name: str, level: int) -> Path:
    """``OUT/<name>/intensity_level_<k>/<rel parent>/<stem>_<name>_<k>.JPEG``."""
    return out / name / f"intensity_level_{level}" / rel.parent / f"{rel.stem}_{name}_{level}.JPEG"


def stem_collisions(rels) -> list[list[Path]]:
    """Groups of source paths (relative to `src`) that share a folder and a stem, such as
    ``cat/a.jpg`` and ``cat/a.png``: they would map to one output name."""
    groups: dict[tuple[Path, str], list[Path]] = {}
    for rel in rels:
        groups.setdefault((rel.parent, rel.stem), []).append(rel)
    return [sorted(group) for group in groups.values() if len(group) > 1]


def image_seed(seed: int, rel: Path, name: str, level: int) -> np.random.SeedSequence:
    """``SeedSequence([seed, crc32(rel path as posix), distortion index, level])``."""
    crc = zlib.crc32(rel.as_posix().encode("utf-8"))
    return np.random.SeedSequence([seed, crc, DISTORTIONS.index(name), level])


def _init_worker(tiles):
    _TILES.clear()
    _TILES.update(tiles)


def _process(src: Path, out: Path, rel: Path, cells, seed: int) -> int:
    """Write the missing outputs of one source image; returns how many were written.

    Equal to :func:`laion_c.functional.corrupt` per cell, but the image is decoded once and
    each of the three official preprocessings (``Resize`` + ``CenterCrop`` sizes, see
    :func:`laion_c.params.preprocess_sizes`) is computed once instead of once per cell.

    Raises
    ------
    ValueError
        If the source file is not an image Pillow can read (the message names the file).
    """
    todo = [(n, k) for n, k in cells if not output_path(out, rel, n, k).exists()]
    if not todo:
        return 0
    image = read_rgb(src / rel, "src")
    prepared: dict[tuple[int, int], np.ndarray] = {}
    for name, level in todo:
        size = preprocess_sizes(name, level)
        if size not in prepared:
            prepared[size] = np.asarray(preprocess(image, name, level))
        rng = np.random.default_rng(image_seed(seed, rel, name, level))
        result = distort(prepared[size], name, level, rng=rng, tiles=_TILES or None)
        target = output_path(out, rel, name, level)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        Image.fromarray(result).save(tmp, format="JPEG", quality=100, subsampling=0)
        os.replace(tmp, target)
    return len(todo)


def _tiles_digest(tiles) -> dict:
    return {
        str(t): hashlib.sha256(lib.tiles.tobytes()).hexdigest()[:16] for t, lib in tiles.items()
    }


def _check_manifest(out: Path, config: dict, overwrite: bool) -> None:
    path = out / MANIFEST
    if path.exists():
        previous = json.loads(path.read_text(encoding="utf-8"))
        if previous != config:
            if not overwrite:
                raise RuntimeError(
                    f"{out} was built with other parameters ({previous}); pass overwrite=True "
                    "(CLI: --overwrite) to delete its outputs and rebuild, or choose another OUT"
                )
            for name in previous.get("distortions", []):
                _remove_tree(out / name)
    out.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{MANIFEST}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(config, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _remove_tree(folder: Path) -> None:
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    folder.rmdir()


def _parse_shard(shard) -> tuple[int, int]:
    try:
        index, count = (int(v) for v in shard)
    except (TypeError, ValueError):
        raise ValueError(f"`shard` must be a pair (i, n) with 0 <= i < n, got {shard!r}") from None
    if not 0 <= index < count:
        raise ValueError(f"`shard` must be a pair (i, n) with 0 <= i < n, got {shard!r}")
    return index, count


def _run_pool(workers: int, tiles: dict, tasks: list, bar) -> int:
    """Run ``_process(*task)`` for every task in `workers` processes; the files written.

    Jobs are collected as they finish; on the first error the queued ones are cancelled (the
    running ones finish, every written file is complete) and the error is raised.
    """
    written = 0
    with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(tiles,)) as pool:
        jobs = [pool.submit(_process, *task) for task in tasks]
        try:
            for job in as_completed(jobs):
                written += job.result()
                bar.update()
        except BaseException:
            for job in jobs:
                job.cancel()
            raise
    return written


def build_dataset(
    src,
    out,
    *,
    tiles=None,
    distortions=DISTORTIONS,
    levels=LEVELS,
    seed: int = 0,
    workers: int = 1,
    shard=(0, 1),
    overwrite: bool = False,
) -> dict:
    """Corrupt every image under `src` at every (distortion, level) into `out`.

    Parameters
    ----------
    src : str or Path
        Folder of source images (searched recursively; sub-folders are mirrored).
    out : str or Path
        Output root (created).
    tiles : TileLibrary or dict of int to TileLibrary
        Required when mosaic or stickers is built (t x t tiles per mosaic level, 16 x 16).
    distortions : sequence of str, default all six
    levels : sequence of int, default 1..5
    seed : int, default=0
    workers : int, default=1
        Processes (``ProcessPoolExecutor``); 1 runs in this process.
    shard : (i, n), default (0, 1)
        Build only ``sorted(paths)[i::n]`` (Slurm array task i of n).
    overwrite : bool, default=False
        Rebuild when `out` holds a build with other parameters.

    Returns
    -------
    dict
        ``{"images": sources in this shard, "written": files written, "skipped": files that
        already existed}``.

    Raises
    ------
    FileNotFoundError
        If `src` is not a folder.
    ValueError
        No image in `src`, a source file Pillow cannot read (named), two sources in one folder
        with one stem (``a.jpg`` and ``a.png``: one output name; all such groups are listed,
        checked before anything is written), `out` equal to or inside `src`, unknown
        distortion, bad level, workers < 1, bad shard, negative seed.
    TypeError
        If mosaic or stickers is requested without `tiles`.
    RuntimeError
        If `out` was built with other parameters and `overwrite` is False.
    """
    src, out = Path(src), Path(out)
    names = list(
        dict.fromkeys(
            resolve(n) for n in ([distortions] if isinstance(distortions, str) else distortions)
        )
    )
    levels = sorted(
        {
            check_level(k, "levels")
            for k in ([levels] if isinstance(levels, numbers.Integral) else levels)
        }
    )
    if not names or not levels:
        raise ValueError("`distortions` and `levels` must not be empty")
    seed = int(check_scalar(seed, "seed", kind=int, low=0))
    workers = int(check_scalar(workers, "workers", kind=int, low=1))
    index, count = _parse_shard(shard)
    paths = image_files(src, "src")
    if out.resolve().is_relative_to(src.resolve()):
        raise ValueError(
            f"`out` {out} must not be `src` {src} or lie inside it (a rerun would read the "
            "corrupted copies as sources)"
        )
    all_rels = [p.relative_to(src) for p in paths]
    collisions = stem_collisions(all_rels)
    if collisions:
        listed = "; ".join(" and ".join(r.as_posix() for r in group) for group in collisions[:10])
        more = f" (and {len(collisions) - 10} more)" if len(collisions) > 10 else ""
        raise ValueError(
            f"`src` {src}: {len(collisions)} group(s) of images share a folder and a file stem, "
            f"so they would be written to one output name <stem>_<distortion>_<k>.JPEG: "
            f"{listed}{more}; rename or remove all but one of each"
        )
    needed = {t: select_tiles(tiles, t) for t in tile_sizes_needed(names, levels)}
    rels = all_rels[index::count]
    config = {
        "laion-c": __version__,
        "distortions": names,
        "levels": levels,
        "seed": seed,
        "tiles": _tiles_digest(needed),
        "jpeg": {"quality": 100, "subsampling": 0},
    }
    _check_manifest(out, config, overwrite)
    cells = [(n, k) for n in names for k in levels]
    total = len(rels) * len(cells)
    written = 0
    with progress(total=len(rels), desc="build", unit="img") as bar:
        if workers == 1:
            _init_worker(needed)
            for rel in rels:
                written += _process(src, out, rel, cells, seed)
                bar.update()
        else:
            written = _run_pool(
                workers, needed, [(src, out, rel, cells, seed) for rel in rels], bar
            )
    return {"images": len(rels), "written": written, "skipped": total - written}
