"""Demonstrators who see the confounder U, and their exact values.

The paper's offline data come from behaviour policies x = β(s, u) that act on the wind (or slip)
U the learner never sees (Li, Zhang & Bareinboim, ICML 2025, Sec. 2 and 5). Here a demonstrator is
a table π_h(x | s, u) over the cells of U, so that both sampling and the exact observational
distribution are available (this module computes both; :meth:`TabularCMDP.collect` and
:meth:`TabularCMDP.observational_distribution` reach them through
:class:`causal_pbrs.envs.TabularPolicy`, so imports run one way: ``behavior`` -> ``envs``).
Built in: an expert (optimal in the U-revealed MDP), an anti-expert (worst there) and a
uniform random policy, each mixed with ε = 0.05 uniform actions (the official behaviour
policies act at random 5% of the time).

Axis letters: H horizon, S states, K cells of U, A actions.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse

from icml25_core import as_generator, check_array

from ._validation import check_int, check_real
from .data import Counts
from .envs import TabularCMDP, TabularPolicy, _first_true, _normalised_cumsum

__all__ = ["Demonstrator", "anti_expert", "exact_values", "expert", "random_policy"]


EPSILON = (
    0.05  # official: `np.random.rand() < .95` in every behaviour policy of calculate_values.py
)


def _check_env(env) -> None:
    if not isinstance(env, TabularCMDP):
        raise TypeError(
            "`env` must be a TabularCMDP (WindyGrid, ConfoundedToyText or your own), got "
            f"{type(env).__name__}"
        )


class Demonstrator(TabularPolicy):
    """A behaviour policy that sees U: π_h(x | s, u) as a table over the cells of U.

    Parameters
    ----------
    env : TabularCMDP
        The environment whose cells of U the table is indexed by.
    table : array_like of shape (H, S, K, A) or (S, K, A), float
        Action probabilities; a 3-D table is used at every step. Rows sum to 1.
    name : str, default="demonstrator"

    Raises
    ------
    TypeError
        If `env` is not a :class:`~causal_pbrs.TabularCMDP`.
    ValueError
        If the table's shape does not match `env` or a row does not sum to 1; from a call, if
        `s`, `h` or `u` is out of range.

    Notes
    -----
    Call it as ``policy(s, h, u, rng)``, with ``u`` what ``env.confounder`` reveals (the raw
    uniform draw on toy-text environments, the wind index on :class:`WindyGrid`).

    Examples
    --------
    >>> from causal_pbrs import WindyGrid
    >>> env = WindyGrid.preset("empty8")
    >>> always_still = Demonstrator(env, np.eye(5)[np.full((64, 5), 4)], name="still")
    >>> always_still(9, 0, 1, np.random.default_rng(0))
    4
    """

    def __init__(self, env, table, name: str = "demonstrator") -> None:
        _check_env(env)
        H, S, K, A = env.horizon, env.n_states, env.n_cells, env.n_actions
        table = check_array(table, "table", ndim=(3, 4), cast=np.float64)
        if table.ndim == 3:
            table = np.broadcast_to(table, (H, *table.shape))
        if table.shape != (H, S, K, A):
            raise ValueError(f"`table` must have shape ({H}, {S}, {K}, {A}), got {table.shape}")
        if (table < 0).any() or not np.allclose(table.sum(axis=-1), 1.0, atol=1e-9):
            raise ValueError("`table` rows must be probabilities summing to 1")
        self.env = env
        self.name = str(name)
        self.probs_table = np.array(table)
        self.probs_table.setflags(write=False)

    def check_env(self, env) -> None:
        """Raise ValueError unless the table fits `env`'s sizes."""
        want = (env.horizon, env.n_states, env.n_cells, env.n_actions)
        if self.probs_table.shape != want:
            raise ValueError(
                f"`policy` was built for tables of shape {self.probs_table.shape}; this "
                f"environment needs {want}"
            )

    def probs(self, h: int, s: int, u) -> np.ndarray:
        """π_h(· | s, u): shape (A,)."""
        H, S = self.probs_table.shape[:2]
        h = check_int(h, "h", low=0, high=H - 1)
        s = check_int(s, "s", low=0, high=S - 1)
        return self.probs_table[h, s, self.env.confounder_cell(s, u)]

    def __call__(self, s: int, h: int, u, rng=None) -> int:
        cum = np.cumsum(self.probs(h, s, u))
        return int(np.argmax(cum / cum[-1] > as_generator(rng).random()))

    def _sample(self, env, n, rng):
        """Whole episodes on `env` until at least `n` rows (:meth:`TabularCMDP.collect`)."""
        return _simulate_tables(env, self.probs_table, n, rng)

    def _distribution(self, env) -> Counts:
        """Expected counts per episode (:meth:`TabularCMDP.observational_distribution`)."""
        H, S, A, K = env.horizon, env.n_states, env.n_actions, env.n_cells
        n_s = np.zeros((H, S))
        n_sa, n_end, y_sum = np.zeros((H, S, A)), np.zeros((H, S, A)), np.zeros((H, S, A))
        rows, cols, values = [], [], []  # sparse N_h(s, x, s'), row (h·S + s)·A + x
        entered_terminal = np.zeros(S, dtype=bool)
        seen = np.zeros((S, A, K), dtype=bool)  # (s, a, k) logged with positive probability
        s_idx, a_idx, _ = np.indices((S, A, K))
        ends = env.terminal[env.next_state]
        go = ~ends
        row_go = s_idx[go] * A + a_idx[go]
        d = env.initial.copy()
        for h in range(H):
            n_s[h] = d
            mass = d[:, None, None] * (env.u_prob[:, :, None] * self.probs_table[h])  # (S, K, A)
            mass = mass.transpose(0, 2, 1)  # (S, A, K)
            n_sa[h] = mass.sum(axis=2)
            y_sum[h] = (mass * env.reward).sum(axis=2)
            rows.append(h * S * A + row_go)
            cols.append(env.next_state[go])
            values.append(mass[go])
            n_end[h] = np.where(ends, mass, 0.0).sum(axis=2)
            entered_terminal[env.next_state[ends & (mass > 0)]] = True
            seen |= mass > 0
            d = np.bincount(env.next_state[go], weights=mass[go], minlength=S)
        n_sas = scipy.sparse.coo_array(
            (np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))),
            shape=(H * S * A, S),
        )
        rewards = env.reward[seen]
        return Counts(
            n_s=n_s,
            n_sa=n_sa,
            n_sas=n_sas,
            n_end=n_end,
            y_sum=y_sum,
            terminal=entered_terminal,
            y_min=float(rewards.min()) if rewards.size else 0.0,
            y_max=float(rewards.max()) if rewards.size else 0.0,
        )

    def __repr__(self) -> str:
        return f"Demonstrator({self.name!r}, shape={self.probs_table.shape})"


def _simulate_tables(env, probs_table, n, rng):
    """Whole episodes of a tabular demonstrator, simulated in batches (episode-major rows)."""
    H = env.horizon
    cum_init = _normalised_cumsum(env.initial)
    cum_pi = _normalised_cumsum(probs_table)  # (H, S, K, A)
    chunks, total, mean_len = [], 0, float(H)
    while total < n:
        E = max(32, int(1.1 * (n - total) / mean_len) + 1)
        s = _first_true(cum_init[None, :] > rng.random(E)[:, None])
        alive = np.ones(E, dtype=bool)
        types = (np.int64, np.int64, np.int64, np.float64, np.int64, bool)
        cols = {key: np.zeros((H, E), dtype=t) for key, t in zip("hsxyzd", types, strict=True)}
        live = np.zeros((H, E), dtype=bool)
        for h in range(H):
            k = _first_true(env.u_upper[s] > rng.random(E)[:, None])
            x = _first_true(cum_pi[h, s, k] > rng.random(E)[:, None])
            s_next = env.next_state[s, x, k]
            done = env.terminal[s_next]
            live[h] = alive
            cols["h"][h], cols["s"][h], cols["x"][h] = h, s, x
            cols["y"][h], cols["z"][h], cols["d"][h] = env.reward[s, x, k], s_next, done
            alive = alive & ~done
            s = s_next
            if not alive.any():
                break
        lengths = live.sum(axis=0)
        take = np.searchsorted(np.cumsum(lengths), n - total) + 1  # whole episodes up to n
        keep = live[:, :take].T  # (E', H) episode-major
        chunks.append({key: val[:, :take].T[keep] for key, val in cols.items()})
        total += int(lengths[:take].sum())
        mean_len = max(1.0, float(lengths.mean()))
    out = {key: np.concatenate([c[key] for c in chunks]) for key in "hsxyzd"}
    return out["h"], out["s"], out["x"], out["y"].astype(np.float64), out["z"], out["d"]


def _revealed(env, epsilon, worst):
    """Greedy (or anti-greedy) policy of the U-revealed MDP, mixed with ε uniform actions."""
    _check_env(env)
    epsilon = check_real(epsilon, "epsilon", low=0, high=1)
    H, S, K, A = env.horizon, env.n_states, env.n_cells, env.n_actions
    V = np.zeros(S)
    table = np.empty((H, S, K, A))
    for h in range(H - 1, -1, -1):
        q = env.reward + np.where(env.terminal, 0.0, V)[env.next_state]  # (S, A, K)
        q = q.transpose(0, 2, 1)  # (S, K, A)
        pick = q.argmin(axis=-1) if worst else q.argmax(axis=-1)
        table[h] = (1.0 - epsilon) * np.eye(A)[pick] + epsilon / A
        V = np.einsum("sk,sk->s", env.u_prob, np.take_along_axis(q, pick[..., None], -1)[..., 0])
        V[env.terminal] = 0.0
    return table


def expert(env, epsilon: float = EPSILON) -> Demonstrator:
    """The demonstrator who acts optimally on what it sees of U, with ε uniform actions.

    Parameters
    ----------
    env : TabularCMDP
    epsilon : float, default=0.05
        Probability of a uniform action (official: 5%).

    Returns
    -------
    Demonstrator
        ``(1 − ε)·1[x = argmax_a Q^U_h(s, u, a)] + ε/A`` with the U-revealed values
        ``Q^U_h(s, u, a) = r(s, a, u) + V^U_{h+1}(f(s, a, u))``, ``V^U_h(s) = E_u max_a Q^U_h``
        (ties: the first action).
    """
    return Demonstrator(env, _revealed(env, epsilon, worst=False), name="expert")


def anti_expert(env, epsilon: float = EPSILON) -> Demonstrator:
    """The demonstrator who acts worst on what it sees of U (argmin instead of argmax)."""
    return Demonstrator(env, _revealed(env, epsilon, worst=True), name="anti-expert")


def random_policy(env) -> Demonstrator:
    """The uniform random demonstrator (official ``np.random.choice(5)``)."""
    _check_env(env)
    shape = (env.horizon, env.n_states, env.n_cells, env.n_actions)
    return Demonstrator(env, np.full(shape, 1.0 / env.n_actions), name="random")


def exact_values(env, policy: Demonstrator) -> np.ndarray:
    """Exact value of a demonstrator's own behaviour: the limit of its Monte-Carlo returns.

    Parameters
    ----------
    env : TabularCMDP
    policy : Demonstrator

    Returns
    -------
    ndarray of shape (H + 1, S), float64
        V^β_h(s) = E[Σ_{t >= h} Y_t | S_h = s] under β, with V^β_H ≡ 0. Because β sees U this
        can exceed the interventional optimum V*_h(s): behavioural values are not upper bounds.
    """
    _check_env(env)
    if not isinstance(policy, Demonstrator):
        raise TypeError(f"`policy` must be a Demonstrator, got {type(policy).__name__}")
    policy.check_env(env)
    H, S = env.horizon, env.n_states
    V = np.zeros((H + 1, S))
    for h in range(H - 1, -1, -1):
        q = (env.reward + np.where(env.terminal, 0.0, V[h + 1])[env.next_state]).transpose(0, 2, 1)
        V[h] = np.einsum("sk,ska,ska->s", env.u_prob, policy.probs_table[h], q)
        V[h, env.terminal] = 0.0
    return V
