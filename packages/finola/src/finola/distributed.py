"""Scale-out (spec §7): data-parallel training under ``torchrun`` with DDP or FSDP2.

The scan has no collectives: each rank decodes its own images, and A, B are ordinary parameters
that DDP all-reduces or FSDP2 (``fully_shard``) shards with the rest. ``setup`` reads torchrun's
environment (RANK, WORLD_SIZE, LOCAL_RANK) and joins the process group (NCCL on CUDA, else
gloo); ``wrap`` applies the strategy. ``finola train`` uses both when started by ``torchrun``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
from torch import nn

from icml25_core import check_choice

STRATEGIES = ("ddp", "fsdp")

__all__ = ["STRATEGIES", "Distributed", "setup", "wrap"]


@dataclass(frozen=True)
class Distributed:
    """This process's place in the job: rank, world size and device."""

    rank: int
    world_size: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        """True on rank 0 (the rank that writes files)."""
        return self.rank == 0


def setup(device=None) -> Distributed:
    """Join torchrun's process group when WORLD_SIZE > 1; a single process otherwise.

    Parameters
    ----------
    device : str or torch.device, optional
        Default: ``cuda:<LOCAL_RANK>`` when CUDA is available, else CPU.

    Returns
    -------
    Distributed
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if device is None:
        device = f"cuda:{local}" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if world == 1:
        return Distributed(0, 1, device)
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return Distributed(dist.get_rank(), dist.get_world_size(), device)


def wrap(model: nn.Module, strategy: str, job: Distributed) -> nn.Module:
    """`model` on `job.device`, wrapped for data parallelism.

    ``"ddp"``: ``DistributedDataParallel``; ``"fsdp"``: FSDP2's ``fully_shard`` on the encoder's
    convolution blocks, the encoder, the decoder, then the whole model (A, B are sharded with
    the root). A single process gets the model unwrapped.

    Raises
    ------
    ValueError
        If `strategy` is not "ddp" or "fsdp".
    """
    check_choice(strategy, "strategy", STRATEGIES)
    model = model.to(job.device)
    if job.world_size == 1:
        return model
    if strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        ids = [job.device.index] if job.device.type == "cuda" else None
        return DistributedDataParallel(model, device_ids=ids)
    from torch.distributed.fsdp import fully_shard

    for name in ("encoder", "decoder"):
        part = getattr(model, name, None)
        if part is not None:
            fully_shard(part)
    fully_shard(model)
    return model
