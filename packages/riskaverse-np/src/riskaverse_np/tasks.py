r"""Tasks for neural processes: the padded batch every model reads, and two finite task pools.

Axis letters: B tasks in a batch, Nc context points, Nt target points, dx input and dy output
dimensions, N tasks in a pool.

- :func:`gp_pool`: 1-D Gaussian-process regression tasks from a mixture of two lengthscales, drawn
  by numpy Cholesky (the NP literature's standard benchmark, spec Sec. 4b).
- :func:`digits_pool`: image completion on scikit-learn's bundled 8x8 digits (real input, spec
  Sec. 4a): x = pixel coordinates in [-1, 1]^2, y = intensity / 16.

Each pool task has a fixed context set (its size drawn once) and all of its points as targets,
so a task's loss is deterministic and a snapshot evaluates exactly the same points (spec Sec. 2).
"""

from __future__ import annotations

import hashlib
from typing import Any, NamedTuple

import numpy as np

from icml25_core import as_generator, check_choice, check_scalar

__all__ = ["TaskBatch", "TaskPool", "digits_pool", "gp_pool", "gp_predictive_nll", "make_batch"]


class TaskBatch(NamedTuple):
    """A padded batch of tasks (a JAX pytree: it passes through ``jit`` and ``vmap``).

    Attributes
    ----------
    xc : array, shape [B, Nc, dx], float32
        Context inputs.
    yc : array, shape [B, Nc, dy], float32
        Context outputs.
    xt : array, shape [B, Nt, dx], float32
        Target inputs.
    yt : array, shape [B, Nt, dy], float32
        Target outputs.
    mask_c : array, shape [B, Nc], bool
        True for real context points, False for padding (each task needs at least one).
    mask_t : array, shape [B, Nt], bool
        True for real target points, False for padding.
    """

    xc: Any
    yc: Any
    xt: Any
    yt: Any
    mask_c: Any
    mask_t: Any


def make_batch(xc, yc, xt, yt, mask_c=None, mask_t=None) -> TaskBatch:
    """Validate arrays and build a :class:`TaskBatch` of JAX arrays (float32 and bool masks).

    Parameters
    ----------
    xc, yc, xt, yt : array_like, shapes [B, Nc, dx], [B, Nc, dy], [B, Nt, dx], [B, Nt, dy]
        Context and target inputs and outputs (finite).
    mask_c, mask_t : array_like of bool (or ints 0/1), shapes [B, Nc] and [B, Nt], optional
        Which points are real; default all. Pad with finite values (zeros), not NaN: padding
        is masked out of every loss but must still be finite.

    Returns
    -------
    TaskBatch

    Raises
    ------
    ValueError
        Naming the tensor: wrong number of dimensions, mismatched batch, point or feature sizes,
        NaN or inf, a task with an empty context (no context point, or ``Nc = 0``), or no targets.
    """
    import jax.numpy as jnp

    arrays = {}
    for name, value in (("xc", xc), ("yc", yc), ("xt", xt), ("yt", yt)):
        raw = np.asarray(value) if value is not None else None
        if raw is None or raw.ndim != 3:
            shape = None if raw is None else raw.shape
            raise ValueError(f"`{name}` must be 3-D [B, N, d], got shape {shape}")
        if raw.dtype == object or not np.issubdtype(raw.dtype, np.number):
            raise ValueError(f"`{name}` must hold real numbers, got dtype {raw.dtype}")
        if not np.all(np.isfinite(raw)):
            raise ValueError(f"`{name}` must be finite (no NaN or inf)")
        if np.issubdtype(raw.dtype, np.floating) and raw.size and np.abs(raw).max() > 3.4e38:
            raise ValueError(
                f"`{name}` overflows float32 (|value| up to {np.abs(raw).max():.3g} > 3.4e38)"
            )
        arr = raw.astype(np.float32)
        arrays[name] = arr
    b, nc, dx = arrays["xc"].shape
    nt = arrays["xt"].shape[1]
    if nc == 0:
        raise ValueError("`xc` has an empty context (Nc = 0): every task needs a context point")
    if nt == 0:
        raise ValueError("`xt` has no target points (Nt = 0)")
    expected = {
        "yc": (b, nc, None),
        "xt": (b, None, dx),
        "yt": (b, nt, arrays["yc"].shape[2]),
    }
    for name, want in expected.items():
        got = arrays[name].shape
        if any(w is not None and w != g for w, g in zip(want, got, strict=True)):
            raise ValueError(
                f"`{name}` has shape {got}, which does not match `xc` {arrays['xc'].shape} "
                f"(expected {tuple('*' if w is None else w for w in want)})"
            )
    masks = {}
    for name, value, shape in (("mask_c", mask_c, (b, nc)), ("mask_t", mask_t, (b, nt))):
        m = np.ones(shape, bool) if value is None else np.asarray(value)
        if np.issubdtype(m.dtype, np.integer) and np.all((m == 0) | (m == 1)):
            m = m.astype(bool)  # 0/1 masks
        if m.dtype != np.bool_:
            raise ValueError(f"`{name}` must be bool (or ints 0/1), got dtype {m.dtype}")
        if m.shape != shape:
            raise ValueError(f"`{name}` must have shape {shape}, got {m.shape}")
        masks[name] = m
    if not masks["mask_c"].any(axis=1).all():
        task = int(np.argmin(masks["mask_c"].any(axis=1)))
        raise ValueError(f"`mask_c` leaves task {task} with an empty context")
    if not masks["mask_t"].any(axis=1).all():
        task = int(np.argmin(masks["mask_t"].any(axis=1)))
        raise ValueError(f"`mask_t` leaves task {task} without target points")
    xc_, yc_, xt_, yt_ = (jnp.asarray(arrays[k]) for k in ("xc", "yc", "xt", "yt"))
    return TaskBatch(xc_, yc_, xt_, yt_, jnp.asarray(masks["mask_c"]), jnp.asarray(masks["mask_t"]))


class TaskPool:
    """A finite pool of N tasks held as one padded batch, with a group label per task.

    Parameters
    ----------
    tasks : TaskBatch
        All tasks, shapes [N, ...] (build it with :func:`make_batch`).
    groups : array_like of int in [0, len(group_names)), shape [N], optional
        Group of each task (lengthscale component, digit class, ...), for reports; default all 0.
    group_names : sequence of str, optional
        Name of each group id; default ``["all"]``.

    Attributes
    ----------
    n_tasks : int
        N.
    tasks : TaskBatch
        The stored arrays, shapes [N, ...] (``pool.tasks.yt`` ...). :meth:`batch` is a *method*
        that gathers some of them: ``pool.batch(np.arange(4))``.
    groups : ndarray, shape [N], int64
    group_names : list of str

    Raises
    ------
    ValueError
        If `tasks` holds no task (N = 0) or `groups` is malformed.
    """

    def __init__(self, tasks: TaskBatch, groups=None, group_names=None) -> None:
        if not isinstance(tasks, TaskBatch):
            raise TypeError(f"`tasks` must be a TaskBatch (make_batch), got {type(tasks).__name__}")
        self.tasks = tasks
        self.n_tasks = int(tasks.xc.shape[0])
        if self.n_tasks == 0:
            raise ValueError("`tasks` has no tasks (N = 0): a pool needs at least one task")
        groups = np.zeros(self.n_tasks, np.int64) if groups is None else groups
        self.groups = np.asarray(groups)
        self.group_names = ["all"] if group_names is None else [str(g) for g in group_names]
        if self.groups.shape != (self.n_tasks,) or not np.issubdtype(self.groups.dtype, np.integer):
            raise ValueError(
                f"`groups` must be ints of shape ({self.n_tasks},), got {self.groups!r}"
            )
        if self.groups.min() < 0 or self.groups.max() >= len(self.group_names):
            raise ValueError(
                f"`groups` must lie in [0, {len(self.group_names)}) (one per `group_names`)"
            )
        self.groups = self.groups.astype(np.int64)
        # set by gp_pool (exact GP predictive) and digits_pool (which images)
        self.lengthscale: np.ndarray | None = None
        self.noise: float | None = None
        self.kernel: str | None = None
        self.image_index: np.ndarray | None = None
        self._loss_fn: Any = None
        self._fingerprint: str | None = None

    def __len__(self) -> int:
        return self.n_tasks

    def fingerprint(self) -> str:
        """A SHA-256 digest (16 hex digits) of the pool's arrays and masks: two pools with the
        same fingerprint hold the same tasks in the same order (checkpoints store it)."""
        if self._fingerprint is None:
            digest = hashlib.sha256()
            for leaf in self.tasks:
                arr = np.ascontiguousarray(np.asarray(leaf))
                digest.update(f"{arr.dtype}{arr.shape}".encode())
                digest.update(arr.tobytes())
            self._fingerprint = digest.hexdigest()[:16]
        return self._fingerprint

    def batch(self, task_idx) -> TaskBatch:
        """The tasks `task_idx` (int array [b], JAX-traceable) as a :class:`TaskBatch`."""
        return TaskBatch(*(leaf[task_idx] for leaf in self.tasks))

    def subset(self, task_idx) -> TaskPool:
        """A new pool holding only the tasks `task_idx` (numpy int array)."""
        idx = np.asarray(task_idx)
        return TaskPool(self.batch(idx), self.groups[idx], self.group_names)

    def loss_fn(self):
        """``loss_fn(model, task_idx, key) -> [b]``: the model's ``task_loss`` on these tasks
        (the protocol of :class:`~riskaverse_np.MirrorProxCVaR`; all points, key unused).
        The same function object on every call (it is a ``jit`` static: compiled once)."""
        if self._loss_fn is not None:
            return self._loss_fn
        tasks = self.tasks

        def loss_fn(model, task_idx, key):
            return model.task_loss(TaskBatch(*(leaf[task_idx] for leaf in tasks)))

        loss_fn.n_tasks = self.n_tasks  # type: ignore[attr-defined]  # checked by MirrorProxCVaR
        self._loss_fn = loss_fn
        return loss_fn


def _context_masks(rng: np.random.Generator, n_tasks: int, n_points: int, context) -> tuple:
    """Per task: a random context subset of size U{lo..hi} of the n points (targets: all)."""
    lo, hi = context
    sizes = rng.integers(lo, hi + 1, size=n_tasks)
    order = np.argsort(rng.random((n_tasks, n_points)), axis=1)
    ranks = np.argsort(order, axis=1)
    mask_c = ranks < sizes[:, None]
    # context points first, padded to hi: gather indices per task
    ctx_idx = np.argsort(~mask_c, axis=1, kind="stable")[:, :hi]
    mask_ctx = np.arange(hi)[None, :] < sizes[:, None]
    return ctx_idx, mask_ctx


def _check_context(context, n_points: int) -> tuple[int, int]:
    if (
        not isinstance(context, tuple | list)
        or len(context) != 2
        or not all(isinstance(c, int | np.integer) and not isinstance(c, bool) for c in context)
    ):
        raise ValueError(f"`context` must be a pair of ints (low, high), got {context!r}")
    lo, hi = int(context[0]), int(context[1])
    if not 1 <= lo <= hi <= n_points:
        raise ValueError(
            f"`context` must satisfy 1 <= low <= high <= {n_points} (an empty context is "
            f"refused), got {context!r}"
        )
    return lo, hi


def _eq_kernel(x: np.ndarray, lengthscale: float, kernel: str) -> np.ndarray:
    d = np.abs(x[:, None] - x[None, :])
    if kernel == "eq":
        return np.exp(-0.5 * (d / lengthscale) ** 2)
    r = d / lengthscale  # matern52
    return (1 + np.sqrt(5) * r + 5.0 / 3.0 * r**2) * np.exp(-np.sqrt(5) * r)


def gp_pool(
    n_tasks: int,
    lengthscales=(1.0, 0.25),
    mix=(0.8, 0.2),
    kernel: str = "eq",
    noise: float = 1e-2,
    n_points: int = 40,
    context=(3, 14),
    x_range=(-2.0, 2.0),
    seed=0,
) -> TaskPool:
    r"""A pool of 1-D GP regression tasks from a mixture of lengthscales (numpy Cholesky).

    Each task: a lengthscale drawn from `lengthscales` with probabilities `mix`; ``n_points``
    inputs uniform on `x_range`; ``y = f(x) + eps`` with ``f ~ GP(0, k)``, unit signal variance,
    ``eps ~ N(0, noise)``; a context of U{context} of the points; targets: all points.

    Parameters
    ----------
    n_tasks : int >= 1
        N.
    lengthscales : tuple of float > 0, default=(1.0, 0.25)
        Kernel lengthscales of the mixture components (spec Sec. 4b, reconstructed).
    mix : tuple of float, default=(0.8, 0.2)
        Component probabilities (sum to one): 20 % of the tasks are the hard, wiggly ones.
    kernel : {"eq", "matern52"}, default="eq"
        Covariance function.
    noise : float > 0, default=1e-2
        Observation noise *variance*.
    n_points : int >= 2, default=40
        Points per task.
    context : (int, int), default=(3, 14)
        Inclusive range of the context size.
    x_range : (float, float), default=(-2, 2)
        Input interval.
    seed : int, numpy Generator or None, default=0
        The same seed gives the same pool (so a checkpoint resumes on it); ``None`` draws a
        fresh pool from OS entropy.

    Returns
    -------
    TaskPool
        ``groups`` = lengthscale component index; ``group_names`` like ``"l=0.25"``.
        ``pool.lengthscale`` [N] holds each task's lengthscale, ``pool.noise`` the noise
        variance and ``pool.kernel`` the kernel name (for :func:`gp_predictive_nll`).

    Raises
    ------
    ValueError
        Naming the argument: non-positive sizes, lengthscales or noise, `mix` not a probability
        vector of the same length, bad `context` or `x_range`, unknown `kernel`.
    """
    check_scalar(n_tasks, "n_tasks", kind=int, low=1)
    check_scalar(n_points, "n_points", kind=int, low=2)
    check_scalar(noise, "noise", low=0.0, inclusive="neither")
    check_choice(kernel, "kernel", ("eq", "matern52"))
    ls = np.asarray(lengthscales, dtype=np.float64)
    pm = np.asarray(mix, dtype=np.float64)
    if ls.ndim != 1 or ls.size == 0 or not np.all(np.isfinite(ls)) or np.any(ls <= 0):
        raise ValueError(f"`lengthscales` must be positive numbers, got {lengthscales!r}")
    if pm.shape != ls.shape or np.any(pm < 0) or not np.isclose(pm.sum(), 1.0):
        raise ValueError(f"`mix` must be {ls.size} probabilities summing to 1, got {mix!r}")
    lo_x, hi_x = (float(v) for v in x_range)
    if not lo_x < hi_x:
        raise ValueError(f"`x_range` must be (low, high) with low < high, got {x_range!r}")
    lo, hi = _check_context(context, n_points)
    rng = as_generator(seed)
    comp = rng.choice(ls.size, size=n_tasks, p=pm)
    x = rng.uniform(lo_x, hi_x, size=(n_tasks, n_points))
    y = np.empty_like(x)
    for t in range(n_tasks):
        cov = _eq_kernel(x[t], ls[comp[t]], kernel) + noise * np.eye(n_points)
        chol = np.linalg.cholesky(cov)
        y[t] = chol @ rng.standard_normal(n_points)
    ctx_idx, mask_ctx = _context_masks(rng, n_tasks, n_points, (lo, hi))
    rows = np.arange(n_tasks)[:, None]
    tasks = make_batch(
        x[rows, ctx_idx][..., None],
        y[rows, ctx_idx][..., None],
        x[..., None],
        y[..., None],
        mask_ctx,
        None,
    )
    pool = TaskPool(tasks, comp, [f"l={v:g}" for v in ls])
    pool.lengthscale = ls[comp]
    pool.noise = float(noise)
    pool.kernel = kernel
    return pool


def gp_predictive_nll(pool: TaskPool) -> np.ndarray:
    r"""Exact GP predictive NLL per task (the Bayes-optimal loss on :func:`gp_pool` tasks).

    For each task, the mean over its targets of $-\log \mathcal N(y_t; \mu_t, \sigma_t^2)$ with
    the GP posterior given the context, $\mu = K_{tc}(K_{cc} + s I)^{-1} y_c$,
    $\sigma^2 = k(x_t, x_t) + s - K_{tc}(K_{cc} + s I)^{-1}K_{ct}$ (Rasmussen & Williams 2006,
    Eq. 2.23-2.24, plus the noise variance s for noisy targets), computed by numpy Cholesky.

    Parameters
    ----------
    pool : TaskPool
        A pool from :func:`gp_pool` (it carries the lengthscales, kernel and noise).

    Returns
    -------
    ndarray, shape [N], float64, nats per target point
    """
    if pool.lengthscale is None or pool.noise is None or pool.kernel is None:
        raise ValueError("`pool` must come from gp_pool (it needs its lengthscales and noise)")
    t = pool.tasks
    xc, yc = np.asarray(t.xc[..., 0], np.float64), np.asarray(t.yc[..., 0], np.float64)
    xt, yt = np.asarray(t.xt[..., 0], np.float64), np.asarray(t.yt[..., 0], np.float64)
    mc, mt = np.asarray(t.mask_c), np.asarray(t.mask_t)
    out = np.empty(pool.n_tasks)
    s, kern = pool.noise, pool.kernel
    for i in range(pool.n_tasks):
        c, tt = xc[i][mc[i]], xt[i][mt[i]]
        ell = float(pool.lengthscale[i])
        kcc = _eq_kernel(c, ell, kern) + s * np.eye(c.size)
        allx = np.concatenate([c, tt])
        kall = _eq_kernel(allx, ell, kern)
        ktc = kall[c.size :, : c.size]
        chol = np.linalg.cholesky(kcc)
        a = np.linalg.solve(chol, ktc.T)
        mu = a.T @ np.linalg.solve(chol, yc[i][mc[i]])
        var = 1.0 + s - np.sum(a * a, axis=0)
        y = yt[i][mt[i]]
        out[i] = np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * (y - mu) ** 2 / var)
    return out


_DIGITS_HELDOUT_PER_CLASS = 50  # 500 held-out images, class-balanced (spec Sec. 4a)


def digits_pool(
    split: str = "train",
    rare_classes=(0, 8),
    rare_fraction: float = 0.1,
    context=(3, 32),
    seed=0,
    n_tasks: int | None = None,
) -> TaskPool:
    r"""Image-completion tasks on scikit-learn's bundled 8x8 digits (real input).

    One task per image: x = the 64 pixel coordinates scaled to $[-1, 1]^2$, y = intensity / 16
    in [0, 1]; a random context of U{context} pixels, all 64 pixels as targets.

    The 1797 images are split once, independently of `seed`: 50 images per class (500) are held
    out (``split="test"``); the training pool (``split="train"``) draws ``n_tasks`` (default 512)
    of the rest so that the `rare_classes` together make `rare_fraction` of it.

    Parameters
    ----------
    split : {"train", "test"}, default="train"
    rare_classes : tuple of int in 0..9, default=(0, 8)
        Classes made rare in the training pool (spec Sec. 4a).
    rare_fraction : float in (0, 1), default=0.1
        Their share of the training pool.
    context : (int, int), default=(3, 32)
        Inclusive range of the context size.
    seed : int, numpy Generator or None, default=0
        Draws the training images and every task's context: the same seed gives the same pool
        (so a checkpoint resumes on it); ``None`` draws a fresh pool from OS entropy.
    n_tasks : int, optional
        Training pool size (default 512); for ``"test"`` a class-balanced subset of the 500.

    Returns
    -------
    TaskPool
        ``groups`` = digit class, ``group_names`` = ``"0"`` ... ``"9"``.

    Raises
    ------
    ValueError
        Naming the argument: unknown `split`, bad classes, fraction, context or size (more images
        than the split holds).
    """
    from sklearn.datasets import load_digits

    check_choice(split, "split", ("train", "test"))
    check_scalar(rare_fraction, "rare_fraction", low=0.0, high=1.0, inclusive="neither")
    rare = tuple(int(c) for c in rare_classes)
    if not rare or any(c < 0 or c > 9 for c in rare) or len(set(rare)) != len(rare):
        raise ValueError(f"`rare_classes` must be distinct digits 0..9, got {rare_classes!r}")
    lo, hi = _check_context(context, 64)
    digits = load_digits()
    images = digits.images.astype(np.float64) / 16.0
    labels = digits.target.astype(np.int64)
    split_rng = np.random.default_rng(20250713)  # the fixed train / held-out split
    held = np.concatenate(
        [
            split_rng.choice(np.flatnonzero(labels == c), _DIGITS_HELDOUT_PER_CLASS, replace=False)
            for c in range(10)
        ]
    )
    rest = np.setdiff1d(np.arange(labels.size), held)
    rng = as_generator(seed)
    if split == "test":
        chosen = np.sort(held)
        if n_tasks is not None:
            check_scalar(n_tasks, "n_tasks", kind=int, low=10, high=chosen.size)
            per = n_tasks // 10
            chosen = np.concatenate(
                [rng.choice(chosen[labels[chosen] == c], per, replace=False) for c in range(10)]
            )
    else:
        n = 512 if n_tasks is None else n_tasks
        check_scalar(n, "n_tasks", kind=int, low=2)
        n_rare = round(rare_fraction * n)
        rare_pool = rest[np.isin(labels[rest], rare)]
        common_pool = rest[~np.isin(labels[rest], rare)]
        if n_rare > rare_pool.size or n - n_rare > common_pool.size:
            raise ValueError(
                f"`n_tasks`={n} with `rare_fraction`={rare_fraction} needs {n_rare} rare and "
                f"{n - n_rare} common images; the training split has {rare_pool.size} and "
                f"{common_pool.size}"
            )
        chosen = np.concatenate(
            [
                rng.choice(rare_pool, n_rare, replace=False),
                rng.choice(common_pool, n - n_rare, replace=False),
            ]
        )
        chosen = chosen[rng.permutation(chosen.size)]
    grid = np.linspace(-1.0, 1.0, 8)
    rr, cc = np.meshgrid(grid, grid, indexing="ij")
    coords = np.stack([rr.ravel(), cc.ravel()], axis=1)  # [64, 2], row-major like the image
    y = images[chosen].reshape(chosen.size, 64)
    ctx_idx, mask_ctx = _context_masks(rng, chosen.size, 64, (lo, hi))
    rows = np.arange(chosen.size)[:, None]
    xall = np.broadcast_to(coords, (chosen.size, 64, 2))
    tasks = make_batch(
        xall[rows, ctx_idx],
        y[rows, ctx_idx][..., None],
        xall,
        y[..., None],
        mask_ctx,
        None,
    )
    pool = TaskPool(tasks, labels[chosen], [str(c) for c in range(10)])
    pool.image_index = chosen
    return pool
