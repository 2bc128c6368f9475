"""Scale-out: one ReFrame wrapper per stream, one process per device under ``torchrun``.

ReFrame's state (policy references, cached features, counters) is per stream: streams are never
batched together unless they share refresh decisions. Under ``torchrun`` each rank takes the
streams ``rank, rank + world, ...``, runs them on its own device with its own wrappers, and the
per-stream summaries are gathered with ``torch.distributed`` (gloo on CPU, NCCL on GPUs).
Spec §7.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import torch
from torch import nn

from .wrapper import ReFrame

__all__ = ["run_streams", "rank_and_world"]


def rank_and_world() -> tuple[int, int]:
    """This process's (rank, world size): from ``torch.distributed`` when initialised, else
    torchrun's ``RANK``/``WORLD_SIZE`` variables, else (0, 1)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


@torch.inference_mode()
def run_streams(
    make_model: Callable[[], nn.Module],
    streams: Sequence[torch.Tensor],
    *,
    cache,
    policy="delta-0.1",
    device: str | torch.device | None = None,
    gather: bool = True,
) -> dict[int, dict]:
    """Run this rank's share of `streams`, one :class:`ReFrame` wrapper each.

    Parameters
    ----------
    make_model : callable
        ``make_model() -> nn.Module`` (same weights on every rank, e.g. loaded from a file);
        run in eval mode, its train/eval mode restored after.
    streams : sequence of Tensor, each [T, C, H, W]
        All streams; rank r runs ``streams[r::world]``.
    cache, policy
        As for :class:`ReFrame`.
    device : str or torch.device, optional
        Where this rank runs (default: ``cuda:<LOCAL_RANK>`` when CUDA is available, else CPU).
    gather : bool, default=True
        With an initialised process group, gather every rank's summaries on every rank.

    Returns
    -------
    dict
        ``{stream index: {"outputs": Tensor [T, ...] (CPU), "history": [...], "skip_rate":
        float, "rank": int}}``; with `gather`, summaries of all streams (outputs only for this
        rank's).

    Raises
    ------
    ValueError
        If a stream is not [T, C, H, W].
    """
    rank, world = rank_and_world()
    if device is None:
        local = int(os.environ.get("LOCAL_RANK", 0))
        device = torch.device(f"cuda:{local}" if torch.cuda.is_available() else "cpu")
    device = torch.device(device)
    for i, s in enumerate(streams):
        if not isinstance(s, torch.Tensor) or s.ndim != 4:
            raise ValueError(f"`streams`[{i}] must be a [T, C, H, W] tensor")
    model = make_model().to(device)
    was_training = model.training
    model.eval()
    try:
        results = _run_share(model, streams, rank, world, cache, policy, device)
    finally:
        model.train(was_training)
    import torch.distributed as dist

    if gather and dist.is_available() and dist.is_initialized():
        summary = {i: {k: v for k, v in r.items() if k != "outputs"} for i, r in results.items()}
        everything: list = [None] * world
        dist.all_gather_object(everything, summary)
        for part in everything:
            for i, r in part.items():
                results.setdefault(i, r)
    return results


def _run_share(model, streams, rank, world, cache, policy, device) -> dict[int, dict]:
    results: dict[int, dict] = {}
    for index in range(rank, len(streams), world):
        wrapper = ReFrame(model, cache, policy=policy)  # one wrapper (state) per stream
        frames = streams[index].to(device)
        outs = torch.cat([wrapper(frames[t : t + 1]) for t in range(len(frames))]).cpu()
        results[index] = {
            "outputs": outs,
            "history": list(wrapper.history),
            "skip_rate": wrapper.skip_rate,
            "rank": rank,
        }
    return results
