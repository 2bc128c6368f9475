"""Episodic Q-learning with UCB-Hoeffding bonuses (Jin et al. 2018), with or without shaping.

Q-UCB (Jin, Allen-Zhu, Bubeck & Jordan 2018, Alg. 1, UCB-H): after the t-th visit of (h, s, a),

    α_t = (H + 1) / (H + t),    ι = log(S A H K / p),
    Q_h(s, a) ← (1 − α_t) Q_h(s, a) + α_t (r + V_{h+1}(s') + β_t),
    V_h(s) ← min(max_a Q_h(s, a), V^max),

with V_{h+1}(s') := 0 when the step ends the episode (a terminal state, or h = H). Vanilla:
r = y, Q initialised at V^max = H, β_t = c √(H³ ι / t). With a potential φ (Li, Zhang &
Bareinboim, ICML 2025, Sec. 4, the paper's three changes): r = y + φ_{h+1}(s') − φ_h(s), Q
initialised at 0 (optimistic because Ṽ* = V* − φ <= 0 when φ >= V*), β_t = c √(H φ_m² ι / t)
with φ_m = max φ, and V^max = 0.

Axis letters: H horizon, S states, A actions.
"""

from __future__ import annotations

import math

import numpy as np

from icml25_core import as_generator, check_choice

from ._validation import check_bool, check_int, check_real
from .shaping import as_potential

__all__ = ["QUCB"]


def _round(x, factor):
    """numpy's ``round(x, decimals)`` rule: ``rint(x · 10^d) / 10^d``."""
    return np.rint(x * factor) / factor


class QUCB:
    """Q-UCB (Jin et al. 2018, UCB-H) for episodic tabular MDPs, optionally with PBRS.

    Parameters
    ----------
    n_states, n_actions, horizon : int
        S, A and H (>= 1).
    n_episodes : int
        K, the number of episodes planned; enters ι = log(S A H K / p).
    potential : array_like of shape (S,), (H, S) or (H + 1, S), optional
        φ, e.g. :func:`causal_pbrs.causal_upper_bound`. None: vanilla Q-UCB. The agent shapes
        the rewards it is given itself: pass the environment's reward to :meth:`update`.
    c : float, default=4.0
        Bonus constant (official ``q_ucb.py``: 4).
    p : float, default=0.1
        Failure probability in ι (official: the factor 10 inside the log).
    homogeneous : bool, default=False
        One Q, V and count table shared by all steps (official ``QUCB_HM``) instead of one per
        step h (Jin et al.).
    clip : {"valid", "official"}, default="valid"
        V^max of the shaped agent: 0 ("valid", optimistic when φ >= V*), or φ_h(s) (official
        ``value_table = min(max Q, upper_value)``; no longer optimistic where φ < 0).
        Vanilla agents clip at H either way.
    bonus_range : {"max_phi", "range"}, default="max_phi"
        φ_m of the shaped bonus: max φ (the paper, which assumes rewards in [0, 1]), or
        max_{h,s}(φ_h(s) − (H − h) min(r_min, 0)), a bound on |Ṽ*| that also holds for negative
        rewards (ours; needs `reward_min`).
    reward_min : float, optional
        r_min, the smallest reward, for ``bonus_range="range"``.
    precision : int, optional
        Round Q to this many decimals after every update (official ``precision``; 3 in the
        notebook). None: no rounding.
    random_state : None, int or numpy.random.Generator, default=None
        None: ties of argmax go to the first action (official ``np.argmax``). Otherwise ties are
        broken uniformly at random with this generator.

    Attributes
    ----------
    Q : ndarray of shape (H, S, A)
        Current Q_h(s, a) (the shared table repeated when `homogeneous`).
    V : ndarray of shape (H, S)
    N : ndarray of shape (H, S, A), int
        Visit counts.
    potential_ : ndarray of shape (H + 1, S)
        φ with φ_H = 0 (zeros for vanilla).
    iota_ : float
        ι.
    bonus_scale_ : float
        The factor under the root: H³ (vanilla) or H φ_m² (shaped).

    Raises
    ------
    ValueError
        If a size is < 1, the potential has the wrong shape or holds NaN / infinity, `c` <= 0,
        `p` is not in (0, 1), `clip` / `bonus_range` is unknown, `precision` < 0, or
        ``bonus_range="range"`` without `reward_min`.

    Notes
    -----
    Source: Jin et al. (2018), Alg. 1 with the Hoeffding bonus; Li, Zhang & Bareinboim (2025),
    Sec. 4 for the shaped variant; official ``causal_rl/algo/reward_shaping/q_ucb.py``
    (``QUCB_HM``) for c, p, the homogeneous tables, the φ(s) clip and the rounding. Unlike the
    official code, V(s') is 0 when the step entered a terminal state (the official code zeroes
    it only at the horizon, so lava and goal cells keep their initial value H under vanilla).

    Examples
    --------
    >>> agent = QUCB(n_states=2, n_actions=2, horizon=3, n_episodes=10)
    >>> a = agent.act(0, 0)
    >>> agent.update(0, 0, a, r=1.0, s_next=1, terminated=False)
    >>> agent.Q.shape
    (3, 2, 2)
    """

    def __init__(
        self,
        n_states,
        n_actions,
        horizon,
        n_episodes,
        *,
        potential=None,
        c=4.0,
        p=0.1,
        homogeneous=False,
        clip="valid",
        bonus_range="max_phi",
        reward_min=None,
        precision=None,
        random_state=None,
    ) -> None:
        S = self.n_states = check_int(n_states, "n_states", low=1)
        A = self.n_actions = check_int(n_actions, "n_actions", low=1)
        H = self.horizon = check_int(horizon, "horizon", low=1)
        K = self.n_episodes = check_int(n_episodes, "n_episodes", low=1)
        self.c = check_real(c, "c", low=0, inclusive="neither")
        self.p = check_real(p, "p", low=0, high=1, inclusive="neither")
        self.homogeneous = check_bool(homogeneous, "homogeneous")
        self.clip = check_choice(clip, "clip", ("valid", "official"))
        self.bonus_range = check_choice(bonus_range, "bonus_range", ("max_phi", "range"))
        self.reward_min = None if reward_min is None else check_real(reward_min, "reward_min")
        self.precision = None if precision is None else check_int(precision, "precision", low=0)
        self.random_state = random_state
        self._rng = None if random_state is None else as_generator(random_state)
        self.shaped = potential is not None
        self.potential_ = (
            as_potential(potential, H, S, "potential") if self.shaped else np.zeros((H + 1, S))
        )
        self.iota_ = math.log(S * A * H * K / self.p)
        if not self.shaped:
            self.bonus_scale_ = float(H) ** 3
            self._vmax = np.full((H, S), float(H))
        else:
            phi = self.potential_[:H]
            if self.bonus_range == "max_phi":
                phi_m = float(phi.max())
            else:
                if self.reward_min is None:
                    raise ValueError('`reward_min` is required with bonus_range="range"')
                remaining = (H - np.arange(H))[:, None]
                phi_m = float((phi - remaining * min(self.reward_min, 0.0)).max())
            self.bonus_scale_ = H * phi_m**2
            self._vmax = np.zeros((H, S)) if self.clip == "valid" else phi.copy()
        rows = 1 if self.homogeneous else H
        init = 0.0 if self.shaped else float(H)
        self._Q = np.full((rows, S, A), init)
        self._V = np.full((rows, S), init)
        self._N = np.zeros((rows, S, A), dtype=np.int64)
        self._factor = None if self.precision is None else 10.0**self.precision

    # ------------------------------------------------------------------------------ tables
    def _rows(self, table):
        view = np.broadcast_to(table, (self.horizon, *table.shape[1:]))
        return view if self.homogeneous else table.view()

    @property
    def Q(self) -> np.ndarray:
        """Optimistic action values Q_h(s, a), (H, S, A) float64 (rows shared if homogeneous)."""
        return self._rows(self._Q)

    @property
    def V(self) -> np.ndarray:
        """V_h(s) = min(max_a Q_h(s, a), V̄_h(s)): the Q-learning target, (H, S) float64."""
        return self._rows(self._V)

    @property
    def N(self) -> np.ndarray:
        """Visit counts N_h(s, a), shape (H, S, A) int64 (rows shared if homogeneous)."""
        return self._rows(self._N)

    def greedy_policy(self) -> np.ndarray:
        """argmax_a Q_h(s, a) (first index on ties), shape (H, S)."""
        return self.Q.argmax(axis=-1)

    # -------------------------------------------------------------------------- interface
    @staticmethod
    def _is_index(value, size):
        integer = isinstance(value, int | np.integer) and not isinstance(value, bool)
        return integer and 0 <= value < size

    def _check_step(self, h, s, name="s"):
        if not self._is_index(h, self.horizon):
            raise ValueError(f"`h` must be an int in [0, {self.horizon - 1}], got {h!r}")
        if not self._is_index(s, self.n_states):
            raise ValueError(f"`{name}` must be an int in [0, {self.n_states - 1}], got {s!r}")

    def act(self, h, s) -> int:
        """Greedy action argmax_a Q_h(s, a) at step h (0-based) and state s.

        Raises
        ------
        ValueError
            If `h` or `s` is out of range.
        """
        self._check_step(h, s)
        return self._act(int(h), int(s))

    def _act(self, h, s):
        q = self._Q[0 if self.homogeneous else h, s]
        if self._rng is None:
            return int(q.argmax())
        best = np.flatnonzero(q == q.max())
        return int(best[0] if len(best) == 1 else self._rng.choice(best))

    def update(self, h, s, a, r, s_next, terminated) -> None:
        """One Q-UCB update after the step (h, s, a) → (r, s_next).

        Parameters
        ----------
        h, s, a : int
            Step (0-based), state and action.
        r : float
            The environment's reward y (the agent adds φ_{h+1}(s') − φ_h(s) itself).
        s_next : int
        terminated : bool
            Whether s_next is terminal (then V(s') and φ(s') are 0, as at h = H − 1).

        Raises
        ------
        ValueError
            If an index is out of range or `r` is NaN or infinite.
        TypeError
            If `terminated` is not a bool (or 0/1): a string such as ``"False"`` is refused
            rather than read as True.
        """
        self._check_step(h, s)
        self._check_step(h, s_next, "s_next")
        if not self._is_index(a, self.n_actions):
            raise ValueError(f"`a` must be an int in [0, {self.n_actions - 1}], got {a!r}")
        r = check_real(r, "r")
        terminated = check_bool(terminated, "terminated", allow_int=True)
        self._update(int(h), int(s), int(a), r, int(s_next), terminated)

    def _update(self, h, s, a, y, s_next, terminated):
        H = self.horizon
        i = 0 if self.homogeneous else h
        self._N[i, s, a] += 1
        t = self._N[i, s, a]
        alpha = (H + 1) / (H + t)
        bonus = self.c * np.sqrt(self.bonus_scale_ * self.iota_ / t)
        ends = terminated or h == H - 1
        phi = self.potential_
        r = (y + (0.0 if ends else phi[h + 1, s_next])) - phi[h, s]
        v_next = 0.0 if ends else self._V[0 if self.homogeneous else h + 1, s_next]
        q = (1 - alpha) * self._Q[i, s, a] + alpha * (r + v_next + bonus)
        if self._factor is not None:
            q = _round(q, self._factor)
        self._Q[i, s, a] = q
        self._V[i, s] = np.minimum(self._Q[i, s].max(), self._vmax[h, s])

    def __repr__(self) -> str:
        kind = "shaped" if self.shaped else "vanilla"
        return (
            f"QUCB({kind}, S={self.n_states}, A={self.n_actions}, H={self.horizon}, "
            f"K={self.n_episodes}, homogeneous={self.homogeneous}, clip={self.clip!r})"
        )
