"""Scale-out helpers: FSDP2 wrapping with the gated layer as unit, sharded evaluation.

Training runs under ``torchrun`` with DDP or FSDP2 (``torch.distributed.fsdp.fully_shard``); the
tokenizer and the injected :class:`unimc.GatedConditionAttention` layers are ordinary
submodules. Evaluation shards images by rank, runs the user's detector, gathers COCO-format
detections on rank 0 and calls :func:`unimc.keypoint_ap` there. Ours (the paper gives no
training code).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import nn

from .inject import GatedConditionAttention

__all__ = ["shard_indices", "gather_detections", "fully_shard_conditioned"]


def shard_indices(n: int, rank: int, world_size: int) -> list[int]:
    """Indices ``rank, rank + W, ...`` of `n` items: rank `rank`'s share of an evaluation.

    Parameters
    ----------
    n : int
        Number of items (>= 0).
    rank : int
        This process's rank, in ``[0, world_size)``.
    world_size : int
        Number of processes (>= 1).

    Returns
    -------
    list of int

    Raises
    ------
    ValueError
        If `n` < 0, `world_size` < 1 or `rank` is out of range.
    """
    for name, v in (("n", n), ("rank", rank), ("world_size", world_size)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"`{name}` must be an int; got {v!r}")
    if n < 0 or world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(
            f"need n >= 0, world_size >= 1, 0 <= rank < world_size; got {n, rank, world_size}"
        )
    return list(range(rank, n, world_size))


def gather_detections(dets: Sequence[dict[str, Any]], dst: int = 0) -> list[dict[str, Any]] | None:
    """Gather every rank's COCO-format detections on rank `dst` (``gather_object``).

    Parameters
    ----------
    dets : list of dict
        This rank's detections (``image_id``, ``category_id``, ``keypoints``, ``score``).
    dst : int, default=0
        Receiving rank.

    Returns
    -------
    list of dict or None
        All detections, in rank order, on `dst`; None elsewhere. Without an initialised process
        group, `dets` itself.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return list(dets)
    world = dist.get_world_size()
    out: list[Any] | None = [None] * world if dist.get_rank() == dst else None
    dist.gather_object(list(dets), out, dst=dst)
    if out is None:
        return None
    return [d for part in out for d in part]


def fully_shard_conditioned(model: nn.Module, **fsdp_kwargs: Any) -> nn.Module:
    """Apply FSDP2 ``fully_shard`` to every GatedConditionAttention, then to the model.

    Parameters
    ----------
    model : nn.Module
        A model after :func:`unimc.inject_conditions` (a ModuleDict holding the DiT and the
        tokenizer is fine).
    **fsdp_kwargs
        Passed to ``fully_shard`` (e.g. ``mesh``).

    Returns
    -------
    nn.Module
        `model`, sharded in place.

    Raises
    ------
    RuntimeError
        Without an initialised process group.
    """
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard

    if not dist.is_initialized():
        raise RuntimeError("fully_shard_conditioned needs torch.distributed initialised")
    for m in list(model.modules()):
        if isinstance(m, GatedConditionAttention):
            fully_shard(m, **fsdp_kwargs)
    fully_shard(model, **fsdp_kwargs)
    return model
