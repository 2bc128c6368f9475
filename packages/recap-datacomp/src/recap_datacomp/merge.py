"""Merge recaptions back into webdataset shards as ``<key>.recap.txt`` members."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from .pipeline import shard_stem


def merge_recaptions(
    shards: Sequence[str] | str,
    recap_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    only_ok: bool = True,
) -> list[str]:
    """Write new shards that add each sample's recaption as ``<key>.recap.txt``.

    Parameters
    ----------
    shards : sequence of str or str
        The input shards (or a brace pattern).
    recap_dir : path
        Output of :func:`recaption_shards` (``<stem>.parquet`` per shard).
    out_dir : path
        Where the new shards go (same file names).
    only_ok : bool, default=True
        Add ``recap.txt`` only for rows with status ``ok`` (others get none: the mixer falls back
        to the original caption).

    Returns
    -------
    list of str
        The written shard paths.

    Raises
    ------
    FileNotFoundError
        If a shard has no finished recaption table.
    ValueError
        If a shard's keys differ from its table's keys (refuses a mismatched merge).
    """
    import pyarrow.parquet as pq
    import webdataset as wds

    from .shards import expand_shards

    paths = expand_shards(shards) if isinstance(shards, str) else list(shards)
    if not paths:
        raise ValueError("`shards` is empty")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for shard in paths:
        table_path = Path(recap_dir) / f"{shard_stem(shard)}.parquet"
        if (
            not table_path.exists()
            or not table_path.with_name(f"{shard_stem(shard)}_stats.json").exists()
        ):
            raise FileNotFoundError(f"no finished recaption table for {shard}: {table_path}")
        table = pq.read_table(table_path).to_pydict()
        recaps = {
            k: (c if (s == "ok" or not only_ok) else None)
            for k, c, s in zip(table["key"], table["re_caption"], table["status"], strict=True)
        }
        samples = list(wds.DataPipeline(wds.SimpleShardList([shard]), wds.tarfile_to_samples()))
        keys = [str(s["__key__"]) for s in samples]
        if sorted(keys) != sorted(recaps):
            missing = sorted(set(keys) ^ set(recaps))[:3]
            raise ValueError(f"key mismatch between {shard} and {table_path}, e.g. {missing}")
        target = out / os.path.basename(shard)
        tmp = target.with_name(f".{target.name}.tmp")
        with wds.TarWriter(str(tmp)) as sink:
            for sample in samples:
                new = {
                    k: v
                    for k, v in sample.items()
                    if k != "__url__" and not k.startswith("__local")
                }
                recap = recaps[str(sample["__key__"])]
                if recap is not None:
                    new["recap.txt"] = recap
                sink.write(new)
        os.replace(tmp, target)
        written.append(str(target))
    return written
