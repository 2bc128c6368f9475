"""Exact regret of a learner on a tabular CMDP, one learner or many in lockstep.

Two regrets, both computed on the interventional (do) tables, never on observational ones:

- gap regret (official ``q_ucb.py``): Σ_k Σ_h [V*_h(s_h) − Q*_h(s_h, a_h)] over the steps played;
- episode regret: Σ_k [V*_1(s_1) − V^{π_k}_1(s_1)], with π_k the greedy policy of the learner at
  the start of episode k, evaluated exactly.

``run`` returns the per-episode terms (``np.cumsum`` gives the curves). It is a pure function of
the environment, the agent's configuration and the seed, with picklable inputs and outputs, so
sweeps over seeds, methods and environments can go to joblib, Ray or Dask workers.
``run_batch`` steps B learners in lockstep with numpy and returns exactly what B calls of
``run`` return.
"""

from __future__ import annotations

import numpy as np

from ._validation import check_bool, check_int
from .agents import QUCB, _round
from .envs import TabularCMDP, _first_true

__all__ = ["run", "run_batch"]


def _check(env, agents, names):
    if not isinstance(env, TabularCMDP):
        raise TypeError(f"`env` must be a TabularCMDP (e.g. WindyGrid), got {type(env).__name__}")
    for name, agent in zip(names, agents, strict=True):
        if not isinstance(agent, QUCB):
            raise TypeError(f"`{name}` must be a QUCB, got {type(agent).__name__}")
        sizes = (agent.n_states, agent.n_actions, agent.horizon)
        want = (env.n_states, env.n_actions, env.horizon)
        if sizes != want:
            raise ValueError(
                f"`{name}` has (n_states, n_actions, horizon) {sizes}; the environment {want}"
            )


def _check_planned(n_episodes, agents, names):
    """Refuse to play more episodes than an agent's K (see the Notes of :func:`run`)."""
    for name, agent in zip(names, agents, strict=True):
        if n_episodes > agent.n_episodes:
            raise ValueError(
                f"`n_episodes` = {n_episodes} is more than the K = {agent.n_episodes} episodes "
                f"`{name}` was built for (K sets ι = log(S A H K / p) in its bonus): build it "
                f"with n_episodes >= {n_episodes}"
            )


def _uniforms(seed, n_episodes, horizon, name="seed"):
    """The randomness of the episodes: one row per episode, u[0] picks the first state and u[1 + h]
    the cell of U at step h (unused entries are discarded)."""
    try:
        rng = np.random.default_rng(seed)
    except (TypeError, ValueError) as error:
        raise type(error)(
            f"`{name}` must be None or a non-negative int, got {seed!r} ({error})"
        ) from None
    return rng.random((n_episodes, horizon + 1))


def _policy_values(env, Q, homogeneous, random_ties):
    """V^π_0(s) of the greedy policies of a stack of Q tables (B, H', S, A): shape (B, S)."""
    B = Q.shape[0]
    H, S = env.horizon, env.n_states
    A, K = env.n_actions, env.n_cells
    b_idx = np.arange(B)[:, None, None]
    b_offset = b_idx * S
    s_a = np.arange(S) * A
    cells = np.arange(K)
    next_flat, reward_flat = env.next_state.reshape(-1), env.reward.reshape(-1)
    V = np.zeros((B, S))  # terminal states stay at 0, so V[next state] needs no mask
    for h in range(H - 1, -1, -1):
        q = Q[np.arange(B), np.where(homogeneous, 0, h)]  # (B, S, A)
        if random_ties.any():
            ties = q == q.max(axis=-1, keepdims=True)
            pi = np.where(
                random_ties[:, None, None],
                ties / ties.sum(axis=-1, keepdims=True),
                np.eye(env.n_actions)[q.argmax(axis=-1)],
            )
            cont = V[b_idx[..., None], env.next_state]  # (B, S, A, K)
            q_pi = np.einsum("sk,bsak->bsa", env.u_prob, env.reward[None] + cont)
            V = np.einsum("bsa,bsa->bs", pi, q_pi)
        else:
            a = q.argmax(axis=-1)  # (B, S); flat gathers below are the fast numpy path
            index = (s_a[None, :] + a)[..., None] * K + cells  # (B, S, K) into (S, A, K)
            cont = V.reshape(-1)[b_offset + next_flat[index]]
            step = reward_flat[index] + cont
            V = np.einsum("sk,bsk->bs", env.u_prob, step)
        V[:, env.terminal] = 0.0
    return V


def run(env, agent, n_episodes, seed=None, *, episode_regret=True):
    """Play `n_episodes` episodes of `agent` on `env` and measure its exact regret.

    Parameters
    ----------
    env : TabularCMDP
        :class:`WindyGrid`, :class:`ConfoundedToyText` or any tabular CMDP; the learner plays
        do(a) and never sees U.
    agent : QUCB
        Updated in place (its tables hold what it learnt).
    n_episodes : int
        1 <= `n_episodes` <= ``agent.n_episodes`` (the K the agent was built for).
    seed : int, optional
        Seed of the episodes: first states and the confounder's draws (``random_state`` of the
        agent only breaks ties).
    episode_regret : bool, default=True
        Evaluate the greedy policy exactly at every episode's start (H backups of the whole
        table each time the policy changed); False skips it and returns NaN there.

    Returns
    -------
    dict of str to ndarray of shape (K,)
        ``gap_regret``: Σ_h V*_h(s_h) − Q*_h(s_h, a_h) per episode; ``episode_regret``:
        V*_0(s_0) − V^{π_k}_0(s_0) with π_k greedy at the episode's start; ``returns``: Σ_h y_h.

    Raises
    ------
    TypeError
        If `env` is not a TabularCMDP, `agent` not a QUCB, `seed` not an int or
        `episode_regret` not a bool.
    ValueError
        If the agent's sizes differ from the environment's, `n_episodes` < 1 or more than
        ``agent.n_episodes``, or `seed` < 0.

    Notes
    -----
    More episodes than the agent's K are refused, not warned about. K is a parameter of Q-UCB:
    ι = log(S A H K / p) = log(S A T / p), T = K H, pays for the union bound over the
    confidence events of every (s, a, h) and visit count up to K (Jin et al. 2018, Thm. 1), so
    the regret bound holds with probability 1 − p for the first K episodes only. Past K the
    bonus is smaller than the analysis needs and the measured regret is that of a learner
    without its guarantee: a mismatch between the configuration and the experiment, almost
    always a mistake, which a warning lost in a sweep's output would let through. Fewer
    episodes than K are fine (ι is then conservative). The check is per call: episodes played
    in earlier calls with the same agent are not counted.

    Examples
    --------
    >>> from causal_pbrs import QUCB, WindyGrid
    >>> env = WindyGrid.preset("empty8")
    >>> agent = QUCB(env.n_states, env.n_actions, env.horizon, n_episodes=20)
    >>> out = run(env, agent, 20, seed=0)
    >>> sorted(out), out["gap_regret"].shape
    (['episode_regret', 'gap_regret', 'returns'], (20,))
    """
    _check(env, [agent], ["agent"])
    K = check_int(n_episodes, "n_episodes", low=1)
    _check_planned(K, [agent], ["agent"])
    episode_regret = check_bool(episode_regret, "episode_regret")
    H = env.horizon
    U = _uniforms(seed, K, H)
    V_star, Q_star = env.optimal_values()
    cum_init = np.cumsum(env.initial)
    gap, episode, returns = np.zeros(K), np.zeros(K), np.zeros(K)
    homog = np.array([agent.homogeneous])
    ties = np.array([agent._rng is not None])
    policy: np.ndarray | None = None
    V_pi: np.ndarray | None = None
    for k in range(K):
        s = int(_first_true(cum_init > U[k, 0]))
        if episode_regret:
            Q = agent._Q
            new_policy = (Q.max(axis=-1, keepdims=True) == Q) if ties[0] else Q.argmax(axis=-1)
            if policy is None or (new_policy != policy).any():
                V_pi = _policy_values(env, Q[None], homog, ties)[0]
            policy = new_policy
            assert V_pi is not None  # computed at the first episode (policy was None)
            episode[k] = V_star[0, s] - V_pi[s]
        else:
            episode[k] = np.nan
        g = ret = 0.0
        for h in range(H):
            a = agent._act(h, s)
            cell = int(_first_true(env.u_upper[s] > U[k, h + 1]))
            s_next = int(env.next_state[s, a, cell])
            y = float(env.reward[s, a, cell])
            terminated = bool(env.terminal[s_next])
            g += V_star[h, s] - Q_star[h, s, a]
            ret += y
            agent._update(h, s, a, y, s_next, terminated)
            if terminated:
                break
            s = s_next
        gap[k], returns[k] = g, ret
    return {"gap_regret": gap, "episode_regret": episode, "returns": returns}


def run_batch(env, agents, seeds, n_episodes, callback=None, *, episode_regret=True):
    """Run B learners in lockstep with numpy; the same results as B calls of :func:`run`.

    Parameters
    ----------
    env : TabularCMDP
    agents : sequence of QUCB
        Updated in place, as by :func:`run`. Ties must go to the first action
        (``random_state=None``).
    seeds : sequence of int
        One seed per agent (as `seed` of :func:`run`).
    n_episodes : int
        At most every agent's ``n_episodes``, as in :func:`run`.
    callback : callable, optional
        Called as ``callback(k)`` after each episode k (progress bars).
    episode_regret : bool, default=True
        As in :func:`run`.

    Returns
    -------
    list of dict
        One :func:`run` result per agent, equal to it element for element.

    Raises
    ------
    TypeError
        If `agents` or `seeds` is not a sequence, an agent is not a QUCB, `callback` is not
        callable or `episode_regret` not a bool.
    ValueError
        If `agents` is empty, `seeds` has another length, a seed is negative, an agent
        breaks ties at random, or `n_episodes` is more than an agent's ``n_episodes``.

    Notes
    -----
    All tables live in flat arrays indexed by precomputed offsets; a learner whose episode has
    ended moves to an absorbing scratch state, so every step is the same few dozen numpy calls
    on arrays of length B, whichever learners are still playing.
    """
    if isinstance(agents, QUCB):
        raise TypeError("`agents` must be a sequence of QUCB; for one agent, use run()")
    try:
        agents = list(agents)
    except TypeError:
        raise TypeError(
            f"`agents` must be a sequence of QUCB, got {type(agents).__name__}"
        ) from None
    if not agents:
        raise ValueError("`agents` is empty")
    _check(env, agents, [f"agents[{i}]" for i in range(len(agents))])
    try:
        seeds = list(seeds)
    except TypeError:
        raise TypeError(f"`seeds` must be a sequence of ints, got {type(seeds).__name__}") from None
    if callback is not None and not callable(callback):
        raise TypeError(f"`callback` must be callable, got {type(callback).__name__}")
    episode_regret = check_bool(episode_regret, "episode_regret")
    if len(seeds) != len(agents):
        raise ValueError(f"`seeds` has {len(seeds)} entries for {len(agents)} agents")
    if any(a._rng is not None for a in agents):
        raise ValueError("`agents` must break ties by index (random_state=None); use run() instead")
    K = check_int(n_episodes, "n_episodes", low=1)
    _check_planned(K, agents, [f"agents[{i}]" for i in range(len(agents))])
    B, H, S, A, C = len(agents), env.horizon, env.n_states, env.n_actions, env.n_cells
    V_star, Q_star = env.optimal_values()
    U = np.stack([_uniforms(seed, K, H, f"seeds[{i}]") for i, seed in enumerate(seeds)])
    cum_init = np.cumsum(env.initial)
    # Everything below is flat arrays and precomputed offsets, so that each step is mostly
    # gathers (indexing an array with an index array), the cheapest numpy calls.
    # Environment tables with one more state D = S: terminal, absorbing, worth 0 (scratch for
    # the learners whose episode has ended).
    D, S1 = S, S + 1
    next_state = np.concatenate([env.next_state, np.full((1, A, C), D)]).ravel()
    reward = np.concatenate([env.reward, np.zeros((1, A, C))]).ravel()
    terminal = np.append(env.terminal, True)
    to_scratch = np.where(terminal, D, np.arange(S1))  # a terminal state sends the learner to D
    times_a = np.arange(S1) * A
    times_c = np.arange(S1 * A) * C
    upper = np.concatenate([env.u_upper, np.full((1, C), np.inf)]).ravel()
    same_cells = bool((env.u_upper == env.u_upper[0]).all())
    if same_cells:  # U does not depend on the state: its cells for every step at once
        cells = np.sum(env.u_upper[0][: C - 1] <= U[..., None], axis=-1)  # (B, K, H + 1)
    gaps = np.zeros((H, S1, A))
    gaps[:, :S] = V_star[:H, :, None] - Q_star
    gaps = gaps.ravel()
    gap_rows = (np.arange(H) * S1 * A)[:, None]  # + (s A + a) indexes the gap at step h
    idle = D * A  # the gap of a step not played: scratch state, 0

    # Learner tables. Q and N: (B, H, S1, A), homogeneous learners use row h' = 0 only.
    # V: (B, H + 1, S1) with row H and terminal states at 0 (V(s') = 0 when the episode ends);
    # φ and V^max: (B, H + 1, S1), φ at terminal states and in row H is 0 for the same reason.
    homog = np.array([a.homogeneous for a in agents])
    b_idx = np.arange(B)
    steps = np.arange(H + 1)[:, None]
    h_rows = np.where(homog[None, :], 0, np.minimum(steps, H - 1))  # (H + 1, B)
    q_base = [(b_idx * H + h_rows[h]) * S1 for h in range(H)]
    q_base_a = [base * A for base in q_base]
    v_base = [(b_idx * (H + 1) + h_rows[h]) * S1 for h in range(H)]
    v_next_base = [(b_idx * (H + 1) + (h_rows[h + 1] if h < H - 1 else H)) * S1 for h in range(H)]
    p_base = [(b_idx * (H + 1) + h) * S1 for h in range(H + 1)]
    Q = np.zeros((B, H, S1, A))
    V = np.zeros((B, H + 1, S1))
    N = np.zeros((B, H, S1, A), dtype=np.int64)
    phi = np.zeros((B, H + 1, S1))
    vmax = np.zeros((B, H + 1, S1))
    for b, agent in enumerate(agents):
        rows = 1 if agent.homogeneous else H
        Q[b, :rows, :S], V[b, :rows, :S], N[b, :rows, :S] = agent._Q, agent._V, agent._N
        phi[b, :, :S], vmax[b, :H, :S] = agent.potential_, agent._vmax
    V[:, :, :S][:, :, env.terminal] = 0.0
    phi[:, :, :S][:, :, env.terminal] = 0.0
    Q2, Q1, N1, V1 = Q.reshape(-1, A), Q.reshape(-1), N.reshape(-1), V.reshape(-1)
    phi1, vmax1 = phi.reshape(-1), vmax.reshape(-1)
    # α_t, 1 − α_t and β_t depend on the count t only: tables, computed as QUCB._update does
    t_max = K * H + 1
    counts = np.arange(t_max + 1)
    increment = counts + 1
    with np.errstate(divide="ignore", invalid="ignore"):  # t = 0 is never looked up
        alphas = (H + 1) / (H + counts)
        keep = 1 - alphas
        bonuses = np.stack([a.c * np.sqrt(a.bonus_scale_ * a.iota_ / counts) for a in agents])
    bonus_base = b_idx * (t_max + 1)
    bonuses = bonuses.ravel()
    factor = np.array([a._factor or 1.0 for a in agents])
    rounds = np.array([a._factor is not None for a in agents])
    all_round, any_round = bool(rounds.all()), bool(rounds.any())
    no_ties = np.zeros(B, dtype=bool)

    gap, episode, returns = np.zeros((B, K)), np.zeros((B, K)), np.zeros((B, K))
    block_base = b_idx * A
    V_pi = _policy_values(env, Q[:, :, :S], homog, no_ties) if episode_regret else None
    changed = np.zeros(B, dtype=bool)  # greedy policy changed since V_pi was computed
    for k in range(K):
        s = _first_true(cum_init[None, :] > U[:, k, :1])
        if not episode_regret:
            episode[:, k] = np.nan
        else:
            assert V_pi is not None  # computed above when episode_regret
            if np.count_nonzero(changed):
                V_pi[changed] = _policy_values(
                    env, Q[changed, :, :S], homog[changed], no_ties[changed]
                )
                changed[:] = False
            episode[:, k] = V_star[0, s] - V_pi[b_idx, s]
        played_sa = np.full((H, B), idle)
        played_y = np.zeros((H, B))
        greedy_after = np.zeros((H, B), dtype=np.int64)
        s_a = times_a[s]
        for h in range(H):
            row = q_base[h] + s
            block = Q2.take(row, axis=0)  # (B, A)
            a = block.argmax(axis=1)
            sa = s_a + a
            if same_cells:
                cell = cells[:, k, h + 1]
            else:
                u = U[:, k, h + 1]
                base = s * C
                cell = (upper[base] <= u).astype(np.int64)
                for j in range(1, C - 1):
                    cell += upper[base + j] <= u
            idx = times_c[sa] + cell
            s_next = next_state[idx]
            y = reward[idx]
            ends = terminal[s_next]
            played_sa[h], played_y[h] = sa, y
            flat = q_base_a[h] + sa
            t = increment[N1[flat]]
            N1[flat] = t
            pos = p_base[h] + s
            r = (y + phi1[p_base[h + 1] + s_next]) - phi1[pos]
            v_next = V1[v_next_base[h] + s_next]
            q = keep[t] * Q1[flat] + alphas[t] * (r + v_next + bonuses[bonus_base + t])
            if any_round:
                rounded = _round(q, factor)
                q = rounded if all_round else np.where(rounds, rounded, q)
            Q1[flat] = q
            np.put(block, block_base + a, q)
            best = block.argmax(axis=1)
            greedy_after[h] = best
            V1[v_base[h] + s] = np.minimum(block.take(block_base + best), vmax1[pos])
            if np.count_nonzero(ends) == B:
                break
            s = to_scratch[s_next]
            s_a = times_a[s]
        gap[:, k] = gaps[gap_rows + played_sa].sum(axis=0)
        returns[:, k] = played_y.sum(axis=0)
        # the greedy action of an updated state moved away from the action just taken
        real = played_sa < idle  # steps on real states (not the scratch state)
        changed |= (real & (greedy_after != played_sa % A)).any(axis=0)
        if callback is not None:
            callback(k)
    live = ~env.terminal  # terminal states were zeroed above; the agents never wrote there
    for b, agent in enumerate(agents):
        rows = 1 if agent.homogeneous else H
        agent._Q[...], agent._N[...] = Q[b, :rows, :S], N[b, :rows, :S]
        agent._V[:, live] = V[b, :rows, :S][:, live]
    return [
        {"gap_regret": gap[b], "episode_regret": episode[b], "returns": returns[b]}
        for b in range(B)
    ]
