r"""Conditional value at risk over a finite pool of tasks, its dual weights, the KL projection onto
the capped simplex, and the two mini-batch baselines.

Convention (DR-MAML's, Sec. 2 of the spec): ``alpha`` is the *confidence level*, the tail is the
worst ``1 - alpha`` of the tasks; ``alpha = 0`` is the mean. (sqwash and fast-dro use the tail
fraction instead: their ``alpha`` is our ``1 - alpha``.) Axis letter: N tasks (or b batch tasks).

Every function takes a numpy array, a list or tuple of numbers, a JAX array or (when torch is
installed) a torch tensor and returns the same type (numpy for lists and tuples). JAX inputs are
computed with ``jax.numpy`` (differentiable: the gradient of :func:`cvar` is its dual weights);
torch tensors are computed in float64 numpy and returned as a tensor of the input's dtype and
device, without autograd. numpy results keep a float32/float64 input's dtype; integer input
gives float64 and float16 input float32 (float16 cannot hold the weights to 1e-3).

``alpha`` is a Python (or numpy) number, not an array: under ``jax.jit`` pass it as a static
argument (``jax.jit(cvar, static_argnums=1)``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = [
    "cvar",
    "cvar_weights",
    "kde_var",
    "kde_var_loss",
    "project_capped_simplex_kl",
    "topk_cvar_loss",
]


# --------------------------------------------------------------------------- array plumbing
def _kind(x) -> str:
    module = type(x).__module__
    if module.startswith("jax") or module.startswith("jaxlib"):
        return "jax"
    if module.startswith("torch"):
        return "torch"
    return "numpy"


def _is_tracer(x) -> bool:
    try:
        import jax

        return isinstance(x, jax.core.Tracer)
    except ImportError:  # pragma: no cover - jax is a dependency
        return False


def _to_numpy(x, name: str) -> np.ndarray:
    if _kind(x) == "torch":
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x)
    except Exception as error:
        raise TypeError(f"`{name}` must be an array of numbers, got {type(x).__name__}") from error
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(f"`{name}` must be an array of real numbers, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise TypeError(f"`{name}` must be real, got dtype {arr.dtype}")
    return arr


def _check_vector(x, name: str, *, nonnegative: bool = False):
    """Validate a 1-D, non-empty, finite vector; return ``(kind, xp, array)`` where ``array`` is
    a float JAX array for JAX input and a float64 numpy array otherwise."""
    kind = _kind(x)
    if kind == "jax":
        import jax.numpy as jnp

        if x.ndim != 1:
            raise ValueError(f"`{name}` must be 1-D [N], got shape {tuple(x.shape)}")
        if x.shape[0] == 0:
            raise ValueError(f"`{name}` must not be empty")
        arr = x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(jnp.float32)
        if not _is_tracer(arr):
            host = np.asarray(arr)
            if not np.all(np.isfinite(host)):
                raise ValueError(f"`{name}` must be finite (no NaN or inf)")
            if nonnegative and np.any(host < 0):
                raise ValueError(f"`{name}` must be non-negative, got min {host.min():.3g}")
        return kind, jnp, arr
    arr = _to_numpy(x, name)
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D [N], got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"`{name}` must not be empty")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"`{name}` must be finite (no NaN or inf)")
    if nonnegative and np.any(arr < 0):
        raise ValueError(f"`{name}` must be non-negative, got min {arr.min():.3g}")
    return kind, np, arr


def _restore(result, original, kind: str):
    """Return `result` (numpy) as the input's type: float of the input's dtype for numpy (float64
    for integer input), a tensor on the input's device for torch."""
    if kind == "torch":  # the tensor's own constructor: same device, no torch import here
        like = original if original.is_floating_point() else original.double()
        return like.new_tensor(np.asarray(result, dtype=np.float64))
    if kind == "numpy":
        in_dtype = np.asarray(original).dtype
        dtype = (
            np.promote_types(in_dtype, np.float32)
            if np.issubdtype(in_dtype, np.floating)
            else np.float64
        )
        out = np.asarray(result, dtype=dtype)
        return out if out.ndim else out[()]
    return result


def check_alpha(alpha) -> float:
    """Validate the confidence level ``alpha`` in ``[0, 1)``; return it as a float.

    Parameters
    ----------
    alpha : float
        Confidence level; the tail is the worst ``1 - alpha`` of the tasks.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If `alpha` is not a real number (bools refused).
    ValueError
        If `alpha` is NaN or outside ``[0, 1)``.
    """
    if isinstance(alpha, bool) or not isinstance(alpha, int | float | np.integer | np.floating):
        hint = ""
        if hasattr(alpha, "ndim"):
            hint = (
                " (a 0-d array or a traced value: pass a Python float, and under jax.jit make "
                "`alpha` static, e.g. jax.jit(cvar, static_argnums=1))"
            )
        raise TypeError(
            f"`alpha` must be a real number in [0, 1), got {type(alpha).__name__}{hint}"
        )
    alpha = float(alpha)
    if math.isnan(alpha) or not 0.0 <= alpha < 1.0:
        raise ValueError(f"`alpha` must be in [0, 1) (confidence level), got {alpha!r}")
    return alpha


def _tail(n: int, alpha: float) -> tuple[float, int]:
    """``(m, k)``: the tail mass ``m = (1 - alpha) N`` in tasks and ``k = floor(m)`` robust to
    float error (``(1 - 0.7) * 10`` is 3.0000000000000004, ``(1 - 0.9) * 10`` is
    0.9999999999999998)."""
    m = (1.0 - alpha) * n
    k = math.floor(m + 1e-9)
    return m, min(k, n)


def _cvar_weights_sorted(n: int, alpha: float) -> np.ndarray:
    """Best-response weights in *descending* order of the losses (spec Sec. 2)."""
    m, k = _tail(n, alpha)
    w = np.zeros(n)
    if m <= 1.0 + 1e-9:  # the tail is at most one task: the max
        w[0] = 1.0
        return w
    if k >= m:  # m is an integer up to float error: the mean of the top k, summing to one
        w[:k] = 1.0 / k
        return w
    cap = 1.0 / m
    w[:k] = cap
    if k < n:
        w[k] = 1.0 - k * cap
    return w


# --------------------------------------------------------------------------------- CVaR
def cvar_weights(losses, alpha: float):
    r"""Best-response dual weights $p^\star \in P_\alpha$ with $\sum_\tau p^\star_\tau \ell_\tau =
    \mathrm{CVaR}_\alpha(\ell)$.

    Parameters
    ----------
    losses : array, shape [N], float (numpy, JAX or torch)
        Per-task losses.
    alpha : float in [0, 1)
        Confidence level: the tail is the worst ``1 - alpha`` of the tasks (DR-MAML convention).

    Returns
    -------
    array, shape [N], same type as `losses` (float64 for numpy/torch computation)
        ``cap = 1/((1 - alpha) N)`` on the k largest losses, ``1 - k cap`` on the (k+1)-th,
        zero elsewhere; ``k = floor((1 - alpha) N)``. Uniform when ``alpha = 0``; one-hot on the
        largest loss when ``(1 - alpha) N <= 1``. Ties are broken by position.

    Raises
    ------
    ValueError
        If `losses` is not 1-D, empty or not finite; if `alpha` is NaN or outside ``[0, 1)``.

    Notes
    -----
    Source: dual form of CVaR, $\max_{p \in P_\alpha} \sum_\tau p_\tau \ell_\tau$ with
    $P_\alpha = \{p \in \Delta_N : p_\tau \le 1/((1-\alpha)N)\}$ (Rockafellar & Uryasev 2000;
    spec Sec. 2, "best response"). A greedy fill of the capped simplex in descending order of
    the losses solves this LP exactly.

    Examples
    --------
    >>> import numpy as np
    >>> cvar_weights(np.array([1.0, 4.0, 2.0, 3.0]), 0.5)
    array([0. , 0.5, 0. , 0.5])
    """
    alpha = check_alpha(alpha)
    kind, xp, arr = _check_vector(losses, "losses")
    n = int(arr.shape[0])
    sorted_w = _cvar_weights_sorted(n, alpha)
    if kind == "jax":
        import jax

        order = xp.argsort(-jax.lax.stop_gradient(arr), stable=True)
        w = xp.zeros(n, dtype=arr.dtype).at[order].set(xp.asarray(sorted_w, dtype=arr.dtype))
        return w
    order = np.argsort(-arr, kind="stable")
    w = np.empty(n)
    w[order] = sorted_w
    return _restore(w, losses, kind)


def cvar(losses, alpha: float):
    r"""Exact CVaR of a finite pool of losses, with the fractional tail boundary.

    $$\mathrm{CVaR}_\alpha(\ell) = \frac{1}{m}\Big(\sum_{i \le k} \ell_{(i)} +
    (m - k)\,\ell_{(k+1)}\Big),\quad m = (1-\alpha)N,\ k = \lfloor m \rfloor,$$

    with $\ell_{(1)} \ge \ell_{(2)} \ge \dots$ the losses sorted in descending order.

    Parameters
    ----------
    losses : array, shape [N], float (numpy, JAX or torch)
        Per-task losses (e.g. negative log-likelihoods, nats).
    alpha : float in [0, 1)
        Confidence level: the mean of the worst ``1 - alpha`` of the tasks (DR-MAML convention).

    Returns
    -------
    scalar of the input's type
        A numpy float for numpy input, a 0-d JAX array (differentiable: its gradient is
        :func:`cvar_weights`) or a 0-d torch tensor. ``alpha = 0`` gives the mean and
        ``(1 - alpha) N <= 1`` the maximum.

    Raises
    ------
    ValueError
        If `losses` is not 1-D, empty or not finite; if `alpha` is NaN or outside ``[0, 1)``.

    Notes
    -----
    Source: spec Sec. 2. It equals the Rockafellar–Uryasev primal
    $\min_\eta \eta + \sum_\tau (\ell_\tau - \eta)_+/((1-\alpha)N)$ (Rockafellar & Uryasev 2000,
    Thm. 1) and the dual LP $\max_{p \in P_\alpha} p^\top \ell$ (tested against both, the LP with
    scipy's HiGHS). ``int((1 - alpha) N)`` alone can give an empty tail (cvxrisk#494) and a
    sorted-tail mean without the fractional term disagrees with the RU value (AiDotNet#1982).

    Examples
    --------
    >>> import numpy as np
    >>> float(cvar(np.array([1.0, 4.0, 2.0, 3.0]), 0.5))  # mean of the worst half
    3.5
    >>> float(cvar(np.array([1.0, 4.0, 2.0, 3.0]), 0.0))  # the mean
    2.5
    """
    alpha = check_alpha(alpha)
    kind, xp, arr = _check_vector(losses, "losses")
    w = cvar_weights(arr, alpha)
    if kind == "jax":
        return xp.sum(w * arr)
    return _restore(float(np.dot(w, arr)), losses, kind)


# ------------------------------------------------------------------------ KL projection
def project_capped_simplex_kl(q, cap: float, *, log_weights: bool = False):
    r"""KL projection of a positive vector onto the capped simplex.

    $$\Pi(q) = \arg\min_{p \in \Delta_N,\ p \le \mathrm{cap}} \mathrm{KL}(p \,\|\, q)
    = \min(\mathrm{cap},\ c\,q)$$

    with the scalar $c > 0$ chosen so that the result sums to one (found exactly by sorting,
    O(N log N)).

    Parameters
    ----------
    q : array, shape [N], float >= 0 (numpy, JAX or torch)
        Unnormalised weights (e.g. ``p * exp(step * gradient)``); need not sum to one.
    cap : float
        Upper bound on each weight, ``1/((1 - alpha) N)`` for CVaR; at least ``1/N``. ``cap >= 1``
        (``inf`` included) is the plain simplex (``q / sum(q)``).
    log_weights : bool, default=False
        `q` holds log-weights ``log q`` (finite or ``-inf``; any real shift): the projection is
        then computed in log space (suffix log-sum-exp), so weights spanning more than float64's
        range (``p * exp(step * losses)`` with large losses) neither overflow nor underflow to
        fewer than ``1/cap`` positive entries. Entries far below the rest come out as 0.

    Returns
    -------
    array, shape [N], same type as `q` (float64 for numpy/torch computation)

    Raises
    ------
    ValueError
        If `q` is not 1-D, empty, not finite or has a negative entry (with `log_weights`: NaN or
        ``+inf``); if `cap` is NaN or below ``1/N``; if `q` has fewer than ``1/cap`` positive
        (finite, with `log_weights`) entries (no finite-KL solution).

    Notes
    -----
    Source: spec Sec. 2 (``Pi``); the KKT conditions of $\min \sum p_i \log(p_i/q_i)$ subject to
    $\sum p_i = 1$, $p_i \le \mathrm{cap}$ give $p_i = \min(\mathrm{cap}, c q_i)$. With $j$ capped
    entries (the $j$ largest $q$), $c = (1 - j\,\mathrm{cap})/\sum_{i > j} q_{(i)}$; the smallest
    consistent $j$ is the solution. Tested against SLSQP and for idempotence.

    Examples
    --------
    >>> import numpy as np
    >>> project_capped_simplex_kl(np.array([4.0, 1.0, 1.0, 2.0]), 0.4)
    array([0.4, 0.15, 0.15, 0.3])
    """
    if not isinstance(log_weights, bool):
        raise TypeError(f"`log_weights` must be a bool, got {type(log_weights).__name__}")
    if isinstance(cap, bool) or not isinstance(cap, int | float | np.integer | np.floating):
        raise TypeError(f"`cap` must be a real number, got {type(cap).__name__}")
    cap = float(cap)
    if log_weights:
        return _project_log(q, cap)
    kind, xp, arr = _check_vector(q, "q", nonnegative=True)
    n = int(arr.shape[0])
    if math.isnan(cap) or cap * n < 1.0 - 1e-9:
        raise ValueError(f"`cap` must be at least 1/N = {1.0 / n:.6g}, got {cap!r}")
    cap = min(cap, 1.0)  # cap >= 1 (inf too) is the plain simplex
    if kind != "jax" or not _is_tracer(arr):
        positive = int(np.count_nonzero(np.asarray(arr) > 0))
        if positive == 0 or positive * min(cap, 1.0) < 1.0 - 1e-9:
            raise ValueError(
                f"`q` has {positive} positive entries: at least 1/cap = {1.0 / cap:.6g} are needed"
            )
    if cap * n <= 1.0 + 1e-12:  # P = {uniform}
        out = xp.full((n,), 1.0 / n, dtype=arr.dtype)
        return out if kind == "jax" else _restore(out, q, kind)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        qs = -xp.sort(-arr)  # descending
        suffix = xp.cumsum(qs[::-1])[::-1]  # suffix[j] = sum_{i >= j} qs[i]
        j = xp.arange(n)
        safe = xp.where(suffix > 0, suffix, 1.0)
        c = xp.where(suffix > 0, (1.0 - j * cap) / safe, xp.inf)
        prev = xp.concatenate([xp.full((1,), xp.inf, dtype=qs.dtype), qs[:-1]])
        fits = qs * c <= cap * (1 + 1e-12)  # the largest uncapped entry stays below the cap
        above = prev * c >= cap * (1 - 1e-12)  # the smallest capped entry would exceed it
        valid = (1.0 - j * cap > 0) & fits & above
        first = xp.argmax(valid)  # the smallest consistent number of capped entries
        out = xp.minimum(cap, c[first] * arr)
    out = out / xp.sum(out)  # removes the last ulp of rounding; a no-op in exact arithmetic
    if kind == "jax":
        return out
    return _restore(out, q, kind)


def _project_log(logq, cap: float):
    """:func:`project_capped_simplex_kl` of ``exp(logq)``, in log space (float64 numpy; JAX in,
    JAX out)."""
    kind = _kind(logq)
    if kind == "jax":
        import jax.numpy as jnp

        if _is_tracer(logq):
            raise TypeError("`log_weights=True` needs concrete values (not under jit)")
        arr = np.asarray(logq, dtype=np.float64)
    else:
        arr = _to_numpy(logq, "q").astype(np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"`q` must be 1-D [N] and not empty, got shape {arr.shape}")
    if np.any(np.isnan(arr)) or np.any(arr == np.inf):
        raise ValueError("`q` (log-weights) must be finite or -inf (no NaN or +inf)")
    n = arr.size
    if math.isnan(cap) or cap * n < 1.0 - 1e-9:
        raise ValueError(f"`cap` must be at least 1/N = {1.0 / n:.6g}, got {cap!r}")
    cap = min(cap, 1.0)
    positive = int(np.count_nonzero(np.isfinite(arr)))
    if positive == 0 or positive * cap < 1.0 - 1e-9:
        raise ValueError(
            f"`q` has {positive} positive entries: at least 1/cap = {1.0 / cap:.6g} are needed"
        )
    if cap * n <= 1.0 + 1e-12:
        out = np.full(n, 1.0 / n)
    else:
        order = np.argsort(-arr, kind="stable")
        ls = arr[order]  # descending
        # j capped entries: the largest uncapped one is t_j = (1 - j cap) / S_j with
        # S_j = sum_{i >= j} exp(ls_i - ls_j); only j < 1/cap can be the solution. S_j by the
        # recursion S_j = 1 + exp(ls_{j+1} - ls_j) S_{j+1}: differences of nearby log-weights
        # only, exact even when the log-weights themselves are ~1e25.
        m = min(n - 1, math.ceil(1.0 / cap - 1e-9))
        finite = np.isfinite(ls)
        with np.errstate(invalid="ignore", over="ignore"):
            tail = ls[m:][finite[m:]] - ls[m] if finite[m] else np.zeros(0)
            s_j = np.empty(m + 1)
            s_j[m] = float(np.sum(np.exp(tail))) if finite[m] else 0.0
            for j in range(m - 1, -1, -1):
                gap = ls[j + 1] - ls[j] if finite[j + 1] else -np.inf
                s_j[j] = 1.0 + math.exp(gap) * s_j[j + 1]
        log_cap = math.log(cap)
        first = 0
        for j in range(m + 1):
            rest = 1.0 - j * cap
            if rest <= 1e-12 or not finite[j]:
                break
            t = math.log(rest) - math.log(s_j[j])  # log of the largest uncapped weight
            fits = t <= log_cap + 1e-12
            above = j == 0 or (ls[j - 1] - ls[j]) + t >= log_cap - 1e-12
            if fits and above:
                first = j
                break
        t_first = math.log(1.0 - first * cap) - math.log(s_j[first])
        with np.errstate(over="ignore", invalid="ignore"):
            sorted_out = np.where(
                np.arange(n) < first, cap, np.exp(np.minimum(ls - ls[first] + t_first, 0.0))
            )
        sorted_out = np.minimum(sorted_out, cap)
        out = np.empty(n)
        out[order] = sorted_out
        out = out / out.sum()
    if kind == "jax":
        return jnp.asarray(
            out, dtype=logq.dtype if jnp.issubdtype(logq.dtype, jnp.floating) else None
        )
    return _restore(out, logq, kind)


# ------------------------------------------------------------------ mini-batch baselines
def topk_cvar_loss(batch_losses, alpha: float):
    r"""Mini-batch top-k CVaR: the mean of the worst $\lceil (1-\alpha) b \rceil$ batch losses.

    Parameters
    ----------
    batch_losses : array, shape [b], float (numpy, JAX or torch)
        Losses of the tasks of one mini-batch.
    alpha : float in [0, 1)
        Confidence level (tail = worst ``1 - alpha``).

    Returns
    -------
    scalar of the input's type (differentiable for JAX input)

    Raises
    ------
    ValueError
        If `batch_losses` is not 1-D, empty or not finite; if `alpha` is outside ``[0, 1)``.

    Notes
    -----
    Source: the mini-batch CVaR baseline of spec Sec. 2 (as in Levy et al. 2020's "batch"
    estimator and sqwash's ``reduce_superquantile`` without the fractional term). It is a
    *biased* estimate of the pool CVaR (spec Sec. 9), which is the paper's point.

    Examples
    --------
    >>> import numpy as np
    >>> float(topk_cvar_loss(np.array([1.0, 4.0, 2.0, 3.0]), 0.6))  # ceil(1.6) = 2 worst
    3.5
    """
    alpha = check_alpha(alpha)
    kind, xp, arr = _check_vector(batch_losses, "batch_losses")
    b = int(arr.shape[0])
    k = max(1, min(b, math.ceil((1.0 - alpha) * b - 1e-9)))
    if kind == "jax":
        import jax

        return xp.mean(jax.lax.top_k(arr, k)[0])
    return _restore(float(np.mean(np.sort(arr)[::-1][:k])), batch_losses, kind)


def kde_var(losses, alpha: float) -> float:
    r"""Value at risk $\mathrm{VaR}_\alpha$ of the losses under a Gaussian KDE of their density.

    Parameters
    ----------
    losses : array, shape [b], float (numpy, JAX or torch); at least 2 distinct values
        Losses of one mini-batch (gradients are not followed: VaR is a constant for the loss).
    alpha : float in (0, 1)
        Confidence level. ``alpha = 0`` is refused: $\mathrm{VaR}_0$ of a Gaussian KDE is
        $-\infty$ (its CDF is positive everywhere), so the surrogate would be infinite.

    Returns
    -------
    float
        The root $v$ of $F(v) = \alpha$ with $F$ the CDF of ``scipy.stats.gaussian_kde(losses)``
        (Scott's bandwidth), found by ``scipy.optimize.brentq``. With fewer than 2 distinct
        values (the KDE is degenerate) the largest loss is returned.

    Raises
    ------
    ValueError
        If `losses` is not 1-D, empty or not finite; if `alpha` is outside ``(0, 1)``.

    Notes
    -----
    Source: DR-MAML's ``drloss`` (lvyiqin/DRMAML, spec Sec. 2): VaR from ``gaussian_kde`` and
    ``brentq`` on its CDF. The bracket widens until it holds the root (tiny `alpha`).
    """
    from scipy.optimize import brentq
    from scipy.stats import gaussian_kde

    alpha = check_kde_alpha(alpha)
    _, _, arr = _check_vector(losses, "losses")
    values = np.asarray(arr, dtype=np.float64)
    if np.unique(values).size < 2:
        return float(values.max())
    kde = gaussian_kde(values)
    spread = 10.0 * float(np.sqrt(kde.covariance[0, 0])) + 1e-12
    low, high = values.min() - spread, values.max() + spread

    def excess(v: float) -> float:
        return float(kde.integrate_box_1d(-np.inf, v)) - alpha

    for _ in range(64):  # widen the bracket below for tiny alpha (F(low) must be < alpha)
        if excess(low) < 0:
            break
        low -= spread
        spread *= 2.0
    else:  # pragma: no cover - alpha > 0 is representable far below the data
        raise ValueError(f"kde_var: no VaR bracket found for alpha={alpha!r}")

    return float(brentq(excess, low, high, xtol=1e-12, rtol=1e-12))


def check_kde_alpha(alpha) -> float:
    """:func:`check_alpha` for the KDE VaR, which also refuses ``alpha = 0`` (VaR_0 = -inf)."""
    alpha = check_alpha(alpha)
    if alpha == 0.0:
        raise ValueError(
            "kde_var needs alpha > 0: VaR_0 of a Gaussian KDE is -inf (its CDF is positive "
            "everywhere), so the drloss surrogate is infinite; use alpha > 0 or method='erm'"
        )
    return alpha


def kde_var_loss(batch_losses, alpha: float, var: float | None = None) -> Any:
    r"""DR-MAML's KDE-VaR surrogate: the batch mean of $(\ell_\tau - \mathrm{VaR}_\alpha)_+$.

    Parameters
    ----------
    batch_losses : array, shape [b], float (numpy, JAX or torch)
        Losses of one mini-batch.
    alpha : float in [0, 1)
        Confidence level; must be > 0 when `var` is not given (see :func:`kde_var`).
    var : float, optional
        A VaR computed beforehand (e.g. by :func:`kde_var` on the batch's values, so a JAX
        training step can take it as an argument); default: :func:`kde_var` of `batch_losses`.

    Returns
    -------
    scalar of the input's type (differentiable for JAX input; VaR is held constant)

    Raises
    ------
    ValueError
        As :func:`kde_var`; if `var` is not finite.

    Notes
    -----
    Source: DR-MAML ``drloss`` (lvyiqin/DRMAML): ``mean(relu(losses - VaR))``. As in the official
    code, the $1/(1-\alpha)$ factor and the $+\mathrm{VaR}$ term of the Rockafellar–Uryasev form
    are left out (they change the scale of the gradient, not its direction within a batch).
    """
    alpha = check_alpha(alpha) if var is not None else check_kde_alpha(alpha)
    kind, xp, arr = _check_vector(batch_losses, "batch_losses")
    if var is None:
        var = kde_var(np.asarray(arr), alpha)
    var = float(var)
    if not math.isfinite(var):
        raise ValueError(f"`var` must be finite, got {var!r}")
    if kind == "jax":
        return xp.mean(xp.maximum(arr - var, 0.0))
    return _restore(float(np.mean(np.maximum(arr - var, 0.0))), batch_losses, kind)
