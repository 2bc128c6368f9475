"""The resumable per-shard recaptioning pipeline: webdataset shard in, parquet out.

Per input shard ``<stem>.tar`` the output directory gets ``<stem>.parquet`` (columns of
:data:`SCHEMA`, one row per sample, in tar order) and ``<stem>_stats.json``. Work in progress is
kept as part files ``.parts/<stem>/part-NNNNN.parquet`` every ``checkpoint_every`` rows; a shard
is done only when its stats file exists; every write goes to a temporary name and then
``os.replace`` (atomic on POSIX). A killed run resumes from the last part and yields a table equal
to an uninterrupted run (failed rows stay re-selectable: rerun with ``force=True`` or filter on
``status``; img2dataset#333/#452).
"""

from __future__ import annotations

import io
import json
import os
import re
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .captioners import run_config_of
from .shards import Sample, check_image_keys, check_shard, iter_samples

STATUSES = ("ok", "decode_error", "caption_error")
COLUMNS = ("key", "url", "org_caption", "re_caption", "status", "error", "n_chars")


def schema():
    """The pyarrow schema of a recaption table."""
    import pyarrow as pa

    return pa.schema(
        [
            ("key", pa.string()),
            ("url", pa.string()),
            ("org_caption", pa.string()),
            ("re_caption", pa.string()),
            ("status", pa.string()),
            ("error", pa.string()),
            ("n_chars", pa.int64()),
        ]
    )


class ResumeMismatchError(RuntimeError):
    """Resuming with a different model, prompt or generation parameters than the partial run."""


@dataclass
class RunStats:
    """What one call of :func:`recaption_shards` did.

    Attributes
    ----------
    shards_done : list of str
        Shards finished in this call.
    shards_skipped : list of str
        Shards already finished before (stats file present).
    counts : dict of str to int
        Rows per status over the shards finished in this call.
    seconds : float
        Wall time of the call.
    """

    shards_done: list[str] = field(default_factory=list)
    shards_skipped: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATUSES, 0))
    seconds: float = 0.0

    @property
    def images_per_second(self) -> float:
        """Rows per second over the call (0 when nothing ran)."""
        n = sum(self.counts.values())
        return n / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {**asdict(self), "images_per_second": self.images_per_second}


def shard_stem(shard: str) -> str:
    """Output stem of a shard: its file name without ``.tar``/``.tar.gz``."""
    name = os.path.basename(shard.rstrip("/"))
    for suffix in (".tar.gz", ".tgz", ".tar"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _atomic_write_table(path: Path, table) -> None:
    import pyarrow.parquet as pq

    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def _write_stats(path: Path, stats: dict[str, Any]) -> None:
    _atomic_write_bytes(path, json.dumps(stats, indent=1, sort_keys=True).encode())


def _rows_to_table(rows: list[dict[str, Any]]):
    import pyarrow as pa

    return pa.Table.from_pylist(rows, schema=schema())


def _decode(sample: Sample):
    from PIL import Image

    if sample.image is None:
        raise ValueError("no image member")
    image = Image.open(io.BytesIO(sample.image))
    image.load()
    return image.convert("RGB")


_ADDRESS = re.compile(r" (?:object )?at 0x[0-9a-fA-F]+")


def error_text(err: BaseException) -> str:
    """``"Type: message"`` with memory addresses (``<... object at 0x...>``) removed, so that
    the ``error`` column is the same in every process (resume and multi-rank runs equal)."""
    return _ADDRESS.sub("", f"{type(err).__name__}: {err}")


def _row(sample: Sample, caption: str, status: str, error: str) -> dict[str, Any]:
    return {
        "key": sample.key,
        "url": sample.url,
        "org_caption": sample.org_caption,
        "re_caption": caption,
        "status": status,
        "error": error,
        "n_chars": len(caption),
    }


def _decode_batch(samples: list[Sample]) -> tuple[list[Sample], list[Any], list[Any]]:
    """Decode a batch: ``(samples, images or None, error rows or None)`` (runs in a thread)."""
    images: list[Any] = []
    errors: list[Any] = []
    for sample in samples:
        try:
            images.append(_decode(sample))
            errors.append(None)
        except Exception as err:  # PIL raises many types on corrupt data
            images.append(None)
            errors.append(_row(sample, "", "decode_error", error_text(err)))
    return samples, images, errors


def _caption_batch(captioner: Any, decoded: tuple[list[Sample], list[Any], list[Any]]):
    """Caption one decoded batch; decode failures and caption exceptions become rows.

    An ``Exception`` raised by the captioner on the batch is retried image by image; what still
    fails is a ``caption_error`` row. A ``BaseException`` that is not an ``Exception`` (a kill,
    ``KeyboardInterrupt``) propagates: the shard resumes from its last part.
    """
    samples, decoded_images, errors = decoded
    rows: list[dict[str, Any] | None] = list(errors)
    where = [i for i, im in enumerate(decoded_images) if im is not None]
    images = [decoded_images[i] for i in where]
    if images:
        try:
            captions = list(captioner(images, None))
            if len(captions) != len(images):
                raise RuntimeError(f"captioner returned {len(captions)} captions for {len(images)}")
            for i, caption in zip(where, captions, strict=True):
                rows[i] = _row(samples[i], str(caption), "ok", "")
        except Exception:
            for i, image in zip(where, images, strict=True):
                try:
                    (caption,) = captioner([image], None)
                    rows[i] = _row(samples[i], str(caption), "ok", "")
                except Exception as err:
                    rows[i] = _row(samples[i], "", "caption_error", error_text(err))
    return [r for r in rows if r is not None]


def _batches(
    shard: str, skip: int, batch_size: int, image_keys: str | list[str], text_key: str
) -> Iterator[list[Sample]]:
    batch: list[Sample] = []
    for i, sample in enumerate(iter_samples(shard, image_keys=image_keys, text_key=text_key)):
        if i < skip:
            continue
        batch.append(sample)
        if len(batch) >= batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


def _prefetched(
    batches: Iterator[list[Sample]],
) -> Iterator[tuple[list[Sample], list[Any], list[Any]]]:
    """Read and decode the next batch in a thread while the current one is captioned (PIL and
    most captioners release the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    def load() -> Any:
        batch = next(batches, None)
        return None if batch is None else _decode_batch(batch)

    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(load)
        while True:
            item = future.result()
            if item is None:
                return
            future = pool.submit(load)
            yield item


def _check_config(saved: dict[str, Any], current: dict[str, Any], where: Path, force: bool):
    if saved != current and not force:
        raise ResumeMismatchError(
            f"{where} was written with run config {saved}, this run has {current}; "
            "pass force=True to start the shard again"
        )


def caption_shard(
    shard: str,
    out_dir: str | os.PathLike,
    captioner: Any,
    *,
    batch_size: int = 64,
    checkpoint_every: int = 512,
    resume: bool = True,
    force: bool = False,
    image_keys: str | list[str] = "jpg;png;jpeg;webp",
    text_key: str = "txt",
    progress: Any = None,
) -> dict[str, Any] | None:
    """Recaption one shard (the per-shard function both engines call).

    Parameters
    ----------
    shard, out_dir, captioner, batch_size, checkpoint_every, resume, force, image_keys, text_key
        As in :func:`recaption_shards`.
    progress : callable, optional
        Called with the number of rows finished after each batch.

    Returns
    -------
    dict or None
        The shard's stats (also written as ``<stem>_stats.json``), ``None`` when it was already
        done and is skipped.

    Raises
    ------
    ResumeMismatchError
        If earlier output of this shard has another run config and `force` is False.
    FileNotFoundError, ValueError
        If a local shard is missing or not a tar file, or `text_key` matches nothing in its first
        samples (checked before the first row is written).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out_dir)
    stem = shard_stem(shard)
    final, stats_path = out / f"{stem}.parquet", out / f"{stem}_stats.json"
    parts_dir = out / ".parts" / stem
    config = run_config_of(captioner)
    if stats_path.exists() and not force:
        saved = json.loads(stats_path.read_text()).get("run_config", {})
        _check_config(saved, config, stats_path, force)
        if resume:
            return None
    if force or not resume:
        for old in sorted(parts_dir.glob("*")) if parts_dir.exists() else []:
            old.unlink()
        stats_path.unlink(missing_ok=True)
    parts_dir.mkdir(parents=True, exist_ok=True)
    meta_path = parts_dir / "run_config.json"
    if meta_path.exists():
        _check_config(json.loads(meta_path.read_text()), config, meta_path, force)
    else:
        _atomic_write_bytes(meta_path, json.dumps(config, sort_keys=True).encode())
    parts = sorted(parts_dir.glob("part-*.parquet"))
    n_done = sum(pq.read_metadata(p).num_rows for p in parts)
    if n_done == 0:
        check_shard(shard, text_key)
    start = time.perf_counter()
    rates: list[float] = []
    pending: list[dict[str, Any]] = []
    next_part = len(parts)

    def flush_part() -> None:
        nonlocal pending, next_part
        if pending:
            _atomic_write_table(
                parts_dir / f"part-{next_part:05d}.parquet", _rows_to_table(pending)
            )
            next_part += 1
            pending = []

    t_prev = time.perf_counter()
    for decoded in _prefetched(_batches(shard, n_done, batch_size, image_keys, text_key)):
        rows = _caption_batch(captioner, decoded)
        now = time.perf_counter()
        if now > t_prev:
            rates.append(len(rows) / (now - t_prev))
        t_prev = now
        pending.extend(rows)
        if progress is not None:
            progress(len(rows))
        if len(pending) >= checkpoint_every:
            flush_part()
    flush_part()
    tables = [pq.read_table(p, schema=schema()) for p in sorted(parts_dir.glob("part-*.parquet"))]
    table = pa.concat_tables(tables).combine_chunks() if tables else _rows_to_table([])
    keys = table.column("key").to_pylist()
    if len(set(keys)) != len(keys):
        raise RuntimeError(f"{shard}: duplicate keys in the output; rerun with force=True")
    _atomic_write_table(final, table)
    status = table.column("status").to_pylist()
    counts = {s: status.count(s) for s in STATUSES}
    lengths = [
        len(c.split())
        for c, s in zip(table.column("re_caption").to_pylist(), status, strict=True)
        if s == "ok"
    ]
    org_lengths = [len(c.split()) for c in table.column("org_caption").to_pylist()]
    pct = np.percentile(rates, [5, 50, 95]).tolist() if rates else [0.0, 0.0, 0.0]
    stats = {
        "shard": shard,
        "rows": table.num_rows,
        "counts": counts,
        "success_rate": counts["ok"] / table.num_rows if table.num_rows else 0.0,
        "seconds_this_run": time.perf_counter() - start,
        "rows_resumed": n_done,
        "img_per_s_p5_p50_p95": pct,
        "mean_words_re_caption": float(np.mean(lengths)) if lengths else 0.0,
        "mean_words_org_caption": float(np.mean(org_lengths)) if org_lengths else 0.0,
        "run_config": config,
    }
    _write_stats(stats_path, stats)
    for p in parts_dir.glob("*"):
        p.unlink()
    parts_dir.rmdir()
    return stats


def recaption_shards(
    shards: Sequence[str] | str,
    out_dir: str | os.PathLike,
    captioner: Any,
    *,
    rank: int = 0,
    world_size: int = 1,
    batch_size: int = 64,
    checkpoint_every: int = 512,
    resume: bool = True,
    force: bool = False,
    image_keys: str | list[str] = "jpg;png;jpeg;webp",
    text_key: str = "txt",
    show_progress: bool = True,
) -> RunStats:
    """Recaption the shards of this rank (``assign_shards``), resumably.

    Output schema per shard (Recap-DataComp-1B README: ``url``, ``re_caption``,
    ``org_caption``; plus ``key``, ``status`` in {ok, decode_error, caption_error}, ``error``,
    ``n_chars``).

    Parameters
    ----------
    shards : sequence of str or str
        Shard paths or a brace pattern (see :func:`expand_shards`).
    out_dir : path
        Output directory (created).
    captioner : Captioner
        ``captioner(images, prompts) -> captions``.
    rank, world_size : int, default=0, 1
        This process's share: ``assign_shards(shards, rank, world_size)``; no communication.
    batch_size : int, default=64
        Samples decoded and passed to the captioner at once.
    checkpoint_every : int, default=512
        Rows per part file (the most work a kill can lose).
    resume : bool, default=True
        Skip finished shards and continue partial ones.
    force : bool, default=False
        Redo shards even if finished, and ignore a run-config mismatch.
    image_keys : str, default="jpg;png;jpeg;webp"
        Image member extensions.
    text_key : str, default="txt"
        Original caption member (``"json:org_caption"`` reads a JSON field).
    show_progress : bool, default=True
        tqdm progress bar over rows.

    Returns
    -------
    RunStats

    Raises
    ------
    FileNotFoundError
        If a local shard does not exist.
    ValueError
        If `shards` is empty, a local shard is not a tar file, `text_key` matches nothing in
        the first samples of a shard, `image_keys` is unknown, or an int argument is out of range.
    ResumeMismatchError
        If partial output was written with another run config and `force` is False.
    """
    from .distributed import assign_shards
    from .shards import expand_shards

    for name, value in (("batch_size", batch_size), ("checkpoint_every", checkpoint_every)):
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 1:
            raise ValueError(f"`{name}` must be an int >= 1, got {value!r}")
    check_image_keys(image_keys)
    if not callable(captioner):
        raise TypeError("`captioner` must be callable: captioner(images, prompts) -> captions")
    paths = expand_shards(shards if isinstance(shards, str) else list(shards))
    mine = assign_shards(paths, rank, world_size)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    stats = RunStats()
    t0 = time.perf_counter()
    from tqdm.auto import tqdm

    with tqdm(desc=f"recaption rank {rank}", unit="img", disable=not show_progress) as bar:
        for shard in mine:
            result = caption_shard(
                shard,
                out_dir,
                captioner,
                batch_size=batch_size,
                checkpoint_every=checkpoint_every,
                resume=resume,
                force=force,
                image_keys=image_keys,
                text_key=text_key,
                progress=bar.update,
            )
            if result is None:
                stats.shards_skipped.append(shard)
            else:
                stats.shards_done.append(shard)
                for k, v in result["counts"].items():
                    stats.counts[k] += v
    stats.seconds = time.perf_counter() - t0
    n_rows = sum(stats.counts.values())
    if n_rows and not stats.counts.get("ok"):
        warnings.warn(
            f"none of the {n_rows} rows captioned by rank {rank} succeeded "
            f"({dict(stats.counts)}); see the `error` column",
            RuntimeWarning,
            stacklevel=2,
        )
    return stats


def read_recaptions(out_dir: str | os.PathLike, shards: Sequence[str] | None = None):
    """Read finished shard tables of `out_dir` (all, or those of `shards`) as one pyarrow Table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out_dir)
    if shards is None:
        files = sorted(out.glob("*.parquet"))
    else:
        files = [out / f"{shard_stem(s)}.parquet" for s in shards]
    return pa.concat_tables([pq.read_table(f, schema=schema()) for f in files])
