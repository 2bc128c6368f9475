"""Off-policy training of the rate net and free-energy net with the PINN loss (resumable, DDP).

Source: Holderrieth, Albergo, Jaakkola, "LEAPS", ICML 2025, Sec. 6 and App. (training details);
defaults from the official code's configuration files (malbergo/leaps): Adam 3e-4, StepLR
gamma 0.995 every 1000 steps, 200 walkers, 400 (x, t) pairs per loss batch, dt = 0.008
(125 steps), 20 000 steps with a quadratic horizon curriculum, a buffer of 100 rollouts
refreshed every 100 steps, Metropolis moves in training rollouts only.

Under ``torch.distributed`` (e.g. ``torchrun``) the nets are wrapped in
``DistributedDataParallel``; each rank keeps its own walkers, buffer and generator (seed + rank).
"""

import math
import warnings
from collections import deque
from pathlib import Path

import torch

from icml25_core import check_choice, check_scalar, progress

from .loss import pinn_loss
from .nets import check_net_fits
from .sampler import StiffStepWarning, sample, suggested_steps, time_grid

__all__ = ["Trainer"]


def _steps_of(n_steps, dt) -> int:
    """n_steps from `n_steps` or `dt` (default 125, the official dt = 0.008)."""
    if n_steps is not None and dt is not None:
        raise ValueError("give `n_steps` or `dt`, not both")
    if dt is None:
        return 125 if n_steps is None else n_steps
    dt = float(check_scalar(dt, "dt", low=0.0, high=1.0, inclusive="right"))
    steps = round(1.0 / dt)
    if abs(steps * dt - 1.0) > 1e-6:  # a float32 dt = 0.1 is 1e-8 off
        low, high = math.floor(1 / dt), math.ceil(1 / dt)
        raise ValueError(
            f"`dt` = {dt} does not divide 1 (1 / dt = {1 / dt:.4g}); use dt = 1/{low} or "
            f"1/{high}, or pass n_steps"
        )
    return steps


def _dist():
    d = torch.distributed
    return d if d.is_available() and d.is_initialized() else None


class Trainer:
    """Train a locally equivariant rate net (and F-net) on a path with the PINN loss.

    Parameters
    ----------
    path : IsingPath, PottsPath or GraphIsingPath
    net : nn.Module
        Locally equivariant rate net (``q`` matching the path).
    fnet : nn.Module
        Free-energy net t -> F_t (FreeEnergyNet).
    lr : float, default=3e-4
        Adam learning rate (official code).
    lr_gamma, lr_step : float, int, default=0.995, 1000
        StepLR decay and period in steps (official code).
    n_walkers : int, default=200
        Walkers per training rollout (official code).
    batch_size : int, default=400
        (x, t) pairs per loss batch, drawn uniformly from the buffer (official code).
    n_steps : int, optional
        Grid steps of a rollout; default 125 (dt = 0.008, official code). Give `n_steps` or
        `dt`, not both.
    dt : float, optional
        The step in the official configurations' units: n_steps = 1 / dt, which must be a
        whole number (within 1e-6; dt = 0.008 -> 125). A dt that does not divide 1 is
        refused rather than rounded (the official ``int(1 / dt)`` stops short of t = 1).
    grid : {"uniform", "exp"} or callable, default="uniform"
    curriculum_steps : int, default=20000
        Steps over which the rollout horizon grows quadratically: after s steps it is
        ceil(N sqrt((s + 1) / S)), so larger horizons are repeated more (official code's
        curriculum, its exact schedule reconstructed); 0 disables it (full horizon).
    warmup_steps : int, default=0
        Steps at horizon 1 before the curriculum (official Potts: 1000).
    buffer_size : int, default=100
        Rollouts kept (FIFO) in the replay buffer (official code).
    refresh_every : int, default=100
        Steps between new rollouts (official code).
    mcmc_sweeps : int, default=1
        Metropolis sweeps per rollout step (official: 200 single-site updates per step on
        15 x 15, about one sweep).
    scheme : {"euler", "tau_leap"}, default="euler"
    seed : int, default=0
        Generator seed (plus the rank under torch.distributed).
    checkpoint_dir : str or Path, optional
        Where to save ``trainer-rank<r>.pt`` every `checkpoint_every` steps and at the end of
        ``fit``; an existing checkpoint is resumed (refused if written for another path).
    checkpoint_every : int, default=100

    Attributes
    ----------
    step_ : int
        Steps done.
    history_ : list of float
        Loss per step.
    worst_h_rate_ : float
        Largest h x exit rate over the rollouts so far (> 1: stiff; ``fit`` then warns once
        with :class:`StiffStepWarning`).

    Raises
    ------
    ValueError
        Out-of-range settings, a net whose q or n_sites differs from the path's, and (in
        ``fit``) a checkpoint written for another path.
    TypeError
        Wrong types, a net or fnet that is not an nn.Module.
    """

    def __init__(self, path, net, fnet, *, lr=3e-4, lr_gamma=0.995, lr_step=1000, n_walkers=200,
                 batch_size=400, n_steps=None, dt=None, grid="uniform", curriculum_steps=20000,
                 warmup_steps=0, buffer_size=100, refresh_every=100, mcmc_sweeps=1,
                 scheme="euler", seed=0, checkpoint_dir=None, checkpoint_every=100):  # fmt: skip
        check_scalar(lr, "lr", low=0.0, inclusive="neither")
        n_steps = _steps_of(n_steps, dt)
        check_scalar(lr_gamma, "lr_gamma", low=0.0, high=1.0, inclusive="right")
        for name, value, low in [
            ("lr_step", lr_step, 1), ("n_walkers", n_walkers, 1), ("batch_size", batch_size, 1),
            ("n_steps", n_steps, 1), ("curriculum_steps", curriculum_steps, 0),
            ("warmup_steps", warmup_steps, 0), ("buffer_size", buffer_size, 1),
            ("refresh_every", refresh_every, 1), ("mcmc_sweeps", mcmc_sweeps, 0),
            ("seed", seed, 0), ("checkpoint_every", checkpoint_every, 1),
        ]:  # fmt: skip
            check_scalar(value, name, kind=int, low=low)
        check_choice(scheme, "scheme", ("euler", "tau_leap"))
        time_grid(n_steps, grid=grid)  # validates the grid
        check_net_fits(net, path)
        if not isinstance(fnet, torch.nn.Module):
            raise TypeError(f"`fnet` must be a torch.nn.Module, got {type(fnet).__name__}")
        self.path, self.net, self.fnet = path, net, fnet
        self.batch_size, self.n_steps, self.grid = batch_size, n_steps, grid
        self.n_walkers, self.mcmc_sweeps, self.scheme = n_walkers, mcmc_sweeps, scheme
        self.curriculum_steps, self.warmup_steps = curriculum_steps, warmup_steps
        self.refresh_every, self.checkpoint_every = refresh_every, checkpoint_every
        dist = _dist()
        self.rank = dist.get_rank() if dist else 0
        self.generator = torch.Generator().manual_seed(seed + self.rank)
        self.net_ddp: torch.nn.Module
        self.fnet_ddp: torch.nn.Module
        if dist:
            from torch.nn.parallel import DistributedDataParallel

            self.net_ddp = DistributedDataParallel(net)
            self.fnet_ddp = DistributedDataParallel(fnet)
        else:
            self.net_ddp, self.fnet_ddp = net, fnet
        params = list(net.parameters()) + list(fnet.parameters())
        self.optimizer = torch.optim.Adam(params, lr=lr)
        self.scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, lr_step, lr_gamma)
        self.buffer: deque[tuple[torch.Tensor, torch.Tensor]] = deque(maxlen=buffer_size)
        self.checkpoint = (
            None if checkpoint_dir is None else Path(checkpoint_dir) / f"trainer-rank{self.rank}.pt"
        )
        self.step_ = 0
        self.history_ = []
        self.worst_h_rate_ = 0.0

    def horizon(self, step: int) -> int:
        """Rollout horizon (grid steps) at training step `step`: 1 during warm-up, then
        ceil(N sqrt((s + 1) / S)), reaching N (t = 1) at s = S - 1."""
        s = step - self.warmup_steps
        if s < 0:
            return 1
        if self.curriculum_steps == 0 or s >= self.curriculum_steps:
            return self.n_steps
        return min(
            self.n_steps, math.ceil(self.n_steps * math.sqrt((s + 1) / self.curriculum_steps))
        )

    def _rollout(self):
        was_training = self.net.training
        self.net.eval()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StiffStepWarning)  # one summary per fit instead
            result = sample(
                self.path, self.net, self.n_walkers, self.n_steps, grid=self.grid,
                scheme=self.scheme, mcmc_sweeps=self.mcmc_sweeps, generator=self.generator,
                keep_trajectory=True, horizon=self.horizon(self.step_),
            )  # fmt: skip
        self.worst_h_rate_ = max(self.worst_h_rate_, max(result.meta["max_h_rate"]))
        self.net.train(was_training)
        assert result.trajectory is not None  # keep_trajectory=True
        ts, xs = zip(*result.trajectory, strict=True)
        self.buffer.append((torch.cat(ts), torch.cat(xs)))

    def _batch(self):
        t = torch.cat([b[0] for b in self.buffer])
        x = torch.cat([b[1] for b in self.buffer])
        idx = torch.randint(0, t.numel(), (self.batch_size,), generator=self.generator)
        return x[idx], t[idx]

    def _target(self) -> dict:
        """What defines the path's target, stored with a checkpoint so that a resume under
        another path (model, lattice, beta, couplings, graph) is refused."""
        target = {"path": type(self.path).__name__, "site_shape": list(self.path.site_shape),
                  "q": self.path.q, "beta": self.path.beta, "J": list(self.path.J)}  # fmt: skip
        for name in ("field", "edges", "weights"):
            if hasattr(self.path, name):
                value = getattr(self.path, name)
                target[name] = value.tolist() if torch.is_tensor(value) else list(value)
        return target

    def _state(self):
        return {
            "target": self._target(), "step": self.step_, "history": self.history_,
            "net": self.net.state_dict(),
            "fnet": self.fnet.state_dict(), "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(), "generator": self.generator.get_state(),
            "buffer": list(self.buffer),
        }  # fmt: skip

    def save(self) -> None:
        """Write the checkpoint (atomically: temporary file, then rename)."""
        if self.checkpoint is None:
            return
        self.checkpoint.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.checkpoint.with_suffix(".tmp")
        torch.save(self._state(), tmp)
        tmp.replace(self.checkpoint)

    def load(self) -> bool:
        """Resume from the checkpoint if there is one; returns whether it did."""
        if self.checkpoint is None or not self.checkpoint.exists():
            return False
        state = torch.load(self.checkpoint, weights_only=False)
        # checkpoints written before the target was stored carry none and are not checked
        if state.get("target", self._target()) != self._target():
            raise ValueError(
                f"`checkpoint_dir`: {self.checkpoint} was written for another path "
                f"({state['target']}), not this one ({self._target()}); use a new directory"
            )
        self.net.load_state_dict(state["net"])
        self.fnet.load_state_dict(state["fnet"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.generator.set_state(state["generator"])
        self.buffer.clear()
        self.buffer.extend(state["buffer"])
        self.step_, self.history_ = state["step"], list(state["history"])
        return True

    def fit(self, steps: int, *, show_progress: bool = True):
        """Train until `steps` steps in total have been done (resuming a checkpoint); returns self.

        Each step: a new rollout into the buffer every `refresh_every` steps, then one Adam step
        on the PINN loss of `batch_size` buffered (x, t) pairs.

        Raises
        ------
        FloatingPointError
            If the loss becomes NaN or infinite (the training diverged; lower `lr`).

        Warns
        -----
        StiffStepWarning
            Once, if a rollout's h x exit rate exceeded 1.
        """
        check_scalar(steps, "steps", kind=int, low=0)
        self.load()
        self.net.train()
        bar = progress(total=steps, desc="LEAPS train", unit="step",
                       disable=not show_progress or self.rank != 0)  # fmt: skip
        bar.update(self.step_)
        while self.step_ < steps:
            if self.step_ % self.refresh_every == 0 or not self.buffer:
                self._rollout()
            x, t = self._batch()
            loss = pinn_loss(self.path, self.net_ddp, self.fnet_ddp, x, t)
            if not torch.isfinite(loss):
                bar.close()
                raise FloatingPointError(
                    f"training diverged at step {self.step_}: the PINN loss is {loss.item()}; "
                    f"lower `lr` (now {self.optimizer.param_groups[0]['lr']:g}). The last "
                    "checkpoint (if any) holds the nets before the divergence"
                )
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.scheduler.step()
            self.step_ += 1
            self.history_.append(loss.item())
            bar.update(1)
            bar.set_postfix(loss=f"{self.history_[-1]:.3g}", horizon=self.horizon(self.step_ - 1))
            if self.step_ % self.checkpoint_every == 0:
                self.save()
        bar.close()
        self.save()
        if self.worst_h_rate_ > 1:
            warnings.warn(
                f"training rollouts were stiff: h x exit rate reached {self.worst_h_rate_:.4f} "
                f"> 1 (the Euler jump probability was clamped); consider n_steps >= "
                f"{suggested_steps(self.n_steps, self.worst_h_rate_)}",
                StiffStepWarning,
                stacklevel=2,
            )
        return self
