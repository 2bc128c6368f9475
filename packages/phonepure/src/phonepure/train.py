r"""Training of both stages, single process or under ``torchrun`` + DDP (rank-0 checkpoints).

Stage 1 (DDPM, Ho et al. 2020):
$\min_\theta E\,\lVert \epsilon - \epsilon_\theta(\sqrt{\bar\alpha_t}x_0
+ \sqrt{1-\bar\alpha_t}\epsilon, t)\rVert^2$, lr 2e-4 (DiffWave).
Stage 2 (SGMSE+ denoising score matching):
$\min_\phi E\,|s_\phi(x_t, Y, P, t)\,\mathrm{std}(t) + z|^2$,
$x_t = \mathrm{mean}_t(X_0, Y) + \mathrm{std}(t) z$, $t \sim U(0.03, 1)$, lr 1e-4, EMA 0.999.

Run distributed with ``torchrun --nproc_per_node=N -m phonepure.train diffwave --wav-dir D``.
"""

from __future__ import annotations

import argparse
import copy
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from icml25_core.cli import positive_int

from .audio import check_wav, compress, peak_normalise, stft
from .diffwave import DDPMSchedule, DiffWave
from .refiner import ScoreUNet, score_of
from .sde import OUVESDE

__all__ = ["train_diffwave", "train_refiner", "main"]


def _dist():
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist, dist.get_rank(), dist.get_world_size()
    return None, 0, 1


def _segments(wavs: Sequence[torch.Tensor], seg: int, n: int, g: torch.Generator) -> torch.Tensor:
    flat = [check_wav(w, f"wavs[{i}]").reshape(-1).float() for i, w in enumerate(wavs)]
    if not flat:
        raise ValueError("`wavs` is empty")
    out = []
    for _ in range(n):
        w = flat[int(torch.randint(len(flat), (1,), generator=g))]
        if w.shape[0] <= seg:
            out.append(nn.functional.pad(w, (0, seg - w.shape[0])))
        else:
            s = int(torch.randint(w.shape[0] - seg, (1,), generator=g))
            out.append(w[s : s + seg])
    return torch.stack(out)


def _wrap(model: nn.Module) -> nn.Module:
    dist, _, world = _dist()
    if dist is None or world == 1:
        return model
    from torch.nn.parallel import DistributedDataParallel

    # the last residual block's res_conv feeds nothing (as in DiffWave): allow unused params
    return DistributedDataParallel(model, find_unused_parameters=True)


def _budget(steps: int | None, seconds: float | None) -> tuple[int, float]:
    if steps is None and seconds is None:
        raise ValueError("give `steps` or `seconds`")
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
        raise ValueError(f"`steps` must be an int >= 1, got {steps!r}")
    if seconds is not None and not seconds > 0:
        raise ValueError(f"`seconds` must be > 0, got {seconds!r}")
    return (steps if steps is not None else 10**9), (seconds if seconds is not None else math.inf)


def _resume(
    ckpt: Path | None,
    model: nn.Module,
    opt: torch.optim.Optimizer,
    ema: nn.Module | None,
    g: torch.Generator | None = None,
) -> int:
    if ckpt is None or not ckpt.exists():
        return 0
    state = torch.load(ckpt, map_location="cpu", weights_only=False)
    try:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        if ema is not None and "ema" in state:
            ema.load_state_dict(state["ema"])
    except (RuntimeError, ValueError, KeyError) as err:
        msg = str(err).splitlines()[0]
        raise ValueError(f"`checkpoint` {ckpt} does not match the model ({msg})") from None
    _, rank, world = _dist()
    rng = state.get("rng")  # one generator state per rank (absent in old checkpoints)
    if g is not None and rng is not None and len(rng) == world:
        g.set_state(rng[rank])
    return int(state["step"])


def _save(
    ckpt: Path | None,
    model: nn.Module,
    opt: torch.optim.Optimizer,
    ema: nn.Module | None,
    step: int,
    g: torch.Generator | None = None,
) -> None:
    dist, rank, world = _dist()
    if ckpt is None:
        return
    rng: list[Any] | None = [g.get_state()] if g is not None else None
    if g is not None and dist is not None and world > 1:  # every rank calls _save together
        rng = [None] * world
        dist.all_gather_object(rng, g.get_state())
    if rank != 0:
        return
    state = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step}
    if rng is not None:
        state["rng"] = rng  # so that a resumed run draws what an uninterrupted one would
    if ema is not None:
        state["ema"] = ema.state_dict()
    tmp = ckpt.with_suffix(".tmp")
    torch.save(state, tmp)
    tmp.replace(ckpt)


def _sync_steps(stop: bool) -> bool:
    dist, _, world = _dist()
    if dist is None or world == 1:
        return stop
    flag = torch.tensor([1.0 if stop else 0.0])
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item() > 0)


def train_diffwave(
    model: DiffWave,
    wavs: Sequence[torch.Tensor],
    steps: int | None = None,
    seconds: float | None = None,
    batch: int = 8,
    seg: int = 8000,
    lr: float = 2e-4,
    t_max: int | None = None,
    schedule: DDPMSchedule | None = None,
    checkpoint=None,
    checkpoint_every: int = 50,
    seed: int = 0,
) -> dict[str, float]:
    """Train the DiffWave noise predictor; under DDP each rank draws its own crops.

    Parameters
    ----------
    model : DiffWave
        Trained in place.
    wavs : sequence of torch.Tensor of shape (T,) or (1, T)
        Clean 16 kHz speech.
    steps : int, optional
        Optimiser steps; or
    seconds : float, optional
        Wall-clock budget (whichever ends first).
    batch : int, default=8
        Crops per step (per rank).
    seg : int, default=8000
        Crop length in samples.
    lr : float, default=2e-4
        Adam learning rate (DiffWave).
    t_max : int, optional
        Draw t from [0, t_max) instead of [0, T) (small-budget training for small t*).
    schedule : DDPMSchedule, optional
    checkpoint : str or pathlib.Path, optional
        Resume from / save to this file (rank 0 writes).
    checkpoint_every : int, default=50
    seed : int, default=0
        Crop/noise seed (offset by the rank).

    Returns
    -------
    dict
        ``{"steps": ..., "loss": last loss, "seconds": ...}``.

    Raises
    ------
    ValueError
        On empty `wavs`, a bad budget, or a `checkpoint` that does not match the model.
    """
    n_steps, limit = _budget(steps, seconds)
    sch = schedule or DDPMSchedule()
    tm = sch.T if t_max is None else int(t_max)
    if not 1 <= tm <= sch.T:
        raise ValueError(f"`t_max` must be in [1, {sch.T}], got {t_max}")
    _, rank, _ = _dist()
    g = torch.Generator().manual_seed(seed + 1000 * rank)
    ab = torch.tensor(sch.alpha_bar, dtype=torch.float32)
    net = _wrap(model)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    ckpt = Path(checkpoint) if checkpoint is not None else None
    step = _resume(ckpt, model, opt, None, g)
    start = time.perf_counter()
    loss_v = float("nan")
    model.train()
    while step < n_steps:
        x0 = _segments(wavs, seg, batch, g)[:, None]
        t = torch.randint(tm, (batch,), generator=g)
        eps = torch.randn(x0.shape, generator=g)
        a = ab[t][:, None, None]
        xt = a.sqrt() * x0 + (1 - a).sqrt() * eps
        loss = ((net(xt, t) - eps) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        loss_v = float(loss.detach())
        if step % checkpoint_every == 0:
            _save(ckpt, model, opt, None, step, g)
        if _sync_steps(time.perf_counter() - start > limit):
            break
    _save(ckpt, model, opt, None, step, g)
    model.eval()
    return {"steps": step, "loss": loss_v, "seconds": time.perf_counter() - start}


def train_refiner(
    model: ScoreUNet,
    pairs: Sequence[tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]],
    steps: int | None = None,
    seconds: float | None = None,
    batch: int = 8,
    frames: int = 256,
    lr: float = 1e-4,
    ema_decay: float = 0.999,
    sde: OUVESDE | None = None,
    t_eps: float = 0.03,
    checkpoint=None,
    checkpoint_every: int = 50,
    seed: int = 0,
) -> tuple[ScoreUNet, dict[str, float]]:
    """Denoising score matching for the refiner on (clean, stage-1 output, template) triples.

    Parameters
    ----------
    model : ScoreUNet
        Trained in place.
    pairs : sequence of (x0, y, P)
        Clean clip (T,), its stage-1 output (T,), template (256, 1 + T // 128) or None (zeros).
        Both clips are divided by ``max|y|`` (the refiner's input normalisation).
    steps, seconds : optional
        Budget (whichever ends first).
    batch : int, default=8
    frames : int, default=256
        STFT frames per crop (multiple of 4 for the U-Net).
    lr : float, default=1e-4
    ema_decay : float, default=0.999
    sde : OUVESDE, optional
    t_eps : float, default=0.03
    checkpoint : optional
        Resume / save file.
    checkpoint_every : int, default=50
    seed : int, default=0

    Returns
    -------
    (ScoreUNet, dict)
        The EMA copy of the model (use it for sampling) and the training summary.

    Raises
    ------
    ValueError
        On empty `pairs`, a pair whose clips differ in length, `frames` not a positive
        multiple of 4, a bad budget, or a `checkpoint` that does not match the model.
    """
    if not pairs:
        raise ValueError("`pairs` is empty")
    if isinstance(frames, bool) or not isinstance(frames, int) or frames < 4 or frames % 4:
        raise ValueError(f"`frames` must be a positive multiple of 4 (U-Net), got {frames!r}")
    n_steps, limit = _budget(steps, seconds)
    sde = sde or OUVESDE()
    _, rank, _ = _dist()
    g = torch.Generator().manual_seed(seed + 1000 * rank)
    specs = []
    for i, (x0, y, p) in enumerate(pairs):
        x0 = check_wav(x0, f"pairs[{i}][0]").reshape(-1).float()
        y = check_wav(y, f"pairs[{i}][1]").reshape(-1).float()
        if x0.numel() != y.numel():
            raise ValueError(
                f"`pairs[{i}]`: clean clip ({x0.numel()} samples) and stage-1 output "
                f"({y.numel()} samples) differ in length"
            )
        yn, peak = peak_normalise(y)
        X0 = compress(stft(x0 / peak))
        Y = compress(stft(yn))
        P = torch.zeros(X0.shape) if p is None else p.float()
        if P.shape != X0.shape:
            raise ValueError(
                f"pairs[{i}] template shape {tuple(P.shape)} != STFT {tuple(X0.shape)}"
            )
        specs.append((X0, Y, P))
    ema = copy.deepcopy(model)
    for q in ema.parameters():
        q.requires_grad_(False)
    net = _wrap(model)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    ckpt = Path(checkpoint) if checkpoint is not None else None
    step = _resume(ckpt, model, opt, ema, g)
    start = time.perf_counter()
    loss_v = float("nan")
    model.train()
    while step < n_steps:
        xs, ys, ps = [], [], []
        for _ in range(batch):
            X0, Y, P = specs[int(torch.randint(len(specs), (1,), generator=g))]
            n = X0.shape[-1]
            s = int(torch.randint(max(1, n - frames), (1,), generator=g)) if n > frames else 0
            sl = slice(s, s + frames)

            def crop(a: torch.Tensor, sl: slice = sl) -> torch.Tensor:
                c = a[:, sl]
                return nn.functional.pad(c, (0, frames - c.shape[-1]))

            xs.append(crop(X0))
            ys.append(crop(Y))
            ps.append(crop(P))
        X0b, Yb, Pb = (torch.stack(v)[:, None] for v in (xs, ys, ps))
        t = torch.rand(batch, generator=g) * (1 - t_eps) + t_eps
        std = sde.std(t)[:, None, None, None]
        z = torch.randn(X0b.shape, generator=g, dtype=X0b.dtype)
        xt = sde.mean(X0b, Yb, t[:, None, None, None]) + std * z
        s = score_of(net, xt, Yb, Pb, t)
        loss = (s * std + z).abs().pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for pe, pm in zip(ema.parameters(), model.parameters(), strict=True):
                pe.mul_(ema_decay).add_(pm.detach(), alpha=1 - ema_decay)
        step += 1
        loss_v = float(loss.detach())
        if step % checkpoint_every == 0:
            _save(ckpt, model, opt, ema, step, g)
        if _sync_steps(time.perf_counter() - start > limit):
            break
    _save(ckpt, model, opt, ema, step, g)
    ema.eval()
    model.eval()
    return ema, {"steps": step, "loss": loss_v, "seconds": time.perf_counter() - start}


def main(argv=None) -> int:
    """Entry point for ``torchrun -m phonepure.train``: trains a DiffWave on a folder of wavs
    (or on synthetic tones with ``--synthetic``) with DDP when launched by torchrun.

    Returns
    -------
    int
        Exit status.
    """
    import os

    import torch.distributed as dist

    ap = argparse.ArgumentParser(
        prog="phonepure.train",
        description="Train the stage-1 DiffWave on a folder of clean speech (DDP under torchrun).",
    )
    ap.add_argument("model", choices=["diffwave"], help="what to train")
    ap.add_argument("--wav-dir", type=Path, help="folder of clean *.wav files (any rate, mono)")
    ap.add_argument(
        "--synthetic", action="store_true", help="three sine tones instead of --wav-dir (smoke)"
    )
    ap.add_argument("--steps", type=positive_int, default=10, help="optimiser steps (default: 10)")
    ap.add_argument("--layers", type=positive_int, default=6, help="residual blocks (default: 6)")
    ap.add_argument(
        "--channels", type=positive_int, default=32, help="residual/skip width (default: 32)"
    )
    ap.add_argument(
        "--checkpoint",
        type=Path,
        required=True,
        help="checkpoint file, written by rank 0 and resumed from when it exists",
    )
    ap.add_argument(
        "--checkpoint-every", type=positive_int, default=50, help="steps between checkpoints (50)"
    )
    args = ap.parse_args(argv)
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("gloo")
    torch.manual_seed(0)  # same init on every rank (DDP also broadcasts rank 0's)
    if args.synthetic:
        tt = torch.arange(16000) / 16000.0
        wavs = [0.3 * torch.sin(2 * math.pi * f * tt) for f in (220.0, 330.0, 440.0)]
    else:
        from .audio import load

        if args.wav_dir is None:
            ap.error("give --wav-dir or --synthetic")
        wavs = [load(p)[0] for p in sorted(args.wav_dir.glob("*.wav"))]
    model = DiffWave(args.channels, args.channels, args.layers, min(args.layers, 6))
    info = train_diffwave(
        model,
        wavs,
        steps=args.steps,
        batch=2,
        seg=2000,
        checkpoint=args.checkpoint,
        checkpoint_every=args.checkpoint_every,
    )
    _, rank, world = _dist()
    digest = float(sum(p.detach().double().sum() for p in model.parameters()))
    print(f"rank {rank}/{world} steps {info['steps']} param_sum {digest:.10f}", flush=True)
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
