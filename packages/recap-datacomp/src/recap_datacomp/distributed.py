"""Scale-out: shards assigned to ranks with no communication; torchrun and Ray Data engines.

Both engines call the same per-shard function, :func:`recap_datacomp.pipeline.caption_shard`, so
resume semantics are identical.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def assign_shards(shards: Sequence[str], rank: int, world_size: int) -> list[str]:
    """The shards of `rank`: sorted, then round-robin (``sorted(shards)[rank::world_size]``).

    Parameters
    ----------
    shards : sequence of str
        All shards.
    rank : int
        This process, ``0 <= rank < world_size``.
    world_size : int
        Number of processes, >= 1.

    Returns
    -------
    list of str
        A partition over ranks: the union over ranks is all shards, pairwise disjoint.

    Raises
    ------
    ValueError
        If `shards` is empty or `rank`/`world_size` are out of range.
    """
    if isinstance(shards, str):
        raise TypeError("`shards` must be a sequence of paths, not one str")
    unique = sorted(set(shards))
    if not unique:
        raise ValueError("`shards` is empty")
    for name, value in (("rank", rank), ("world_size", world_size)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"`{name}` must be an int, got {type(value).__name__}")
    if world_size < 1:
        raise ValueError(f"`world_size` must be >= 1, got {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"`rank` must be in [0, {world_size}), got {rank}")
    return unique[rank::world_size]


def run_torchrun(
    shards: Sequence[str] | str,
    out_dir: str | os.PathLike,
    captioner_factory: Callable[[], Any],
    *,
    merge_timeout_s: float = 3600.0,
    **kwargs: Any,
) -> dict[str, Any]:
    """Run the pipeline as one rank of ``torchrun`` (reads ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``).

    No collectives: each rank takes ``assign_shards(shards, RANK, WORLD_SIZE)``, writes
    ``_rank<r>_stats.json``; rank 0 waits for every rank's file (a file barrier) and merges them
    into ``run_stats.json``. ``LOCAL_RANK`` selects the CUDA device where there is one.

    Parameters
    ----------
    shards : sequence of str or str
        All shards (every rank passes the same list).
    out_dir : path
    captioner_factory : callable
        Builds the captioner in this process (e.g. on ``cuda:LOCAL_RANK``).
    merge_timeout_s : float, default=3600
        How long rank 0 waits for the other ranks.
    **kwargs
        Passed to :func:`recaption_shards`.

    Returns
    -------
    dict
        This rank's stats; on rank 0 the merged stats.
    """
    from .pipeline import recaption_shards

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.set_device(local % torch.cuda.device_count())
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    out = Path(out_dir)
    stats = recaption_shards(
        shards, out, captioner_factory(), rank=rank, world_size=world, **kwargs
    ).to_dict()
    stats["rank"] = rank
    (out / f"_rank{rank}_stats.json").write_text(json.dumps(stats))
    if rank != 0:
        return stats
    deadline = time.monotonic() + merge_timeout_s
    files = [out / f"_rank{r}_stats.json" for r in range(world)]
    while not all(f.exists() for f in files):
        if time.monotonic() > deadline:
            raise TimeoutError(f"ranks did not finish within {merge_timeout_s} s")
        time.sleep(0.2)
    ranks = [json.loads(f.read_text()) for f in files]
    merged = {
        "world_size": world,
        "shards_done": sorted(s for r in ranks for s in r["shards_done"]),
        "shards_skipped": sorted(s for r in ranks for s in r["shards_skipped"]),
        "counts": {k: sum(r["counts"][k] for r in ranks) for k in ranks[0]["counts"]},
        "seconds_max": max(r["seconds"] for r in ranks),
        "ranks": ranks,
    }
    (out / "run_stats.json").write_text(json.dumps(merged, indent=1))
    return merged


def run_ray(
    shards: Sequence[str] | str,
    out_dir: str | os.PathLike,
    captioner_factory: Callable[[], Any],
    *,
    num_workers: int,
    num_gpus_per_worker: float = 1,
    num_cpus_per_worker: float = 1,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """Run the pipeline with Ray Data: pending shards mapped by an actor pool (extra ``[ray]``).

    Each actor builds the captioner once and calls :func:`caption_shard` per shard
    (``map_batches(..., batch_size=1, compute=ActorPoolStrategy(size=num_workers))``); finished
    shards (stats file present) are not scheduled.

    Parameters
    ----------
    shards : sequence of str or str
    out_dir : path
    captioner_factory : callable
        Picklable; builds the captioner inside each actor.
    num_workers : int
        Actor pool size.
    num_gpus_per_worker, num_cpus_per_worker : float, default=1, 1
        Resources per actor (``num_gpus=0`` on CPU).
    **kwargs
        Passed to :func:`caption_shard`.

    Returns
    -------
    list of dict
        Stats of the shards captioned in this call.

    Raises
    ------
    ValueError
        If `num_workers` < 1 or `shards` is empty.
    """
    from .pipeline import caption_shard, shard_stem
    from .shards import expand_shards

    try:
        import ray
        from ray.data import ActorPoolStrategy
    except ImportError as err:  # pragma: no cover - depends on the extra
        raise ImportError("run_ray needs Ray Data: pip install 'recap-datacomp[ray]'") from err
    if not isinstance(num_workers, int) or num_workers < 1:
        raise ValueError(f"`num_workers` must be an int >= 1, got {num_workers!r}")
    paths = expand_shards(shards) if isinstance(shards, str) else sorted(set(shards))
    if not paths:
        raise ValueError("`shards` is empty")
    out = str(Path(out_dir).resolve())
    Path(out).mkdir(parents=True, exist_ok=True)
    pending = [p for p in paths if not Path(out, f"{shard_stem(p)}_stats.json").exists()]
    if not pending:
        return []

    class _ShardWorker:
        def __init__(self) -> None:
            self.captioner = captioner_factory()

        def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
            results = []
            for shard in batch["shard"]:
                stats = caption_shard(str(shard), out, self.captioner, **kwargs)
                results.append(json.dumps(stats))
            return {"stats": results}

    dataset = ray.data.from_items([{"shard": p} for p in pending])
    mapped = dataset.map_batches(
        _ShardWorker,
        batch_size=1,
        compute=ActorPoolStrategy(size=num_workers),
        num_gpus=num_gpus_per_worker,
        num_cpus=num_cpus_per_worker,
    )
    return [json.loads(row["stats"]) for row in mapped.take_all() if row["stats"] != "null"]
