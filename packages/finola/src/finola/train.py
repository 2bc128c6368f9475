"""Train an image autoencoder on patches with pixel MSE and AdamW; checkpoint and resume exactly.

Defaults are those of spec §2 (from our small run, not the paper): AdamW, learning rate 1e-3,
weight decay 0.01, batch 16. A run checkpointed every k steps and resumed after a kill ends with
the same weights, bit for bit, as one that ran straight through (same machine and settings): the
checkpoint holds the model, the optimizer, the batch sampler's numpy state and the torch RNG
state, and is written atomically (temporary file, then rename).
"""

import hashlib
import math
import os
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml25_core import check_device, check_scalar
from icml25_core import progress as _progress

__all__ = ["fit"]

_FORMAT = "finola.fit/1"


def _check_patches(patches) -> torch.Tensor:
    if isinstance(patches, np.ndarray):
        patches = torch.from_numpy(patches)
    if not isinstance(patches, torch.Tensor):
        raise TypeError(
            f"`patches` must be a torch.Tensor (N, C, H, W), got {type(patches).__name__}"
        )
    if patches.ndim != 4:
        raise ValueError(f"`patches` must have shape (N, C, H, W), got {tuple(patches.shape)}")
    if patches.numel() == 0:
        raise ValueError(f"`patches` is empty (shape {tuple(patches.shape)})")
    if not patches.is_floating_point():
        raise TypeError(f"`patches` must be floating point in [0, 1], got dtype {patches.dtype}")
    if not torch.isfinite(patches).all():
        raise ValueError("`patches` contains NaN or infinity")
    lo, hi = float(patches.min()), float(patches.max())
    if lo < 0 or hi > 1:
        raise ValueError(
            f"`patches` must lie in [0, 1], got min {lo:g}, max {hi:g} (divide 8-bit images by 255)"
        )
    return patches.detach()


def _check_path(checkpoint) -> Path | None:
    if checkpoint is None:
        return None
    if not isinstance(checkpoint, str | os.PathLike):
        raise TypeError(f"`checkpoint` must be a path or None, got {type(checkpoint).__name__}")
    path = Path(checkpoint)
    if path.is_dir():
        raise ValueError(f"`checkpoint` {str(path)!r} is a folder; give a file name")
    return path


def _fingerprint(patches: torch.Tensor) -> str:
    """Hash of the patches' shape, dtype and bytes: a resume onto other data is refused."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{tuple(patches.shape)} {patches.dtype}".encode())
    flat = patches.detach().to("cpu").contiguous().reshape(-1)
    digest.update(flat.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _save(path: Path, state: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            torch.save(state, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _load(path: Path, config: dict, steps: int) -> dict:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(
            f"`checkpoint` {str(path)!r} is not a readable fit checkpoint ({first[:120]}); "
            "delete it or choose another path"
        ) from None
    if not isinstance(state, dict) or state.get("format") != _FORMAT:
        raise ValueError(
            f"`checkpoint` {str(path)!r} is not a finola fit checkpoint; choose another path"
        )
    stored = state["config"].get("model")
    if stored != config["model"]:
        old, new = (str(stored).splitlines(), config["model"].splitlines())
        pair = next(((a, b) for a, b in zip(old, new, strict=False) if a != b), None)
        if pair is None:
            first = "a different number of layers"
        else:  # the settings that changed, e.g. norm='layernorm' -> norm='rms'
            was, now = (set(line.strip().split(", ")) for line in pair)
            first = f"{', '.join(sorted(was - now))} -> {', '.join(sorted(now - was))}"
        raise ValueError(
            f"`checkpoint` {str(path)!r} was written for another model (first difference: "
            f"{first[:160]}); delete it or choose another path"
        )
    if state["config"] != config:
        diff = {
            k: (state["config"].get(k), v) for k, v in config.items() if state["config"].get(k) != v
        }
        raise ValueError(
            f"`checkpoint` {str(path)!r} holds a run with other settings or patches "
            f"(stored, now: {diff}); delete it or choose another path"
        )
    if state["step"] > steps:
        raise ValueError(
            f"`steps` ({steps}) is below the {state['step']} steps already done in the checkpoint "
            f"{str(path)!r}; pass steps >= {state['step']} or another path"
        )
    return state


def _process_group() -> tuple[int, int]:
    """(rank, world size) of an initialised ``torch.distributed`` group, else (0, 1)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _global_mean(loss: torch.Tensor, world: int) -> float:
    """The loss averaged over the ranks (= the loss of the global batch: equal slices)."""
    if world > 1:
        import torch.distributed as dist

        dist.all_reduce(loss)
        loss = loss / world
    return loss.item()


def _get_state(model, optimizer, world: int) -> dict:
    """Full (unsharded) model and optimizer state; with several ranks through
    ``torch.distributed.checkpoint.state_dict`` (DDP and FSDP2 alike; a collective)."""
    if world == 1:
        return {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    model_state, optim_state = get_state_dict(model, optimizer, options=options)
    return {"model": model_state, "optimizer": optim_state}


def _set_state(model, optimizer, state: dict, world: int) -> None:
    if world == 1:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        return
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_state_dict

    options = StateDictOptions(full_state_dict=True)
    set_state_dict(model, optimizer, model_state_dict=state["model"],
                   optim_state_dict=state["optimizer"], options=options)  # fmt: skip


def fit(
    model,
    patches,
    steps: int,
    *,
    batch_size: int = 16,
    lr: float = 1e-3,
    weight_decay: float = 0.01,
    seed: int = 0,
    checkpoint=None,
    checkpoint_every: int = 200,
    device=None,
    progress: bool = True,
) -> dict:
    """Train an autoencoder ``model(x) -> x̂`` on image patches with pixel MSE and AdamW.

    Each step draws `batch_size` patches uniformly with replacement from
    ``numpy.random.default_rng(seed)``, computes ``F.mse_loss(model(x), x)`` and takes one
    ``torch.optim.AdamW`` step on the parameters that require grad. The torch RNG (dropout and
    other random layers) is seeded with `seed` inside ``torch.random.fork_rng``, so the global
    RNG state is left as it was and a run depends only on its inputs.

    Under ``torch.distributed`` (``torchrun``, a model wrapped by :func:`finola.distributed.wrap`)
    every step draws one global batch of ``batch_size × world size`` indices, the same on every
    rank, and each rank trains on its slice, so DDP's averaged gradient is the gradient of the
    global batch; the logged loss is the global batch's, and rank 0 writes the checkpoint.

    With `checkpoint`, the state is written to that file every `checkpoint_every` steps and at
    the end; if the file exists when ``fit`` starts, training resumes from it (the model's
    weights are replaced by the stored ones) and continues to `steps` steps in total, giving the
    same final weights and loss history, bit for bit, as an uninterrupted run on the same
    machine and device. Calling ``fit`` again on a finished checkpoint trains nothing more and
    loads the final weights.

    Parameters
    ----------
    model : torch.nn.Module
        Maps a float batch (B, C, H, W) to a reconstruction of the same shape (e.g.
        ``finola.models.FinolaAutoencoder``). Trained in place; put in train mode during ``fit``
        and back in its previous mode afterwards.
    patches : torch.Tensor or numpy.ndarray, floating of shape (N, C, H, W), values in [0, 1]
        Training patches (``finola.data.sample_patches``). They stay where they are; each batch
        is moved to `device` and cast to the dtype of the model's first floating parameter.
    steps : int
        Total number of optimiser steps, >= 1 (including the steps of a resumed checkpoint).
    batch_size : int, default=16
        Patches per step (per rank under ``torch.distributed``), >= 1 (spec §2).
    lr : float, default=1e-3
        AdamW learning rate, > 0 (spec §2).
    weight_decay : float, default=0.01
        AdamW decoupled weight decay, >= 0 (spec §2).
    seed : int, default=0
        Seed in [0, 2**32 - 1] of the batch sampler and of the torch RNG.
    checkpoint : str or path-like, optional
        File to write the checkpoint to and to resume from (parent folders are created). It
        holds the model and optimizer state, the step, the loss history, the RNG states and the
        settings, and is refused for a run with other `batch_size`, `lr`, `weight_decay`, `seed`
        or patches.
    checkpoint_every : int, default=200
        Steps between checkpoints, >= 1 (only with `checkpoint`).
    device : str or torch.device, optional
        Where to train; the model is moved there. ``None`` keeps the model's device (that of its
        first parameter).
    progress : bool, default=True
        Show a tqdm progress bar with the loss (turned off anyway by ``ICML25_PROGRESS=0``).

    Returns
    -------
    dict
        ``"loss"``: list of `steps` floats, the batch MSE of every step (1-based step ``k`` at
        index ``k - 1``, including the steps of a resumed checkpoint);
        ``"steps"``: int, steps done (= `steps`);
        ``"resumed_from"``: int, the step the run resumed at (0 for a fresh run);
        ``"seconds"``: float, training wall time summed over the resumed sessions;
        ``"device"``: str, the device trained on.

    Raises
    ------
    TypeError
        If `model` is not an ``nn.Module``, `patches` not a floating tensor/array, `checkpoint`
        not a path, `progress` not a bool, or an integer setting not an int.
    ValueError
        If `patches` is not 4-D, is empty, holds NaN/infinity or leaves [0, 1]; `steps`,
        `batch_size` or `checkpoint_every` is below 1, `lr` not positive, `weight_decay`
        negative or `seed` outside [0, 2**32 - 1]; `model` has no trainable parameter or
        returns another shape; `checkpoint` is a folder, not a fit checkpoint, written for other
        settings, patches or model, or holds more steps than `steps`.
    FloatingPointError
        If the loss becomes NaN or infinite (lower `lr`).

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GELU(), nn.Conv2d(8, 3, 1))
    >>> history = fit(model, torch.rand(64, 3, 16, 16), steps=5, progress=False)
    >>> len(history["loss"])
    5
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}")
    patches = _check_patches(patches)
    check_scalar(steps, "steps", kind=int, low=1)
    check_scalar(batch_size, "batch_size", kind=int, low=1)
    check_scalar(lr, "lr", low=0, inclusive="neither")
    check_scalar(weight_decay, "weight_decay", low=0)
    for name, value in (("lr", lr), ("weight_decay", weight_decay)):
        if not math.isfinite(value):
            raise ValueError(f"`{name}` must be finite, got {value}")
    check_scalar(seed, "seed", kind=int, low=0, high=2**32 - 1)
    check_scalar(checkpoint_every, "checkpoint_every", kind=int, low=1)
    if not isinstance(progress, bool):
        raise TypeError(f"`progress` must be a bool, got {type(progress).__name__}")
    path = _check_path(checkpoint)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("`model` has no trainable parameter (requires_grad=True)")
    device = check_device(device, module=model, available=True)
    model.to(device)
    dtype = next((p.dtype for p in params if p.is_floating_point()), torch.float32)
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    config = {
        "batch_size": int(batch_size),
        "lr": float(lr),
        "weight_decay": float(weight_decay),
        "seed": int(seed),
        "patches": _fingerprint(patches) if path is not None else None,
        "world_size": _process_group()[1],
        "model": repr(getattr(model, "module", model)),  # DDP wraps the user's module
    }

    rank, world = _process_group()
    rng = np.random.default_rng(seed)
    cuda_index = None
    if device.type == "cuda":
        cuda_index = device.index if device.index is not None else torch.cuda.current_device()
    n = patches.shape[0]
    was_training = model.training
    with torch.random.fork_rng(devices=[] if cuda_index is None else [cuda_index]):
        torch.default_generator.manual_seed(seed)
        if cuda_index is not None:
            with torch.cuda.device(cuda_index):
                torch.cuda.manual_seed(seed)
        start, history, seconds = 0, [], 0.0
        if path is not None and path.exists():
            state = _load(path, config, steps)
            try:
                _set_state(model, optimizer, state, world)
            except (RuntimeError, ValueError, KeyError) as err:
                raise ValueError(
                    f"`checkpoint` {str(path)!r} was written for another model ({err}); "
                    "delete it or choose another path"
                ) from err
            rng.bit_generator.state = state["numpy_rng"]
            torch.set_rng_state(state["torch_rng"])
            if cuda_index is not None and state.get("cuda_rng") is not None:
                torch.cuda.set_rng_state(state["cuda_rng"], cuda_index)
            start, history, seconds = state["step"], list(state["history"]), state["seconds"]

        def snapshot(step: int, elapsed: float) -> dict:
            return {
                "format": _FORMAT,
                "config": config,
                "step": step,
                "history": list(history),
                "seconds": elapsed,
                **_get_state(model, optimizer, world),
                "numpy_rng": rng.bit_generator.state,
                "torch_rng": torch.get_rng_state(),
                "cuda_rng": None if cuda_index is None else torch.cuda.get_rng_state(cuda_index),
            }

        bar = _progress(
            total=steps, desc="finola fit", unit="step", disable=None if progress else True
        )
        t0 = last_postfix = time.perf_counter()
        model.train()
        try:
            bar.update(start)
            for step in range(start, steps):
                # one global batch per step, the same on every rank; each rank takes its slice
                picks = rng.integers(n, size=batch_size * world)[rank * batch_size :][:batch_size]
                idx = torch.from_numpy(picks).to(patches.device)
                x = patches[idx].to(device=device, dtype=dtype, non_blocking=True)
                out = model(x)
                if not isinstance(out, torch.Tensor) or out.shape != x.shape:
                    got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
                    raise ValueError(
                        f"`model` must return a tensor of its input's shape {tuple(x.shape)}, "
                        f"got {got}"
                    )
                loss = F.mse_loss(out, x)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                value = _global_mean(loss.detach(), world)
                if not math.isfinite(value):
                    raise FloatingPointError(
                        f"the loss is {value} at step {step + 1}; lower `lr` (now {lr:g})"
                    )
                history.append(value)
                bar.update(1)
                now = time.perf_counter()
                if now - last_postfix >= 1.0 or step + 1 == steps:  # set_postfix redraws the bar
                    bar.set_postfix(loss=f"{value:.4g}")
                    last_postfix = now
                if path is not None and (step + 1) % checkpoint_every == 0 and step + 1 < steps:
                    state = snapshot(step + 1, seconds + time.perf_counter() - t0)
                    if rank == 0:
                        _save(path, state)
            seconds += time.perf_counter() - t0
            if path is not None:
                state = snapshot(steps, seconds)
                if rank == 0:
                    _save(path, state)
        finally:
            bar.close()
            model.train(was_training)
    return {
        "loss": history,
        "steps": steps,
        "resumed_from": start,
        "seconds": seconds,
        "device": str(device),
    }
