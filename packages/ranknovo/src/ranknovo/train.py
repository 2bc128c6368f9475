r"""Training of RankNovo: loss, optimiser, schedule, resumable checkpoints, DDP.

The official release has no training step; this follows its config.yaml (AdamW, lr 1e-4, weight
decay 8e-5, gradient-norm clip 1.5, 1 warm-up epoch then cosine) and the paper's objective
(Sec. 3.3): mean squared error of the predicted PMD over real candidates plus λ = 1 times that
of the predicted RMD over residue columns 1..|q|:

$$
\mathcal L = \frac{1}{|\mathcal R|}\sum_{(b,r)\in\mathcal R}
  (\widehat{\mathrm{PMD}}_{b,r}-\mathrm{PMD}_{b,r})^2
+ \lambda\,\frac{1}{|\mathcal T|}\sum_{(b,r,c)\in\mathcal T}
  (\widehat{\mathrm{RMD}}_{b,r,c}-\mathrm{RMD}_{b,r,c})^2
$$

Scale-out: under ``torchrun`` (``WORLD_SIZE`` > 1) :func:`fit` joins the process group (gloo on
CPU, nccl on CUDA), wraps the model in ``DistributedDataParallel``, needs a loader whose sampler
is a ``DistributedSampler`` (see :func:`make_loader`) and writes checkpoints on rank 0 only.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist

from icml25_core import check_scalar

from .data import collate

__all__ = ["ranknovo_loss", "fit", "make_loader"]


def ranknovo_loss(
    pmd_pred: torch.Tensor,
    rmd_pred: torch.Tensor,
    batch: dict,
    rmd_weight: float = 1.0,
) -> torch.Tensor:
    """MSE(PMD) over real rows + `rmd_weight` · MSE(RMD) over residue columns (module docstring).

    Parameters
    ----------
    pmd_pred : torch.Tensor, shape (B, R)
    rmd_pred : torch.Tensor, shape (B, R, C)
    batch : dict
        From :func:`ranknovo.data.collate` with labels (``pmd``, ``rmd``, ``rmd_mask``,
        ``row_mask``).
    rmd_weight : float, default=1.0

    Returns
    -------
    torch.Tensor
        Scalar loss.

    Raises
    ------
    ValueError
        If the batch has no labels or shapes disagree.
    """
    for key in ("pmd", "rmd", "rmd_mask", "row_mask"):
        if key not in batch:
            raise ValueError(f"`batch` has no {key!r}: build the CandidateSet with `truths`")
    if pmd_pred.shape != batch["pmd"].shape or rmd_pred.shape != batch["rmd"].shape:
        raise ValueError(
            f"`pmd_pred` {tuple(pmd_pred.shape)} / `rmd_pred` {tuple(rmd_pred.shape)} do not "
            f"match the labels {tuple(batch['pmd'].shape)} / {tuple(batch['rmd'].shape)}"
        )
    rows = batch["row_mask"]
    loss = F_mse(pmd_pred[rows], batch["pmd"][rows])
    cols = batch["rmd_mask"]
    if cols.any():
        loss = loss + rmd_weight * F_mse(rmd_pred[cols], batch["rmd"][cols])
    return loss


def F_mse(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Mean squared error (0 for empty inputs)."""
    if a.numel() == 0:
        return a.sum() * 0.0
    return ((a - b.to(a.dtype)) ** 2).mean()


def make_loader(
    dataset, batch_size: int = 256, shuffle: bool = True, num_workers: int = 0, seed: int = 2007
) -> torch.utils.data.DataLoader:
    """A DataLoader with :func:`ranknovo.data.collate`; a ``DistributedSampler`` when a process
    group is initialised (labels are computed in the workers).

    Raises
    ------
    ValueError
        If `batch_size` < 1 or `num_workers` < 0.
    """
    batch_size = int(check_scalar(batch_size, "batch_size", kind=int, low=1))
    num_workers = int(check_scalar(num_workers, "num_workers", kind=int, low=0))
    if dist.is_available() and dist.is_initialized():
        sampler: torch.utils.data.DistributedSampler = torch.utils.data.DistributedSampler(
            dataset, shuffle=shuffle, seed=seed
        )
        return torch.utils.data.DataLoader(
            dataset, batch_size=batch_size, sampler=sampler, collate_fn=collate,
            num_workers=num_workers,
        )  # fmt: skip
    return torch.utils.data.DataLoader(
        dataset, batch_size=batch_size, shuffle=shuffle, collate_fn=collate,
        num_workers=num_workers,
    )  # fmt: skip


def _init_distributed() -> tuple[int, int, int]:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0"))
    return 0, 1, 0


def _schedule(optimizer, epochs: int, steps_per_epoch: int, warmup_epochs: int):
    total = max(1, epochs * steps_per_epoch)
    warm = min(total - 1, max(0, warmup_epochs * steps_per_epoch)) if epochs > 1 else 0
    scheds: list[torch.optim.lr_scheduler.LRScheduler] = []
    milestones: list[int] = []
    if warm > 0:
        scheds.append(
            torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1e-3, total_iters=warm)
        )
        milestones.append(warm)
    scheds.append(torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(1, total - warm)))
    if len(scheds) == 1:
        return scheds[0]
    return torch.optim.lr_scheduler.SequentialLR(optimizer, scheds, milestones=milestones)


def _resume(ckpt: Path, model, opt, sched, device, epochs: int) -> int:
    """Load ``last.pt`` into model, optimiser and schedule; return its epoch count."""
    try:
        blob = torch.load(ckpt, map_location=device, weights_only=False)
    except Exception as exc:  # a truncated or foreign file
        raise ValueError(
            f"`ckpt_dir`: {ckpt} is not a readable ranknovo checkpoint ({type(exc).__name__}: "
            f"{exc}); delete it or use another ckpt_dir"
        ) from None
    need = ("model", "optimizer", "scheduler", "epoch", "rng")
    if not isinstance(blob, dict) or any(k not in blob for k in need):
        raise ValueError(f"`ckpt_dir`: {ckpt} is not a ranknovo fit checkpoint")
    if "epochs" in blob and int(blob["epochs"]) != epochs:
        raise ValueError(
            f"`ckpt_dir`: {ckpt} was written by a run of epochs={int(blob['epochs'])} (its "
            f"learning-rate schedule), not epochs={epochs}; resume with the same epochs or use "
            "another ckpt_dir"
        )
    mine, theirs = getattr(model, "config", None), blob.get("config")
    if isinstance(mine, dict) and isinstance(theirs, dict):
        keys = sorted((set(mine) | set(theirs)) - {"row_impl"})  # row_impl: same weights
        diff = [k for k in keys if mine.get(k) != theirs.get(k)]
        if diff:
            what = ", ".join(f"{k}={theirs.get(k)!r} (now {mine.get(k)!r})" for k in diff)
            raise ValueError(
                f"`ckpt_dir`: {ckpt} was written for another model: {what}; use another "
                "ckpt_dir or the same model settings"
            )
    try:
        model.load_state_dict(blob["model"])
        opt.load_state_dict(blob["optimizer"])
        sched.load_state_dict(blob["scheduler"])
    except (RuntimeError, ValueError, KeyError) as exc:
        raise ValueError(
            f"`ckpt_dir`: {ckpt} does not fit this model or schedule ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0]}); use another ckpt_dir"
        ) from None
    torch.set_rng_state(blob["rng"])
    return int(blob["epoch"])


def fit(
    model: torch.nn.Module,
    loader,
    epochs: int = 5,
    lr: float = 1e-4,
    weight_decay: float = 8e-5,
    clip: float = 1.5,
    ckpt_dir=None,
    *,
    warmup_epochs: int = 1,
    rmd_weight: float = 1.0,
    time_budget_s: float | None = None,
    device=None,
    log=None,
) -> dict:
    """Train `model` on `loader`; resumes exactly from ``ckpt_dir/last.pt`` when present.

    Parameters
    ----------
    model : RankNovo
    loader : iterable of dict
        Batches from :func:`ranknovo.data.collate` with labels (e.g. :func:`make_loader`).
    epochs : int, default=5
        Official config.yaml.
    lr, weight_decay : float, default=1e-4, 8e-5
        AdamW (config.yaml).
    clip : float, default=1.5
        Gradient-norm clip (config.yaml).
    ckpt_dir : str or os.PathLike, optional
        Where ``last.pt`` (model, optimiser, schedule, epoch, `epochs`, torch RNG state) is
        written after every epoch (rank 0 only). A resume needs the same model configuration
        and the same `epochs` (the schedule depends on it).
    warmup_epochs : int, default=1
    rmd_weight : float, default=1.0
    time_budget_s : float, optional
        Stop after the epoch during which this much wall time has passed.
    device : torch.device or str, optional
        Default: the model's device (under DDP on CUDA: ``cuda:LOCAL_RANK``).
    log : callable, optional
        Called with one line per epoch.

    Returns
    -------
    dict
        ``losses`` (mean loss per epoch run), ``epochs_done``, ``steps``, ``resumed_from``.

    Raises
    ------
    TypeError
        If `model` is not a ``torch.nn.Module``.
    ValueError
        On out-of-range arguments, an empty loader, or a ``ckpt_dir/last.pt`` that cannot be
        read or was written for another model configuration (the message names the file).

    Notes
    -----
    On resume, `log` gets a line ``resumed from <file> at epoch k``; when the checkpoint
    already holds `epochs` or more epochs, nothing is trained and `log` says so.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"`model` must be a RankNovo (torch.nn.Module), got {type(model).__name__}")
    epochs = int(check_scalar(epochs, "epochs", kind=int, low=1))
    lr = float(check_scalar(lr, "lr", low=0, inclusive="neither"))
    weight_decay = float(check_scalar(weight_decay, "weight_decay", low=0))
    clip = float(check_scalar(clip, "clip", low=0, inclusive="neither"))
    if time_budget_s is not None:
        check_scalar(time_budget_s, "time_budget_s", low=0, inclusive="neither")
    try:
        steps_per_epoch = len(loader)
    except TypeError:
        raise ValueError("`loader` must have a length (a DataLoader)") from None
    if steps_per_epoch == 0:
        raise ValueError("`loader` is empty")
    rank, world, local = _init_distributed()
    if device is None:
        device = next(model.parameters()).device
        if world > 1 and torch.cuda.is_available():
            device = torch.device("cuda", local)
    device = torch.device(device)
    model.to(device)
    net: torch.nn.Module = model
    if world > 1:
        net = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[local] if device.type == "cuda" else None
        )
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    sched = _schedule(opt, epochs, steps_per_epoch, warmup_epochs)
    start, resumed = 0, None
    ckpt = Path(ckpt_dir) / "last.pt" if ckpt_dir is not None else None
    if ckpt is not None and ckpt.is_file():
        start = resumed = _resume(ckpt, model, opt, sched, device, epochs)
        if log is not None:
            if start >= epochs:
                log(
                    f"{ckpt} already holds {start}/{epochs} epochs: nothing to train (use "
                    "another ckpt_dir to train afresh)"
                )
            else:
                log(f"resumed from {ckpt} at epoch {start}/{epochs}")
    t0 = time.perf_counter()
    losses, steps = [], 0
    epoch = start
    for epoch in range(start, epochs):
        sampler = getattr(loader, "sampler", None)
        if isinstance(sampler, torch.utils.data.DistributedSampler):
            sampler.set_epoch(epoch)
        net.train()
        total, count = 0.0, 0
        for batch in loader:
            batch = {k: v.to(device) for k, v in batch.items()}
            pmd_pred, rmd_pred = net(batch["spectra"], batch["precursors"], batch["tokens"])
            loss = ranknovo_loss(pmd_pred, rmd_pred, batch, rmd_weight)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            sched.step()
            total += float(loss.detach())
            count += 1
            steps += 1
        losses.append(total / max(count, 1))
        if log is not None:
            log(f"epoch {epoch + 1}/{epochs} loss {losses[-1]:.4f}")
        if ckpt is not None and rank == 0:
            ckpt.parent.mkdir(parents=True, exist_ok=True)
            tmp = ckpt.with_suffix(".tmp")
            torch.save(
                {
                    "model": model.state_dict(),
                    "optimizer": opt.state_dict(),
                    "scheduler": sched.state_dict(),
                    "epoch": epoch + 1,
                    "epochs": epochs,
                    "rng": torch.get_rng_state(),
                    "config": getattr(model, "config", None),
                },
                tmp,
            )
            os.replace(tmp, ckpt)
        if world > 1:
            dist.barrier()
        if time_budget_s is not None and time.perf_counter() - t0 >= time_budget_s:
            epoch += 1
            break
    else:
        epoch = epochs
    if not math.isfinite(losses[-1] if losses else 0.0):
        raise FloatingPointError("training diverged: the loss is not finite")
    return {"losses": losses, "epochs_done": epoch, "steps": steps, "resumed_from": resumed}
