"""Small trainers for the per-frame networks ReFrame wraps (×2 super-resolution on video frames).

Random crops, Adam, L1 loss, tqdm progress, periodic checkpoints that an interrupted run resumes
from (same crops, same result). Spec §4: 48² crops, batch 8, Adam 2e-3, seed 0.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from icml25_core import check_scalar, check_tensor, progress

__all__ = ["train_sr"]


def _crops(gen: torch.Generator, inputs, targets, crop: int, batch: int):
    T, _, H, W = inputs.shape
    idx = torch.randint(0, T, (batch,), generator=gen)
    ys = torch.randint(0, H - crop + 1, (batch,), generator=gen)
    xs = torch.randint(0, W - crop + 1, (batch,), generator=gen)
    corners = list(zip(idx.tolist(), ys.tolist(), xs.tolist(), strict=True))
    xb = torch.stack([inputs[i, :, y : y + crop, x : x + crop] for i, y, x in corners])
    yb = torch.stack([targets[i, :, y : y + crop, x : x + crop] for i, y, x in corners])
    return xb, yb


def train_sr(
    model: nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    iters: int,
    *,
    crop: int = 48,
    batch: int = 8,
    lr: float = 2e-3,
    seed: int = 0,
    checkpoint: str | Path | None = None,
    checkpoint_every: int = 250,
    show_progress: bool = True,
) -> dict:
    """Train `model` to map degraded frames to the originals with L1 loss and Adam.

    Parameters
    ----------
    model : nn.Module
        Trained in place on its own device.
    inputs : Tensor, shape [T, C, H, W], float32
        Network inputs (degraded frames, or colour + G-buffers).
    targets : Tensor, shape [T, C', H, W], float32
        Ground truth.
    iters : int
        Optimiser steps, >= 1.
    crop : int, default=48
        Side of the random square crops (spec §4).
    batch : int, default=8
        Crops per step (spec §4).
    lr : float, default=2e-3
        Adam learning rate (spec §4).
    seed : int, default=0
        Seeds the crop sampler (the model's init is the caller's).
    checkpoint : str or Path, optional
        File written every `checkpoint_every` steps and at the end (model, optimiser, sampler
        state, step); an existing one is resumed from.
    checkpoint_every : int, default=250
    show_progress : bool, default=True
        tqdm bar (``ICML25_PROGRESS=0`` turns it off).

    Returns
    -------
    dict
        ``{"loss": [per-step L1], "steps": iters, "resumed_from": step or 0}``.

    Raises
    ------
    ValueError
        For mismatched or wrong-rank tensors, crops larger than the frames, bad counts.
    """
    check_tensor(inputs, "inputs", ndim=4)
    check_tensor(targets, "targets", ndim=4)
    if inputs.shape[0] != targets.shape[0] or inputs.shape[2:] != targets.shape[2:]:
        raise ValueError(
            "`inputs` and `targets` must have the same frames and H, W (channels may differ), "
            f"got {tuple(inputs.shape)} and {tuple(targets.shape)}"
        )
    check_scalar(iters, "iters", kind=int, low=1)
    check_scalar(crop, "crop", kind=int, low=1, high=min(inputs.shape[-2:]))
    check_scalar(batch, "batch", kind=int, low=1)
    check_scalar(lr, "lr", low=0, inclusive="neither")
    check_scalar(checkpoint_every, "checkpoint_every", kind=int, low=1)
    device = next(model.parameters()).device
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    losses: list[float] = []
    step = 0
    path = Path(checkpoint) if checkpoint is not None else None
    if path is not None and path.exists():
        state = torch.load(path, map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        gen.set_state(state["gen"])
        losses, step = list(state["loss"]), int(state["step"])
    resumed = step

    def save():
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        torch.save(
            {
                "model": model.state_dict(),
                "opt": opt.state_dict(),
                "gen": gen.get_state(),
                "loss": losses,
                "step": step,
            },
            tmp,
        )
        os.replace(tmp, path)

    model.train()
    disable = None if show_progress else True
    with progress(total=iters, desc="train", unit="step", disable=disable) as bar:
        bar.update(step)
        while step < iters:
            xb, yb = _crops(gen, inputs, targets, crop, batch)
            xb, yb = xb.to(device), yb.to(device)
            loss = F.l1_loss(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            step += 1
            bar.update(1)
            if step % checkpoint_every == 0:
                save()
    save()
    model.eval()
    return {"loss": losses, "steps": iters, "resumed_from": resumed}
