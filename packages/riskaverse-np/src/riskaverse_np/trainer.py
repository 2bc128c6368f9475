r"""Train a neural process on a task pool for its tail (or its mean) at an equal gradient budget.

Methods (spec Sec. 2): ``mirror_prox`` (:class:`~riskaverse_np.MirrorProxCVaR`), ``erm`` (batch
mean), ``topk_cvar`` (mean of the worst $\lceil(1-\alpha)b\rceil$ batch losses, biased),
``kde_var`` (DR-MAML's ``drloss``) and ``worst`` (batch max). Every per-task backward counts one
gradient evaluation (mirror prox's snapshots and $\tilde\theta$ evaluations too), and every method
stops when its next step would exceed ``grad_budget``.
"""

from __future__ import annotations

import math
import os
import signal
import threading
from functools import cache, partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx, serialization

from icml25_core import check_choice, check_scalar

from .mirror_prox import MirrorProxCVaR, _split, tree_from_leaves, tree_to_leaves
from .risk import check_alpha, check_kde_alpha, cvar, kde_var, topk_cvar_loss
from .tasks import TaskPool

__all__ = ["METHODS", "RiskAverseTrainer", "evaluate_model"]

METHODS = ("mirror_prox", "erm", "topk_cvar", "kde_var", "worst")


@cache
def _reducer(method: str, alpha: float):
    """The batch objective of a baseline as a function ``(losses [b], var) -> scalar``."""
    if method == "erm":
        return lambda losses, var: jnp.mean(losses)
    if method == "worst":
        return lambda losses, var: jnp.max(losses)
    if method == "topk_cvar":
        return lambda losses, var: topk_cvar_loss(losses, alpha)
    return lambda losses, var: jnp.mean(jnp.maximum(losses - var, 0.0))  # kde_var (drloss)


@partial(jax.jit, static_argnums=(0, 1, 2, 3))
def _baseline_step(loss_fn, graphdef, optimizer, reducer, params, other, opt_state, idx, key, var):
    def objective(pr):
        losses = loss_fn(nnx.merge(graphdef, pr, other), idx, key)
        return reducer(losses, var), losses

    (_, losses), grad = jax.value_and_grad(objective, has_aux=True)(params)
    updates, opt_state = optimizer.update(grad, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, losses


@partial(jax.jit, static_argnums=(0, 1))
def _forward(loss_fn, graphdef, params, other, idx, key):
    return loss_fn(nnx.merge(graphdef, params, other), idx, key)


def _check_model_fits(model, pool: TaskPool) -> None:
    """Refuse a model without ``task_loss`` or one that cannot read the pool's tasks."""
    task_loss = getattr(model, "task_loss", None)
    if not callable(task_loss):
        raise TypeError("`model` must have a task_loss(batch) -> [B] method (see CNP)")
    try:
        probe = np.asarray(task_loss(pool.batch(np.arange(1))))
    except Exception as error:
        raise ValueError(
            f"`model` cannot compute task_loss on this pool's tasks (dim_x = "
            f"{pool.tasks.xc.shape[-1]}, dim_y = {pool.tasks.yc.shape[-1]}?): {error}"
        ) from error
    if probe.shape != (1,):
        raise ValueError(f"`model`.task_loss must return [B]; got shape {probe.shape} for B=1")
    if not np.issubdtype(probe.dtype, np.floating):
        raise TypeError(
            f"`model`.task_loss must return floating losses, got dtype {probe.dtype} "
            "(integer losses have zero gradient)"
        )


def evaluate_model(model, pool: TaskPool, alpha: float = 0.7, chunk: int = 512) -> dict:
    r"""Per-task losses of `model` on every task of `pool` and their summaries.

    Parameters
    ----------
    model : nnx.Module with ``task_loss(batch) -> [B]``
    pool : TaskPool
    alpha : float in [0, 1), default=0.7
        Level of the reported CVaR.
    chunk : int >= 1, default=512
        Tasks per batched pass.

    Raises
    ------
    TypeError
        If `pool` is not a TaskPool or `model` has no ``task_loss``.
    ValueError
        If `model` cannot read the pool's tasks (other dimensions) or `alpha` is out of range.

    Returns
    -------
    dict
        ``mean``, ``cvar`` ($\mathrm{CVaR}_\alpha$, :func:`~riskaverse_np.cvar`), ``worst_1pct``
        ($\mathrm{CVaR}_{0.99}$: the mean of the worst 1 % with the fractional boundary),
        ``per_task`` (ndarray [N], float64), ``per_group`` (mean loss per group name).
    """
    if not isinstance(pool, TaskPool):
        raise TypeError(f"`pool` must be a TaskPool, got {type(pool).__name__}")
    alpha = check_alpha(alpha)
    check_scalar(chunk, "chunk", kind=int, low=1)
    _check_model_fits(model, pool)
    graphdef, params, other = _split(model)
    loss_fn = pool.loss_fn()
    key = jax.random.PRNGKey(0)
    parts = []
    for start in range(0, pool.n_tasks, chunk):
        idx = jnp.arange(start, min(start + chunk, pool.n_tasks))
        parts.append(np.asarray(_forward(loss_fn, graphdef, params, other, idx, key)))
    per_task = np.concatenate(parts).astype(np.float64)
    per_group = {
        name: float(per_task[pool.groups == g].mean())
        for g, name in enumerate(pool.group_names)
        if np.any(pool.groups == g)
    }
    return {
        "mean": float(per_task.mean()),
        "cvar": float(cvar(per_task, alpha)),
        "worst_1pct": float(cvar(per_task, 0.99)),
        "per_task": per_task,
        "per_group": per_group,
    }


class RiskAverseTrainer:
    r"""Train `model` on `pool` with one of :data:`METHODS` for ``grad_budget`` per-task
    gradient evaluations, with resumable checkpoints and a progress bar.

    Parameters
    ----------
    model : nnx.Module
        A neural process (``task_loss(batch) -> [B]``); trained in place.
    pool : TaskPool
        The fixed training pool (N tasks).
    alpha : float in [0, 1), default=0.7
        Confidence level of the CVaR (tail = worst 30 %) [reconstructed default, spec Sec. 3].
    method : {"mirror_prox", "erm", "topk_cvar", "kde_var", "worst"}, default="mirror_prox"
    grad_budget : int >= 1, default=24000
        Per-task gradient evaluations (spec Sec. 3's CLI default). The minimum is one step: b
        for the baselines, ``2 b + N`` for ``mirror_prox`` (one snapshot of the N tasks and two
        batches; ``2 N`` with ``tasks_per_step=None``).
    seed : int >= 0, default=0
        Task draws (baselines: ``numpy.random.default_rng((seed, step))``; mirror prox:
        ``default_rng((seed, step, phase))``) and point keys.
    checkpoint : str or path, optional
        File written every `checkpoint_every` steps, at the end and on Ctrl-C (after the step
        in progress). When it exists it is loaded **on construction** (same settings and the
        same pool, by :meth:`TaskPool.fingerprint`, required) and :meth:`fit` continues it.
    tasks_per_step : int >= 1 or None, default=16
        b; ``None``: the full pool every step (deterministic mirror prox; the baselines see all
        N tasks per step).
    lr : float > 0, default=1e-3
        Adam's learning rate (all methods).
    eta_p, inner_steps, mix_uniform, theta_vr, aggregate, average_start
        Passed to :class:`~riskaverse_np.MirrorProxCVaR` (``mirror_prox`` only); defaults
        0.05, 64, 0.1, False, "weighted", 0.5 [reconstructed].
    checkpoint_every : int >= 1, default=200
    progress : bool, default=True
        tqdm bar on stderr.
    mesh : jax.sharding.Mesh, optional
        Data parallelism for ``mirror_prox`` (see :class:`~riskaverse_np.MirrorProxCVaR`);
        refused for the other methods (they run on JAX's default device).

    Attributes
    ----------
    total_steps : int
        Steps the budget allows.
    history : dict of lists
        ``step``, ``grad_evals``, ``batch_loss`` (every 10 steps).

    Raises
    ------
    ValueError
        Naming the argument (out-of-range numbers, unknown method, a budget below one step,
        ``alpha = 0`` with ``kde_var``, `checkpoint` a directory); if `checkpoint` exists but is
        corrupt or was written with other settings or another pool.
    TypeError
        If `pool` is not a TaskPool.
    """

    def __init__(
        self,
        model,
        pool: TaskPool,
        alpha: float = 0.7,
        method: str = "mirror_prox",
        grad_budget: int = 24000,
        seed: int = 0,
        checkpoint=None,
        *,
        tasks_per_step: int | None = 16,
        lr: float = 1e-3,
        eta_p: float = 0.05,
        inner_steps: int = 64,
        mix_uniform: float = 0.1,
        theta_vr: bool = False,
        aggregate: str = "weighted",
        average_start: float = 0.5,
        checkpoint_every: int = 200,
        progress: bool = True,
        mesh=None,
    ) -> None:
        if not isinstance(pool, TaskPool):
            raise TypeError(f"`pool` must be a TaskPool, got {type(pool).__name__}")
        if not isinstance(model, nnx.Module):
            raise TypeError(f"`model` must be a flax.nnx.Module, got {type(model).__name__}")
        self.alpha = check_alpha(alpha)
        check_choice(method, "method", METHODS)
        if method == "kde_var":
            check_kde_alpha(alpha)
        if mesh is not None and method != "mirror_prox":
            raise ValueError(
                f"`mesh` is only used by method='mirror_prox'; {method!r} runs on the default "
                "device (pass mesh=None)"
            )
        check_scalar(grad_budget, "grad_budget", kind=int, low=1)
        check_scalar(seed, "seed", kind=int, low=0)
        if tasks_per_step is not None:
            check_scalar(tasks_per_step, "tasks_per_step", kind=int, low=1, high=pool.n_tasks)
        check_scalar(checkpoint_every, "checkpoint_every", kind=int, low=1)
        check_scalar(inner_steps, "inner_steps", kind=int, low=1)
        if checkpoint is not None and not isinstance(checkpoint, str | os.PathLike):
            raise TypeError(f"`checkpoint` must be a path, got {type(checkpoint).__name__}")
        if checkpoint is not None and Path(checkpoint).is_dir():
            raise ValueError(f"`checkpoint` {str(checkpoint)!r} is a directory, not a file path")
        _check_model_fits(model, pool)
        self.model, self.pool, self.method = model, pool, method
        self.grad_budget, self.seed = grad_budget, seed
        self.checkpoint = None if checkpoint is None else Path(checkpoint)
        self.tasks_per_step, self.lr = tasks_per_step, float(lr)
        self.checkpoint_every, self.progress = checkpoint_every, progress
        self.loss_fn = pool.loss_fn()
        n = pool.n_tasks
        b = n if tasks_per_step is None else tasks_per_step
        if method == "mirror_prox" and tasks_per_step is None:  # full batch: no snapshots
            per_step = 2 * n * (2 if theta_vr else 1)
            steps, minimum = grad_budget // per_step, per_step
        elif method == "mirror_prox":
            per_step = 2 * b * (2 if theta_vr else 1)  # ℓ̃ reused: all points of each task
            steps = self._mp_steps(grad_budget, per_step, n, inner_steps)
            minimum = per_step + n
        else:
            steps, minimum = grad_budget // b, b
        if steps < 1:
            raise ValueError(
                f"`grad_budget`={grad_budget} does not pay for one step of {method}: the minimum "
                f"is {minimum} with {n} tasks and tasks_per_step={tasks_per_step}"
            )
        self.total_steps = steps
        self.config = {
            "method": method, "alpha": self.alpha, "grad_budget": grad_budget, "seed": seed,
            "tasks_per_step": tasks_per_step, "lr": self.lr, "n_tasks": n, "eta_p": eta_p,
            "inner_steps": inner_steps, "mix_uniform": mix_uniform, "theta_vr": theta_vr,
            "aggregate": aggregate, "average_start": average_start, "pool": pool.fingerprint(),
        }  # fmt: skip
        self.history: dict[str, list] = {"step": [], "grad_evals": [], "batch_loss": []}
        self.step = 0
        self.grad_evals = 0
        self.mp: MirrorProxCVaR | None = None
        if method == "mirror_prox":
            self.mp = MirrorProxCVaR(
                model, n, self.alpha, lr=lr, eta_p=eta_p, step_rule="adam",
                inner_steps=inner_steps, tasks_per_step=tasks_per_step, mix_uniform=mix_uniform,
                theta_vr=theta_vr, aggregate=aggregate, average_start=average_start,
                total_steps=steps, resample_snapshot=False, seed=seed, mesh=mesh,
            )  # fmt: skip
        else:
            self.graphdef, self.params, self.other = _split(model)
            self.optimizer = optax.adam(self.lr)
            self.opt_state = self.optimizer.init(self.params)
        self._batch = b
        if self.checkpoint is not None and self.checkpoint.is_file():
            self.restore()  # resume (or reuse a finished run) from construction on

    @staticmethod
    def _mp_steps(budget: int, per_step: int, n: int, inner: int) -> int:
        """The most steps T with ``T * per_step + ceil(T / inner) * n <= budget``."""
        steps = max(0, budget // (per_step + n / inner) + inner)
        while steps > 0 and steps * per_step + math.ceil(steps / inner) * n > budget:
            steps -= 1
        return int(steps)

    # ---------------------------------------------------------------- checkpoints
    def state_dict(self) -> dict:
        """Everything :meth:`fit` needs to resume (settings, step, counters, history, and the
        optimiser's state or the mirror prox's :meth:`~MirrorProxCVaR.state_dict`)."""
        state: dict[str, Any] = {
            "config": dict(self.config),
            "step": self.step,
            "grad_evals": self.grad_evals,
            "history": {k: list(v) for k, v in self.history.items()},
        }
        if self.mp is not None:
            state["mp"] = self.mp.state_dict()
        else:
            state["params"] = tree_to_leaves(self.params)
            state["opt_state"] = tree_to_leaves(self.opt_state)
        return state

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s output.

        Raises
        ------
        ValueError
            If it was saved with other settings (method, alpha, budget, seed, ...).
        """
        saved = {k: state["config"].get(k) for k in self.config}
        if saved != self.config:
            diff = {k: (saved[k], v) for k, v in self.config.items() if saved[k] != v}
            hint = (
                " ('pool' is a fingerprint of the task arrays: the pool differs from the one "
                "the checkpoint was trained on; gp_pool/digits_pool need the same seed)"
                if "pool" in diff
                else ""
            )
            raise ValueError(f"checkpoint settings differ (saved, now): {diff}{hint}")
        self.step, self.grad_evals = int(state["step"]), int(state["grad_evals"])
        self.history = {k: list(v) for k, v in state["history"].items()}
        if self.mp is not None:
            self.mp.load_state_dict(state["mp"])
        else:
            self.params = tree_from_leaves(self.params, state["params"])
            self.opt_state = tree_from_leaves(self.opt_state, state["opt_state"])
            nnx.update(self.model, self.params)

    def save(self, path=None) -> Path:
        """Write :meth:`state_dict` (msgpack, atomically) to `path` (default `checkpoint`)."""
        target = Path(path) if path is not None else self.checkpoint
        if target is None:
            raise ValueError("`path` is needed when the trainer has no `checkpoint`")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_bytes(serialization.msgpack_serialize(_plain(self.state_dict())))
        os.replace(tmp, target)
        return target

    def restore(self, path=None) -> None:
        """Load a checkpoint written by :meth:`save`.

        Raises
        ------
        ValueError
            If the file is missing, corrupt or not a riskaverse-np checkpoint (naming it), or was
            written with other settings.
        """
        source = Path(path) if path is not None else self.checkpoint
        if source is None or not source.is_file():
            raise ValueError(f"`path` {str(source)!r} is not a checkpoint file")
        try:
            state = serialization.msgpack_restore(source.read_bytes())
            if not isinstance(state, dict) or not isinstance(state.get("config"), dict):
                raise ValueError("no 'config' entry")
        except Exception as error:
            raise ValueError(
                f"checkpoint {str(source)!r} is corrupt or not a riskaverse-np checkpoint "
                f"({type(error).__name__}: {error}); delete or rename it to start afresh"
            ) from error
        try:
            self.load_state_dict(state)
        except (KeyError, TypeError, AttributeError) as error:
            raise ValueError(
                f"checkpoint {str(source)!r} is corrupt or not a riskaverse-np checkpoint "
                f"(missing or malformed entry: {error}); delete or rename it to start afresh"
            ) from error

    # ----------------------------------------------------------------------- train
    def fit(self, max_steps: int | None = None) -> dict:
        """Train until the budget is spent (resuming from `checkpoint` when it exists).

        Parameters
        ----------
        max_steps : int >= 0, optional
            Stop after this many steps of this call (the checkpoint is written): for testing
            an interruption.

        Returns
        -------
        dict
            The history (``step``, ``grad_evals``, ``batch_loss``).

        Raises
        ------
        FloatingPointError
            At the first step whose batch has a non-finite loss (naming the step and method);
            the diverged state is not checkpointed.
        KeyboardInterrupt
            On Ctrl-C, after finishing the step in progress and writing the checkpoint (with a
            `checkpoint`; a second Ctrl-C stops at once).
        """
        if max_steps is not None:
            check_scalar(max_steps, "max_steps", kind=int, low=0)
        if self.checkpoint is not None and self.checkpoint.is_file() and self.step == 0:
            self.restore()
        stop = (
            self.total_steps if max_steps is None else min(self.total_steps, self.step + max_steps)
        )
        interrupted: list[bool] = []
        previous_handler = None
        if self.checkpoint is not None and threading.current_thread() is threading.main_thread():

            def on_sigint(signum, frame):
                if interrupted:  # a second Ctrl-C stops at once, without a checkpoint
                    raise KeyboardInterrupt
                interrupted.append(True)

            previous_handler = signal.signal(signal.SIGINT, on_sigint)
        try:
            self._loop(stop, interrupted)
        finally:
            if previous_handler is not None:
                signal.signal(signal.SIGINT, previous_handler)
        if interrupted:
            raise KeyboardInterrupt(
                f"interrupted at step {self.step}; checkpoint written to {str(self.checkpoint)!r}"
            )
        if self.mp is None:
            nnx.update(self.model, self.params)
        return self.history

    def _loop(self, stop: int, interrupted: list) -> None:
        from tqdm.auto import tqdm

        bar = tqdm(
            total=self.total_steps, initial=self.step, desc=self.method, disable=not self.progress,
            leave=False, unit="step",
        )  # fmt: skip
        with bar:
            while self.step < stop:
                loss = self._one_step()
                self.step += 1
                if self.step % 10 == 0 or self.step == self.total_steps:
                    self.history["step"].append(self.step)
                    self.history["grad_evals"].append(self.grad_evals)
                    self.history["batch_loss"].append(loss)
                    bar.set_postfix(loss=f"{loss:.3f}", evals=self.grad_evals, refresh=False)
                if self.checkpoint is not None and self.step % self.checkpoint_every == 0:
                    self.save()
                bar.update(1)
                if interrupted:
                    break
        if self.checkpoint is not None:
            self.save()

    def _non_finite(self) -> FloatingPointError:
        return FloatingPointError(
            f"{self.method}: the model's task losses are not finite at step {self.step} "
            "(diverged? lower `lr`; NaN in the model or the data?); nothing of this step was "
            "checkpointed"
        )

    def _one_step(self) -> float:
        if self.mp is not None:
            try:
                info = self.mp.step(self.loss_fn)
            except FloatingPointError as error:
                raise FloatingPointError(f"mirror_prox: {error}") from error
            self.grad_evals = self.mp.grad_evals
            return info["batch_loss"]
        rng = np.random.default_rng((self.seed, self.step))
        idx = jnp.asarray(rng.choice(self.pool.n_tasks, self._batch, replace=False))
        key = jax.random.fold_in(jax.random.PRNGKey(self.seed), self.step)
        var = 0.0
        if self.method == "kde_var":  # VaR from the batch's current losses (forward only)
            values = np.asarray(
                _forward(self.loss_fn, self.graphdef, self.params, self.other, idx, key)
            )
            if not np.all(np.isfinite(values)):
                raise self._non_finite()
            var = kde_var(values, self.alpha)
        params, opt_state, losses = _baseline_step(
            self.loss_fn, self.graphdef, self.optimizer, _reducer(self.method, self.alpha),
            self.params, self.other, self.opt_state, idx, key, jnp.float32(var),
        )  # fmt: skip
        values = np.asarray(losses)
        if not np.all(np.isfinite(values)):
            raise self._non_finite()
        self.params, self.opt_state = params, opt_state
        self.grad_evals += self._batch
        return float(np.mean(values))

    # ---------------------------------------------------------------------- outputs
    def final_model(self):
        """The trained model: mirror prox's aggregated model, else the model itself."""
        if self.mp is not None:
            return self.mp.averaged_model()
        nnx.update(self.model, self.params)
        return self.model

    def evaluate(self, pool: TaskPool | None = None) -> dict:
        """:func:`evaluate_model` of :meth:`final_model` on `pool` (default the training pool)
        at this trainer's alpha."""
        return evaluate_model(self.final_model(), self.pool if pool is None else pool, self.alpha)


def _plain(value):
    """Nested dicts/lists with numpy arrays and Python numbers only (msgpack-able)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, jax.Array):
        return np.asarray(value)
    if isinstance(value, np.generic):
        return value.item()
    return value
