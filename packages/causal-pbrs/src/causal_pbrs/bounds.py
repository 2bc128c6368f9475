"""Causal (Manski-style) upper bounds on the optimal values, from confounded logs.

The learner cannot identify its do-tables from a demonstrator who saw U, but it can bound them
(Li, Zhang & Bareinboim, ICML 2025, Sec. 3; Manski 1990): with P(x|s) the demonstrator's
propensity and T̃, R̃ the observational transition and reward,

    T_h(s, x, s') <= T̃_h(s, x, s') P(x|s) + (1 − P(x|s)),
    R_h(s, x)     <= R̃_h(s, x) P(x|s) + b (1 − P(x|s)),                      b = reward_max,

and backward induction gives an upper bound on the optimal values (the causal Bellman bound):

    V̄_h(s) = max_x [ P(x|s) (R̃(s, x) + Σ_{s'} T̃(s, x, s') V̄_{h+1}(s'))
                     + (1 − P(x|s)) (b + M_{h+1}) ],     M_{h+1} = max_{s'} V̄_{h+1}(s'),
    φ_h(s)  = min(V̄_h(s), max(b, (H − h) b)),          V̄_H ≡ 0 (0-based h).

The paper (Cor. 3.2, read second-hand) states V* <= V̄ for every CMDP compatible with the data's
distribution, so the elementwise minimum over datasets of different demonstrators stays valid.
With finite logs the plug-in bound is approximate; ``delta=`` widens every estimate to a
confidence bound so that V̄ holds with probability >= 1 − δ (issue 31).

Axis letters: H horizon, S states, A actions.
"""

from __future__ import annotations

import numpy as np

from icml25_core import check_array, check_choice

from ._validation import check_bool, check_real
from .data import Counts, OfflineDataset

__all__ = ["causal_upper_bound", "combine", "manski_bounds", "monte_carlo_values"]

STATIONARY_TOL = 1e-3  # official `approx_opt_value_upper_bound(eps=.001)`


def _as_counts(data) -> Counts:
    if isinstance(data, OfflineDataset):
        return data.counts()
    if isinstance(data, Counts):
        return data
    raise TypeError(
        "`data` must be an OfflineDataset or Counts (e.g. env.observational_distribution(...)), "
        f"got {type(data).__name__}"
    )


def _check_reward_max(reward_max, counts: Counts) -> float:
    b = check_real(reward_max, "reward_max")
    if counts.y_max > b:
        raise ValueError(
            f"`reward_max` = {b} is below a reward in the data ({counts.y_max}); the bound "
            "needs every reward <= reward_max"
        )
    return b


def _ratio(num, den):
    den = np.broadcast_to(den, num.shape)
    out = np.zeros_like(num)
    np.divide(num, den, out=out, where=den > 0)
    return out


def observational_tables(counts: Counts):
    """P(x|s) and R̃(s, x) from counts (0 where nothing was logged).

    Returns
    -------
    P : ndarray of shape (H, S, A)
    R_obs : ndarray of shape (H, S, A)
    """
    P = _ratio(counts.n_sa, counts.n_s[..., None])
    R_obs = _ratio(counts.y_sum, counts.n_sa)
    return P, R_obs


def _continuation(counts: Counts, h: int, v_next):
    """Σ_{s'} T̃_h(s, x, s') v(s') = (N_h(s, x, ·) · v) / N_h(s, x), 0 where (s, x) was never
    logged: one sparse (S·A, S) mat-vec. Shape (S, A)."""
    n_sa = counts.n_sa[h]
    return _ratio((counts.step_transitions(h) @ v_next).reshape(n_sa.shape), n_sa)


def _backup(P, R_obs, cont, b, M, logged=None):
    """One causal Bellman backup at one step: returns Q̄ of shape (S, A)."""
    Q = P * (R_obs + cont) + (1.0 - P) * (b + M)
    if logged is not None:
        Q = np.where(logged, Q, -np.inf)
    return Q


def _widened_tables(counts: Counts, b: float, reward_min: float, delta: float):
    """Confidence-widened P(x|s) (lower), R̃ (upper) and the L1 radius of T̃, each family with
    δ/3 union-bounded over the H·S·A entries (Hoeffding; Weissman et al. 2003 for T̃ with the
    S + 1 outcomes: S states and the end of the episode). Conditional on the visit counts."""
    P, R_obs = observational_tables(counts)
    H, S, A = counts.n_sa.shape
    log_term = np.log(3 * H * S * A / delta)
    logged = counts.n_sa > 0
    with np.errstate(divide="ignore"):
        width_p = np.sqrt(log_term / (2 * counts.n_s[..., None]))
        width_r = (b - reward_min) * np.sqrt(log_term / (2 * np.maximum(counts.n_sa, 1)))
        radius = np.sqrt(2 * ((S + 1) * np.log(2) + log_term) / counts.n_sa)
    P_lo = np.clip(P - width_p, 0.0, 1.0)
    R_hi = np.where(logged, np.minimum(b, R_obs + width_r), b)  # never logged: up to b
    return P_lo, R_hi, radius


def _worst_case_continuation(counts: Counts, h: int, v_next, radius):
    """max Σ p̃(o) w(o) over the L1 ball of the given radius around the empirical outcome
    distribution p (outcomes: the S next states, worth v_next, and the end, worth 0): half the
    radius moves to the best outcome, taken from the lowest-valued outcomes first. Only the
    logged outcomes (the sparse entries and the end) can give mass. Shape (S, A)."""
    S, A = counts.n_sa.shape[1:]
    n_sa = counts.n_sa[h].ravel()
    step = counts.step_transitions(h).tocoo()
    w = np.append(v_next, 0.0)
    top = int(np.argmax(w))  # state index, or S for the end
    # outcomes per (s, x) row: the logged next states, then the end
    rows = np.concatenate([step.row, np.arange(S * A)])
    outcome = np.concatenate([step.col, np.full(S * A, S)])
    mass = np.concatenate([step.data, counts.n_end[h].ravel()])
    p = _ratio(mass, n_sa[rows])
    p_top = np.bincount(rows, weights=np.where(outcome == top, p, 0.0), minlength=S * A)
    budget = np.where(n_sa > 0, np.minimum(radius[h].ravel() / 2, 1.0 - p_top), 0.0)
    give = outcome != top
    order = np.lexsort((w[outcome], rows))  # per row, ascending worth
    order = order[give[order]]
    r, pj = rows[order], p[order]
    before = np.cumsum(pj) - pj  # mass of the cheaper outcomes of the same row, below
    row_start = np.searchsorted(r, np.arange(S * A))
    base = np.zeros(S * A)
    has = row_start < len(r)
    base[has] = before[row_start[has]]
    taken = np.clip(budget[r] - (before - base[r]), 0.0, pj)
    moved = np.bincount(r, weights=taken, minlength=S * A)
    lost = np.bincount(r, weights=taken * w[outcome[order]], minlength=S * A)
    value = np.bincount(rows, weights=p * w[outcome], minlength=S * A)
    return (value - lost + moved * w[top]).reshape(S, A)


def causal_upper_bound(
    data,
    reward_max,
    *,
    stationary=False,
    unobserved="optimistic",
    tol=STATIONARY_TOL,
    delta=None,
    reward_min=None,
):
    r"""Upper bound φ on the optimal interventional values from confounded logs.

    One causal Bellman backup per step h, from $\bar V_H \equiv 0$ (Li, Zhang & Bareinboim
    2025, Sec. 3; observational $P(x \mid s)$, $\tilde R$, $\tilde T$ from the logs):

    $$
    \bar V_h(s) = \max_x \Big[ P(x \mid s) \big( \tilde R_h(s, x)
        + \textstyle\sum_{s'} \tilde T_h(s, x, s') \bar V_{h+1}(s') \big)
        + \big(1 - P(x \mid s)\big) (b + M) \Big]
    $$

    $$
    M = \max\big(0, \max_{s'} \bar V_{h+1}(s')\big) \quad \text{(unobserved="optimistic")}
    $$

    Parameters
    ----------
    data : OfflineDataset or Counts
        A log, or its exact expectation (``env.observational_distribution(policy)``).
    reward_max : float
        b, an upper bound on every reward (the paper's grid worlds: 0).
    stationary : bool, default=False
        False: per-step counts and backward induction from V̄_H ≡ 0 (time-indexed). True
        (official): counts pooled over steps, sweeps from V̄ ≡ 0 until the largest change is
        below `tol` or H sweeps; every row then holds the same φ(s) up to the cap.
    unobserved : {"optimistic", "skip"}, default="optimistic"
        "optimistic": a never-logged action has P(x|s) = 0 and contributes b + M; an unvisited
        state has P(x|s) = 0 for every x; M is the maximum over all states (terminal and
        unvisited included) and 0, the worth of an ending episode. "skip" keeps the official
        code's shortcuts — never-logged actions skipped, M over visited states only (b at the
        first backup, then capped at b(H − 1)), unvisited states set to 0 — which can break
        validity (b > 0, or an unlogged optimal action).
    tol : float, default=1e-3
        Stopping rule of the stationary sweeps (official ``eps``).
    delta : float in (0, 1), optional
        Make the bound valid with probability >= 1 − δ from finite logs (issue 31): the
        plug-in P(x|s) is replaced by a Hoeffding lower confidence bound, R̃ by an upper one,
        and Σ T̃ V̄_{h+1} by its maximum over the Weissman L1 ball around T̃ (the end of the
        episode as one more outcome, worth 0), each family with δ/3 union-bounded over the
        H·S·A entries; the backup is decreasing in P and increasing in R̃ and the continuation
        (its weights b + M bound R̃ + T̃ V̄), so the widened V̄ is above the bound of the true
        distribution whenever every interval holds. Time-indexed, "optimistic" only. None: the
        plug-in bound (approximate from finite logs).
    reward_min : float, optional
        The smallest possible reward (the range of the Hoeffding interval of R̃); required
        with `delta`.

    Returns
    -------
    ndarray of shape (H + 1, S), float64
        φ_h(s) = min(V̄_h(s), max(b, (H − h) b)) for 0-based h; row H is 0, and states the data
        show terminal (entered with ``done``, never left) are 0. φ bounds V* on every
        non-terminal state. A terminal state the logs never entered cannot be told from an
        unvisited live one and gets the live cap: with b < 0 that is b, below its V* = 0.
        Shaping never reads φ there (φ(s') := 0 when a step ends the episode), but compare
        φ with V* on the non-terminal states only.

    Raises
    ------
    TypeError
        If `data` is neither an OfflineDataset nor Counts, or `stationary` is not a bool.
    ValueError
        If a logged reward exceeds `reward_max`, `unobserved` is unknown or `tol` <= 0; if
        `delta` is not in (0, 1), comes with ``stationary=True`` or ``unobserved="skip"``, or
        without a `reward_min` <= every logged reward; if `reward_min` comes without `delta`;
        if `data` holds pooled counts (``Counts.pooled_horizon``) and `stationary` is False.

    Notes
    -----
    Source: Li, Zhang & Bareinboim (2025), Sec. 3 (causal Bellman bound), Cor. 3.2; official
    ``causal_rl/algo/reward_shaping/calculate_values.py::approx_opt_value_upper_bound`` for the
    stationary sweeps and the "skip" mode. Each step is one sparse (S·A, S) matrix-vector
    product over the logged transitions: memory and time grow with the transitions seen, not
    with H·S·A·S (Taxi at H = 200: ``benchmarks/bench_bound.py``).

    Examples
    --------
    >>> from causal_pbrs import WindyGrid, expert
    >>> env = WindyGrid.preset("lava_extreme")
    >>> data = env.collect(expert(env), 2000, rng=0)
    >>> phi = causal_upper_bound(data, reward_max=0.0)
    >>> phi.shape, bool((phi >= env.optimal_values()[0] - 1e-9).all())
    ((21, 81), True)
    """
    stationary = check_bool(stationary, "stationary")
    if stationary and isinstance(data, OfflineDataset):
        counts = stats = data.counts(pooled=True)  # no per-step arrays needed
    else:
        counts = _as_counts(data)
        stats = counts.pooled() if stationary else counts
    if counts.pooled_horizon is not None and not stationary:
        raise ValueError(
            f"`data` holds counts pooled over {counts.pooled_horizon} steps: pass "
            "stationary=True, or per-step counts for the time-indexed bound"
        )
    H = stats.pooled_horizon if stationary and stats.pooled_horizon else counts.horizon
    b = _check_reward_max(reward_max, counts)
    check_choice(unobserved, "unobserved", ("optimistic", "skip"))
    tol = check_real(tol, "tol", low=0, inclusive="neither")
    S = counts.n_states
    P, R_obs = observational_tables(stats)
    widened = None
    if delta is not None:
        delta = check_real(delta, "delta", low=0, high=1, inclusive="neither")
        if stationary or unobserved == "skip":
            raise ValueError('`delta` needs the time-indexed bound: stationary=False, '
                             'unobserved="optimistic"')  # fmt: skip
        if reward_min is None:
            raise ValueError("`delta` needs `reward_min`, the smallest possible reward")
        reward_min = check_real(reward_min, "reward_min")
        if reward_min > counts.y_min:
            raise ValueError(f"`reward_min` = {reward_min} is above a logged reward")
        widened = _widened_tables(counts, b, reward_min, delta)
    elif reward_min is not None:
        raise ValueError("`reward_min` is used only with `delta` (the finite-sample bound)")
    visited = stats.n_s > 0
    logged = stats.n_sa > 0
    known_terminal = counts.terminal & (counts.n_s.sum(axis=0) == 0)
    skip = unobserved == "skip"

    def backup(i, v_next, first):
        if skip:
            seen = visited[min(i + 1, len(visited) - 1)] if not stationary else visited[0]
            M = b if first or not seen.any() else min(b * (H - 1), float(v_next[seen].max()))
            Q = _backup(P[i], R_obs[i], _continuation(stats, i, v_next), b, M, logged[i])
            v = np.where(visited[i], Q.max(axis=1), 0.0)
        elif widened is not None:
            M = max(float(v_next.max()), 0.0)
            P_lo, R_hi, radius = widened
            cont = _worst_case_continuation(counts, i, v_next, radius)
            v = (P_lo[i] * (R_hi[i] + cont) + (1.0 - P_lo[i]) * (b + M)).max(axis=1)
        else:
            M = max(float(v_next.max()), 0.0)
            v = _backup(P[i], R_obs[i], _continuation(stats, i, v_next), b, M).max(axis=1)
        v[known_terminal] = 0.0
        return v

    V = np.zeros((H + 1, S))
    if stationary:
        v = np.zeros(S)
        for sweep in range(H):
            new = backup(0, v, sweep == 0)
            change = np.max(np.abs(new - v))
            v = new
            if change < tol:
                break
        V[:H] = v
    else:
        for h in range(H - 1, -1, -1):
            V[h] = backup(h, V[h + 1], h == H - 1)
    cap = np.maximum(b, (H - np.arange(H)) * b)
    V[:H] = np.minimum(V[:H], cap[:, None])
    V[:H, known_terminal] = 0.0
    return V


def manski_bounds(data, reward_max):
    """Per-step Manski upper bounds on the do-transitions and do-rewards.

    Parameters
    ----------
    data : OfflineDataset or Counts
    reward_max : float
        b, an upper bound on every reward.

    Returns
    -------
    T_up : ndarray of shape (H, S, A, S)
        T̃_h(s, x, s') P(x|s) + (1 − P(x|s)) (continuing steps; termination is one more outcome
        bounded the same way). Dense by nature (1 − P(x|s) > 0 everywhere an action was not
        always taken): H·S·A·S·8 bytes, so for small problems; :func:`causal_upper_bound`
        does not need it.
    R_up : ndarray of shape (H, S, A)
        R̃_h(s, x) P(x|s) + b (1 − P(x|s)).

    Raises
    ------
    TypeError, ValueError
        As :func:`causal_upper_bound`.

    Notes
    -----
    Source: Li, Zhang & Bareinboim (2025), Sec. 3 (natural bounds of Manski 1990).
    """
    counts = _as_counts(data)
    b = _check_reward_max(reward_max, counts)
    P, R_obs = observational_tables(counts)
    T_obs = _ratio(counts.transition_counts(), counts.n_sa[..., None])
    T_up = T_obs * P[..., None] + (1.0 - P[..., None])
    R_up = R_obs * P + b * (1.0 - P)
    return T_up, R_up


def combine(*phis):
    """Combine bounds from several datasets by their elementwise minimum.

    Each bound is valid for every CMDP compatible with its own data, so their minimum is too
    (Li, Zhang & Bareinboim 2025, Sec. 3; official ``np.minimum.reduce(bounds)``).

    Parameters
    ----------
    *phis : array_like of identical shape, e.g. (H + 1, S)

    Returns
    -------
    ndarray
        The elementwise minimum.

    Raises
    ------
    ValueError
        If no bound is given, the shapes differ, or a bound holds NaN or infinity.
    TypeError
        If one list or tuple of bounds is passed instead of the bounds themselves.

    Examples
    --------
    >>> combine([0.0, -1.0], [-0.5, 0.0])
    array([-0.5, -1. ])
    """
    if not phis:
        raise ValueError("`phis`: give at least one bound")
    if len(phis) == 1 and isinstance(phis[0], list | tuple) and np.ndim(phis[0][0]) >= 1:
        raise TypeError("`phis`: pass the bounds as separate arguments, combine(*bounds)")
    arrays = [check_array(p, f"phis[{i}]", cast=np.float64) for i, p in enumerate(phis)]
    for i, arr in enumerate(arrays[1:], start=1):
        if arr.shape != arrays[0].shape:
            raise ValueError(f"`phis[{i}]` has shape {arr.shape}, `phis[0]` {arrays[0].shape}")
    return np.minimum.reduce(arrays)


def monte_carlo_values(data: OfflineDataset, *, stationary=True):
    """Behavioural values: the average return-to-go of each state in a log (the baselines).

    Parameters
    ----------
    data : OfflineDataset
    stationary : bool, default=True
        True (official ``gen_dataset``): every visit of s at any step, one value per state.
        False: per step h.

    Returns
    -------
    ndarray of shape (H + 1, S)
        Mean of Σ_{t >= h} Y_t over the visits; 0 for unvisited states and in row H (official).
        Because the demonstrator saw U, these are neither upper nor lower bounds on V*.

    Raises
    ------
    TypeError
        If `data` is not an OfflineDataset or `stationary` is not a bool.
    """
    if not isinstance(data, OfflineDataset):
        raise TypeError(f"`data` must be an OfflineDataset, got {type(data).__name__}")
    stationary = check_bool(stationary, "stationary")
    H, S = data.horizon, data.n_states
    G = data.returns_to_go()
    index = data.s if stationary else data.h * S + data.s
    size = S if stationary else H * S
    total = np.bincount(index, weights=G, minlength=size)
    visits = np.bincount(index, minlength=size)
    mean = _ratio(total, visits.astype(np.float64))
    V = np.zeros((H + 1, S))
    V[:H] = mean if stationary else mean.reshape(H, S)
    return V
