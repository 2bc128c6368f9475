"""Confounded tabular MDPs with exact transition tables (gymnasium environments).

A confounded MDP (CMDP; Li, Zhang & Bareinboim, ICML 2025, Sec. 2) with horizon H: at each step an
unobserved U_h ~ P(U | S_h) drives the demonstrator's action X_h = β(S_h, U_h), the reward
Y_h = r(S_h, X_h, U_h) and the next state S_{h+1} = f(S_h, X_h, U_h). A learner plays do(x) blind
to U, so its transition and reward tables are averages over U:

    T(s, a, s') = Σ_u P(u | s) 1[f(s, a, u) = s'],    R(s, a) = Σ_u P(u | s) r(s, a, u).

Every environment here stores these structural equations as finite tables over the cells of U
(:class:`TabularCMDP`), from which the do-tables, the optimal values, the exact observational
distribution of a demonstrator and fast simulation all follow. ``step(a)`` is do(a) and never
reveals U; ``render_mode="ansi"`` gives text, as gymnasium's toy-text environments do.

Imports run one way: the demonstrators (``behavior``) use this module, which knows them only
through :class:`TabularPolicy`; the windy grids' layouts and the gymnasium ids
(``gymnasium.make("causal_pbrs/WindyLava-v0")``) are in ``presets``.

Axis letters: H horizon, S states, A actions, K cells of the confounder U.
Time steps are 0-based in arrays: h = 0, ..., H - 1; row H of a value table is V_{H+1} ≡ 0.
"""

from __future__ import annotations

import abc
import numbers
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from icml25_core import as_generator, check_array, check_choice

from ._validation import check_index_array, check_int, check_probabilities, check_real
from .data import Counts, OfflineDataset
from .presets import NAMED_ENVS, PRESETS

__all__ = ["ConfoundedToyText", "TabularCMDP", "WindyGrid"]


def _first_true(mask: np.ndarray) -> np.ndarray:
    """Index of the first True along the last axis (0 when none), numpy's ``argmax`` rule."""
    return np.argmax(mask, axis=-1)


class TabularPolicy(abc.ABC):
    """A behaviour policy given by a table π_h(x | s, u) over the cells of U: the interface.

    :meth:`TabularCMDP.collect` samples such a policy in batches and
    :meth:`TabularCMDP.observational_distribution` sums over it exactly through these methods;
    :class:`causal_pbrs.Demonstrator` implements them. The environments know the demonstrators
    only through this class, so imports run one way (``behavior`` -> ``envs`` -> ``presets``).
    """

    @abc.abstractmethod
    def check_env(self, env: TabularCMDP) -> None:
        """Raise ValueError unless the table fits `env`'s sizes."""

    @abc.abstractmethod
    def _sample(self, env: TabularCMDP, n: int, rng: np.random.Generator) -> tuple:
        """Whole episodes until at least `n` rows: the columns (h, s, x, y, s_next, done)."""

    @abc.abstractmethod
    def _distribution(self, env: TabularCMDP) -> Counts:
        """Exact expected counts per episode (:meth:`TabularCMDP.observational_distribution`)."""


class TabularCMDP(gymnasium.Env):
    """A finite-horizon confounded MDP given by its structural equations.

    Parameters
    ----------
    u_prob : array_like of shape (S, K), float
        P(U = k | S = s): the distribution of the confounder's cells at each state (rows sum to 1;
        padding cells have probability 0).
    next_state : array_like of shape (S, A, K), int
        f(s, a, k): the state entered when action a is taken at s and U falls in cell k.
    reward : array_like of shape (S, A, K), float
        r(s, a, k): the reward of that step.
    terminal : array_like of shape (S,), bool
        States that end the episode when entered; they are worth 0.
    initial : array_like of shape (S,), float
        Distribution of the first state (no mass on terminal states).
    horizon : int
        H >= 1, the number of steps of an episode.
    u_upper : array_like of shape (S, K), float, optional
        Upper edges of the cells on [0, 1): ``step`` draws u ~ Uniform[0, 1) and U falls in the
        first cell whose edge exceeds u. Defaults to the cumulative sums of `u_prob`.
    render_mode : {None, "ansi"}, default=None
        ``"ansi"``: :meth:`render` returns the step, the state and the last action as text (the
        subclasses add their grid), as gymnasium's toy-text environments do.

    Attributes
    ----------
    n_states, n_actions, n_cells, horizon : int
    u_prob, next_state, reward, terminal, initial, u_upper : ndarray
        The validated tables (read-only).
    render_mode : str or None

    Raises
    ------
    ValueError
        If a table has the wrong shape, a probability row does not sum to 1, a next state is out
        of range, a reward is NaN or infinite, the initial distribution puts mass on a terminal
        state, `horizon` < 1, or `render_mode` is neither None nor ``"ansi"``.

    Notes
    -----
    Source: the CMDP of Li, Zhang & Bareinboim (2025), Sec. 2; termination is a property of the
    state entered (gymnasium's toy-text ``done`` flags), and terminal states are worth 0.

    Examples
    --------
    A two-state chain where U decides whether action 1 reaches the goal:

    >>> import numpy as np
    >>> env = TabularCMDP(
    ...     u_prob=[[0.5, 0.5], [1.0, 0.0]],
    ...     next_state=[[[0, 0], [1, 0]], [[1, 1], [1, 1]]],
    ...     reward=[[[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]],
    ...     terminal=[False, True],
    ...     initial=[1.0, 0.0],
    ...     horizon=2,
    ... )
    >>> V, Q = env.optimal_values()
    >>> float(V[0, 0])
    0.75
    """

    # gymnasium.Env types it as a mutable class attribute; render_fps as in the toy-text envs
    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012

    def __init__(
        self,
        u_prob,
        next_state,
        reward,
        terminal,
        initial,
        horizon,
        *,
        u_upper=None,
        render_mode=None,
    ) -> None:
        self.render_mode = _check_render_mode(render_mode)
        u_prob = check_probabilities(check_array(u_prob, "u_prob", ndim=2), "u_prob", axis=1)
        S, K = u_prob.shape
        next_state = check_array(next_state, "next_state", ndim=3, dtype="integer")
        if next_state.shape[0] != S or next_state.shape[2] != K:
            raise ValueError(
                f"`next_state` must have shape (S, A, K) = ({S}, *, {K}) to match `u_prob`, "
                f"got {next_state.shape}"
            )
        A = next_state.shape[1]
        check_index_array(next_state.ravel(), "next_state", S)
        reward = check_array(reward, "reward", shape=(S, A, K), dtype="numeric", cast=np.float64)
        terminal = check_array(terminal, "terminal", shape=(S,), dtype="bool")
        initial = check_probabilities(check_array(initial, "initial", shape=(S,)), "initial")
        if (initial[terminal] > 0).any():
            raise ValueError("`initial` puts probability on a terminal state")
        self.horizon = check_int(horizon, "horizon", low=1)
        if u_upper is None:
            u_upper = np.cumsum(u_prob, axis=1)
            last = K - 1 - _first_true((u_prob > 0)[:, ::-1])
            u_upper[np.arange(K) >= last[:, None]] = np.inf  # the last cell takes all of [.., 1)
        else:
            u_upper = check_array(u_upper, "u_upper", shape=(S, K), cast=np.float64, finite=False)
            if np.isnan(u_upper).any() or (u_upper[:, 1:] < u_upper[:, :-1]).any():
                raise ValueError("`u_upper` must be non-decreasing along each row")
        self.n_states, self.n_actions, self.n_cells = int(S), int(A), int(K)
        self.u_prob = self._frozen(u_prob)
        self.next_state = self._frozen(next_state.astype(np.int64))
        self.reward = self._frozen(reward)
        self.terminal = self._frozen(terminal.astype(bool))
        self.initial = self._frozen(initial)
        self.u_upper = self._frozen(u_upper)
        self.observation_space = spaces.Discrete(S)
        self.action_space = spaces.Discrete(A)
        self._s: int | None = None  # None once the episode is over
        self._h = 0
        self._shown: tuple[int, int | None] | None = None  # (state, last action) for render()

    @staticmethod
    def _frozen(arr):
        arr = np.array(arr)
        arr.setflags(write=False)
        return arr

    # ------------------------------------------------------------------ the gymnasium interface
    def reset(self, *, seed=None, options=None):
        """Start an episode; the first state is drawn as gymnasium's toy-text envs draw it.

        Parameters
        ----------
        seed : int, optional
            Seeds ``self.np_random`` (gymnasium's rule: ``np.random.default_rng(seed)``).
        options : dict, optional
            Unused.

        Returns
        -------
        tuple of (int, dict)
            The first state and ``{"h": 0}``.
        """
        super().reset(seed=seed)
        self._s = int(_first_true(np.cumsum(self.initial) > self.np_random.random()))
        self._h = 0
        self._shown = (self._s, None)
        return self._s, {"h": 0}

    def step(self, action):
        """do(action): one step of the interventional environment; U stays hidden.

        Parameters
        ----------
        action : int
            In [0, A): a Python or numpy integer, or a 0-d integer array (as gymnasium's
            ``Discrete`` space and toy-text environments accept).

        Returns
        -------
        tuple of (int, float, bool, bool, dict)
            Next state, reward, terminated (a terminal state was entered), truncated (the
            horizon was reached), ``{"h": steps taken}``.

        Raises
        ------
        RuntimeError
            If the episode is over (call ``reset``).
        ValueError
            If `action` is not an integer in [0, A) (a bool, a float, a string or an array of
            another shape or dtype is refused too).
        """
        if self._s is None:
            raise RuntimeError("the episode is over (or never started): call reset() first")
        s, a = self._s, self._check_action(action)
        k = self._cell(s, self.np_random.random())
        s_next = int(self.next_state[s, a, k])
        terminated = bool(self.terminal[s_next])
        self._h += 1
        truncated = self._h >= self.horizon and not terminated
        self._s = None if (terminated or truncated) else s_next
        self._shown = (s_next, a)
        return s_next, float(self.reward[s, a, k]), terminated, truncated, {"h": self._h}

    def _check_action(self, action) -> int:
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action[()]  # a 0-d array: its numpy scalar
        if (
            isinstance(action, numbers.Integral)
            and not isinstance(action, bool)
            and 0 <= int(action) < self.n_actions
        ):
            return int(action)
        raise ValueError(
            f"`action` must be an int in [0, {self.n_actions - 1}] (or a 0-d integer array), "
            f"got {action!r}"
        )

    def render(self) -> str | None:
        """The current step, state and last action as text (``render_mode="ansi"``).

        Returns
        -------
        str or None
            A header ``h = <steps taken>/<H>, s = <state>, last action <a>`` and, on
            :class:`WindyGrid` and :class:`ConfoundedToyText`, the grid below it. After the
            episode ends it shows the state entered last. None, with a warning, when the
            environment was built without a render mode (gymnasium's toy-text behaviour).
        """
        if self.render_mode is None:
            gymnasium.logger.warn(
                "You are calling render method without specifying any render mode: build the "
                'environment with render_mode="ansi" to get text.'
            )
            return None
        if self._shown is None:
            return f"h = 0/{self.horizon}, not started: call reset()\n"
        s, a = self._shown
        last = "" if a is None else f", last action {self._action_name(a)}"
        grid = self._render_grid(s, a)
        header = f"h = {self._h}/{self.horizon}, s = {s}{last}\n"
        return header if grid is None else header + grid

    def _action_name(self, a: int) -> str:
        return str(a)

    def _render_grid(self, s: int, a: int | None) -> str | None:
        """The text grid below the header (None: a CMDP given by its tables has no grid)."""
        return None

    # ------------------------------------------------------------------------- the confounder
    def cell(self, s: int, u: float) -> int:
        """The cell of U that a uniform draw ``u`` in [0, 1) falls in at state ``s``.

        Raises
        ------
        ValueError
            If `s` is not a state or `u` is not in [0, 1).
        """
        s = check_int(s, "s", low=0, high=self.n_states - 1)
        u = check_real(u, "u", low=0, high=1, inclusive="left")
        return self._cell(s, u)

    def _cell(self, s, u):
        return int(_first_true(self.u_upper[s] > u))

    def confounder(self, s: int, k: int, u: float):
        """What a demonstrator sees of U: here the cell index ``k`` (``u`` is the raw draw)."""
        return k

    def confounder_cell(self, s: int, u) -> int:
        """Inverse of :meth:`confounder`: the cell index of what a demonstrator saw.

        Raises
        ------
        ValueError
            If `u` is not a cell index in [0, K).
        """
        return check_int(u, "u", low=0, high=self.n_cells - 1)

    # --------------------------------------------------------------------------------- tables
    @property
    def reward_range(self) -> tuple[float, float]:
        """(r_min, r_max) over the steps that can happen (non-terminal states, cells of U > 0)."""
        live = (~self.terminal)[:, None, None] & (self.u_prob[:, None, :] > 0)
        live = np.broadcast_to(live, self.reward.shape)
        return float(self.reward[live].min()), float(self.reward[live].max())

    def tables(self):
        """The interventional (do) tables.

        Returns
        -------
        T : ndarray of shape (S, A, S), float64
            T(s, a, s') = Σ_k P(k | s) 1[f(s, a, k) = s']; rows sum to 1.
        R : ndarray of shape (S, A), float64
            R(s, a) = Σ_k P(k | s) r(s, a, k).
        terminal : ndarray of shape (S,), bool
        """
        S, A, K = self.next_state.shape
        T = np.zeros((S, A, S))
        s_idx, a_idx, _ = np.indices((S, A, K))
        np.add.at(
            T, (s_idx, a_idx, self.next_state), np.broadcast_to(self.u_prob[:, None], (S, A, K))
        )
        R = np.einsum("sk,sak->sa", self.u_prob, self.reward)
        return T, R, self.terminal.copy()

    def optimal_values(self):
        """Optimal interventional values by backward induction on the do-tables.

        Returns
        -------
        V : ndarray of shape (H + 1, S), float64
            V*_h(s); row H is V*_{H+1} ≡ 0 and terminal states are worth 0.
        Q : ndarray of shape (H, S, A), float64
            Q*_h(s, a) = R(s, a) + Σ_{s'} T(s, a, s') V*_{h+1}(s').
        """
        return _backward_induction(self, maximise=True)

    def values_of(self, policy_probs):
        """Exact values of a Markov policy of the learner (who does not see U).

        Parameters
        ----------
        policy_probs : array_like of shape (H, S, A) or (S, A)
            π_h(a | s); a 2-D table is used at every step.

        Returns
        -------
        ndarray of shape (H + 1, S)
            V^π_h(s), with V^π_H ≡ 0.

        Raises
        ------
        ValueError
            If the shape is neither (H, S, A) nor (S, A), or a row π_h(· | s) is not a
            probability vector (negative, or not summing to 1).
        """
        H, S, A = self.horizon, self.n_states, self.n_actions
        pi = check_array(policy_probs, "policy_probs", ndim=(2, 3), cast=np.float64)
        if pi.shape not in ((S, A), (H, S, A)):
            raise ValueError(
                f"`policy_probs` must have shape ({H}, {S}, {A}) or ({S}, {A}), got {pi.shape}"
            )
        pi = check_probabilities(pi, "policy_probs", atol=1e-6)
        pi = np.broadcast_to(pi, (H, S, A))
        V = np.zeros((H + 1, S))
        for h in range(H - 1, -1, -1):
            V[h] = np.einsum("sa,sa->s", pi[h], self._q_backup(V[h + 1]))
            V[h, self.terminal] = 0.0
        return V

    def _q_backup(self, v_next):
        """Q(s, a) = Σ_k P(k|s) [r(s, a, k) + V(f(s, a, k))], terminal next states worth 0."""
        cont = np.where(self.terminal, 0.0, v_next)[self.next_state]
        return np.einsum("sk,sak->sa", self.u_prob, self.reward + cont)

    # ------------------------------------------------------------------------- demonstrations
    def collect(self, policy, n, rng=None):
        """Log whole episodes of a demonstrator who sees U until at least `n` transitions.

        Parameters
        ----------
        policy : Demonstrator or callable
            A :class:`causal_pbrs.behavior.Demonstrator` (simulated in batches), or any
            ``policy(s, h, u, rng) -> action`` where ``u`` is what :meth:`confounder` reveals.
        n : int
            Minimum number of transitions; the last episode is completed (as the official
            ``gen_dataset`` does), so the log holds at most ``n + H - 1`` rows.
        rng : None, int or numpy.random.Generator, default=None

        Returns
        -------
        OfflineDataset
            Rows (h, s, x, y, s_next, done), episode after episode; ``done`` marks a terminal
            state entered (the horizon cut is not ``done``).

        Raises
        ------
        ValueError
            If `n` < 1 or the policy returns an invalid action.
        TypeError
            If `policy` is not callable.
        """
        n = check_int(n, "n", low=1)
        rng = as_generator(rng)
        if isinstance(policy, TabularPolicy):
            policy.check_env(self)
            cols = policy._sample(self, n, rng)
        elif callable(policy):
            cols = _simulate_callable(self, policy, n, rng)
        else:
            raise TypeError(f"`policy` must be a Demonstrator or a callable, got {type(policy)}")
        h, s, x, y, s_next, done = cols
        return OfflineDataset(
            h, s, x, y, s_next, done,
            n_states=self.n_states, n_actions=self.n_actions, horizon=self.horizon,
        )  # fmt: skip

    def observational_distribution(self, policy):
        """The exact distribution of a demonstrator's logs, as expected counts per episode.

        Parameters
        ----------
        policy : Demonstrator
            Its table π_h(x | s, u) makes the distribution computable exactly.

        Returns
        -------
        Counts
            ``n_s[h, s]`` = P(S_h = s), ``n_sa`` = P(S_h = s, X_h = x), ``n_sas`` (continuing
            steps) and ``n_end`` (steps entering a terminal state) likewise, ``y_sum`` =
            E[Y_h 1{S_h = s, X_h = x}]: what :meth:`OfflineDataset.counts` converges to, divided
            by the number of episodes. Feed it to :func:`causal_pbrs.bounds.causal_upper_bound`.

        Raises
        ------
        TypeError
            If `policy` is not a Demonstrator (a bare callable has no table to sum over).
        """
        if not isinstance(policy, TabularPolicy):
            raise TypeError(
                "`policy` must be a Demonstrator (expert, anti_expert, random_policy or "
                f"Demonstrator(env, table)) for an exact distribution, got {type(policy)}"
            )
        policy.check_env(self)
        return policy._distribution(self)


def _check_render_mode(render_mode):
    modes = TabularCMDP.metadata["render_modes"]
    if render_mode is not None and (not isinstance(render_mode, str) or render_mode not in modes):
        raise ValueError(
            f"`render_mode` must be None or 'ansi' (text), got {render_mode!r}; the "
            "environments of causal_pbrs draw no pictures"
        )
    return render_mode


def _backward_induction(env: TabularCMDP, maximise=True):
    H, S, A = env.horizon, env.n_states, env.n_actions
    V = np.zeros((H + 1, S))
    Q = np.zeros((H, S, A))
    for h in range(H - 1, -1, -1):
        Q[h] = env._q_backup(V[h + 1])
        Q[h, env.terminal] = 0.0
        V[h] = Q[h].max(axis=1) if maximise else Q[h].min(axis=1)
    return V, Q


def _normalised_cumsum(p):
    cum = np.cumsum(p, axis=-1)
    return cum / cum[..., -1:]


def _simulate_callable(env, policy, n, rng):
    """Whole episodes of ``policy(s, h, u, rng)``, one step at a time."""
    rows: list[tuple] = []
    cum_init = _normalised_cumsum(env.initial)
    while len(rows) < n:
        s = int(_first_true(cum_init > rng.random()))
        for h in range(env.horizon):
            u = rng.random()
            k = env._cell(s, u)
            x = policy(s, h, env.confounder(s, k, u), rng)
            if not (isinstance(x, numbers.Integral) and 0 <= int(x) < env.n_actions):
                raise ValueError(
                    f"`policy` returned {x!r} at state {s}, step {h}; actions are ints in "
                    f"[0, {env.n_actions - 1}]"
                )
            s_next = int(env.next_state[s, x, k])
            done = bool(env.terminal[s_next])
            rows.append((h, s, int(x), float(env.reward[s, x, k]), s_next, done))
            if done:
                break
            s = s_next
    hs, ss, xs, ys, zs, ds = (np.array(c) for c in zip(*rows, strict=True))
    return hs, ss, xs, ys.astype(np.float64), zs, ds.astype(bool)


# ------------------------------------------------------------------------------ toy text
class ConfoundedToyText(TabularCMDP):
    """A gymnasium toy-text environment whose slip is the demonstrator's confounder.

    The table ``gymnasium.make(env_id, **kwargs).unwrapped.P`` lists, for each state s and action
    a, slots (p, s', r, done). The confounder U_h ~ Uniform[0, 1) is shared by all actions and
    action a executes the first slot whose cumulative p exceeds U_h — exactly gymnasium's own
    ``categorical_sample`` — so whoever sees U knows where every action lands (on FrozenLake:
    the slip direction). Exact computations cut [0, 1) at all slot breakpoints of s.

    Parameters
    ----------
    env_id : str
        A registered toy-text id with a ``P`` table: ``"FrozenLake-v1"`` (``map_name="4x4"`` or
        ``"8x8"``, ``is_slippery``, ``success_rate`` = the confounding knob),
        ``"FrozenLake8x8-v1"``, ``"CliffWalkingSlippery-v1"``, ``"CliffWalking-v1"``,
        ``"Taxi-v4"`` (``is_rainy=True``).
    horizon : int
        H >= 1 steps per episode (gymnasium's own time limit is not used).
    render_mode : {None, "ansi"}, default=None
        ``"ansi"``: :meth:`render` returns gymnasium's own text grid of the environment (made
        with ``render_mode="ansi"`` on the first call) below the step header; it is not passed
        to the environment the tables are read from.
    **kwargs
        Passed to ``gymnasium.make``.

    Raises
    ------
    TypeError
        If the environment has no tabular ``P`` (e.g. ``"CartPole-v1"``) or no discrete spaces,
        or its constructor refuses a keyword of `kwargs`.
    ValueError
        If `env_id` is not registered, `horizon` < 1, ``fickle_passenger=True`` (Taxi then
        changes destinations outside ``P``), or `render_mode` is neither None nor ``"ansi"``.

    Notes
    -----
    Termination is a property of the state entered: the states some slot enters with
    ``done=True`` (FrozenLake's holes and goal, CliffWalking's goal, Taxi's delivered states).
    T(s, a, s') sums slots with the same s' (gymnasium lists duplicates, gym#1935).
    ``reset(seed)`` / ``step`` consume ``np_random`` as gymnasium does, so a seed gives the same
    trajectory as the gymnasium environment itself.

    Examples
    --------
    >>> env = ConfoundedToyText("FrozenLake-v1", horizon=30, is_slippery=True)
    >>> env.n_states, env.n_actions, env.n_cells
    (16, 4, 3)
    """

    def __init__(self, env_id: str, horizon: int, *, render_mode=None, **kwargs) -> None:
        render_mode = _check_render_mode(render_mode)
        if not isinstance(env_id, str):
            raise TypeError(f"`env_id` must be a str, got {type(env_id).__name__}")
        if kwargs.get("fickle_passenger"):
            raise ValueError(
                "`fickle_passenger=True` changes Taxi's destination outside its P table; "
                "the dynamics would not be tabular"
            )
        try:
            made = gymnasium.make(env_id, **kwargs)
        except gymnasium.error.Error as error:
            raise ValueError(f"`env_id` {env_id!r}: {error}") from None
        except TypeError as error:  # an unknown keyword of the environment's constructor
            raise TypeError(f"`kwargs` {kwargs} for {env_id!r}: {error}") from None
        raw = made.unwrapped
        table = getattr(raw, "P", None)
        isd = getattr(raw, "initial_state_distrib", None)
        if not isinstance(table, dict) or isd is None:
            made.close()
            raise TypeError(
                f"`env_id` {env_id!r} has no tabular transition table `P` with an "
                "`initial_state_distrib`; use a gymnasium toy-text environment such as "
                "FrozenLake-v1, CliffWalkingSlippery-v1 or Taxi-v4"
            )
        if not isinstance(raw.observation_space, spaces.Discrete) or not isinstance(
            raw.action_space, spaces.Discrete
        ):
            raise TypeError(f"`env_id` {env_id!r} must have Discrete spaces")
        self.env_id, self.env_kwargs = env_id, dict(kwargs)
        self._has_text = "ansi" in raw.metadata.get("render_modes", ())
        S, A = int(raw.observation_space.n), int(raw.action_space.n)
        per_state, terminal = [], np.zeros(S, dtype=bool)
        for s in range(S):
            slots = [table[s][a] for a in range(A)]
            cums = [np.cumsum([p for p, *_ in slot]) for slot in slots]
            uppers = np.unique(np.concatenate(cums))
            if uppers[-1] < 1.0:
                uppers = np.append(uppers, 1.0)
            lowers = np.concatenate([[0.0], uppers[:-1]])
            mass = np.minimum(uppers, 1.0) - np.minimum(lowers, 1.0)
            chosen = np.array([_first_true(cum[None, :] > lowers[:, None]) for cum in cums])
            per_state.append((uppers, mass, slots, chosen))
            for slot in slots:
                for p, s_next, _, done in slot:
                    if done and p > 0:
                        terminal[int(s_next)] = True
        K = max(len(u) for u, *_ in per_state)
        u_prob, u_upper = np.zeros((S, K)), np.full((S, K), np.inf)
        next_state = np.zeros((S, A, K), dtype=np.int64)
        reward = np.zeros((S, A, K))
        for s, (uppers, mass, slots, chosen) in enumerate(per_state):
            n = len(uppers)
            u_prob[s, :n], u_upper[s, :n] = mass, uppers
            next_state[s] = s  # padding cells (probability 0) stay put
            for a in range(A):
                for k in range(n):
                    _, s_next, r, _ = slots[a][chosen[a, k]]
                    next_state[s, a, k], reward[s, a, k] = int(s_next), float(r)
        u_prob /= u_prob.sum(axis=1, keepdims=True)
        made.close()
        super().__init__(
            u_prob,
            next_state,
            reward,
            terminal,
            np.asarray(isd, dtype=np.float64),
            horizon,
            u_upper=u_upper,
            render_mode=render_mode,
        )
        self._text_env: Any = None  # gymnasium's environment that draws the grid, on demand

    def _render_grid(self, s: int, a: int | None) -> str | None:
        """gymnasium's own ansi text of the state (None when the environment has none)."""
        if not self._has_text:
            return None
        if self._text_env is None:
            made = gymnasium.make(self.env_id, render_mode="ansi", **self.env_kwargs)
            self._text_env = made.unwrapped
        self._text_env.s, self._text_env.lastaction = s, a  # what its render() reads
        return self._text_env.render()

    def close(self) -> None:
        """Close the environment that draws the text grid, if :meth:`render` made one."""
        if self._text_env is not None:
            self._text_env.close()
        self._text_env = None
        super().close()

    def confounder(self, s: int, k: int, u: float):
        """The demonstrator sees the raw draw U_h in [0, 1) (as gymnasium uses it)."""
        return u

    def confounder_cell(self, s: int, u) -> int:
        """The cell index ``k`` of the draw ``u`` a demonstrator saw at state `s` (``cell``)."""
        return self.cell(s, u)

    def __str__(self) -> str:
        return repr(self)

    def __repr__(self) -> str:
        kw = "".join(f", {k}={v!r}" for k, v in self.env_kwargs.items())
        return f"ConfoundedToyText({self.env_id!r}, horizon={self.horizon}{kw})"


# ----------------------------------------------------------------------------- windy grid
UP, DOWN, LEFT, RIGHT, STILL = range(5)
ACTION_NAMES = ("up", "down", "left", "right", "still")
WIND_NAMES = ("right", "down", "left", "up", "still")
_ACTION_STEP = {UP: (-1, 0), DOWN: (1, 0), LEFT: (0, -1), RIGHT: (0, 1)}
_WIND_STEP = {0: (0, 1), 1: (1, 0), 2: (0, -1), 3: (-1, 0)}


class WindyGrid(TabularCMDP):
    """The paper's windy grid world: a wind U the demonstrator sees pushes the agent.

    Actions up, down, left, right, still; the wind U over (right, down, left, up, still) is redrawn
    every step. Moving in direction d under wind u: no wind → 1 cell; u = d → 2 cells; u = −d →
    stay; sideways → 1 cell along d, then 1 along u. ``still`` never moves. Cells are entered one
    by one: a wall blocks that move, the first lava or goal cell ends the episode. Every step
    costs `step_cost`; entering lava adds `lava_cost`.

    Parameters
    ----------
    layout : str or sequence of str
        Rows of the grid: ``#`` wall, ``.`` free, ``S`` free start cell, ``L`` lava, ``G`` goal.
        Episodes start uniformly on the ``S`` cells, or on every ``.`` cell when there is none.
    wind : sequence of 5 floats
        P(U) over (right, down, left, up, still).
    horizon : int
        H >= 1 agent steps per episode.
    step_cost : float, default=-0.1
        Reward of every step (causal_gym ``WindyMiniGridSCM``).
    lava_cost : float, default=-1.0
        Added when lava is entered (so −1.1 in all).
    render_mode : {None, "ansi"}, default=None
        ``"ansi"``: :meth:`render` returns the layout with the agent's cell as ``A`` below the
        step header.

    Attributes
    ----------
    shape : tuple of int
        (rows, columns); state s is the cell ``divmod(s, columns)``.

    Raises
    ------
    ValueError
        If the layout is not rectangular, uses another character or has no start cell; if the
        wind is not 5 probabilities summing to 1; if `horizon` < 1; if `render_mode` is neither
        None nor ``"ansi"``.
    TypeError
        If `layout` is neither a string nor an iterable of strings.

    Notes
    -----
    Source: causal_gym ``WindyMiniGridSCM`` (move rules, −0.1 per step, −1 more in lava) with the
    ``MiniGridActionRemapWrapper`` actions; presets from the official
    ``causal_rl/algo/reward_shaping/constants.py``. MiniGrid's step limit counts primitive
    moves (windy episodes truncate early there); H here counts agent steps.

    Examples
    --------
    >>> env = WindyGrid.preset("lava_extreme")
    >>> env.n_states, env.n_actions, env.horizon
    (81, 5, 20)
    """

    def __init__(
        self, layout, wind, horizon, step_cost=-0.1, lava_cost=-1.0, *, render_mode=None
    ) -> None:
        if isinstance(layout, str):
            rows = layout.strip().splitlines()
        else:
            try:
                rows = list(layout)
            except TypeError:
                raise TypeError(
                    f"`layout` must be a string or a list of strings, got {type(layout).__name__}"
                ) from None
        if not rows or any(not isinstance(r, str) for r in rows):
            raise ValueError("`layout` must be a non-empty string or sequence of strings")
        rows = [r.strip() for r in rows]
        width = len(rows[0])
        if width == 0 or any(len(r) != width for r in rows):
            raise ValueError(
                f"`layout` must be rectangular, got row lengths {[len(r) for r in rows]}"
            )
        bad = set("".join(rows)) - set("#.SLG")
        if bad:
            raise ValueError(f"`layout` may use only '#', '.', 'S', 'L', 'G'; got {sorted(bad)}")
        wind = check_probabilities(check_array(wind, "wind", shape=(5,)), "wind")
        step_cost = check_real(step_cost, "step_cost")
        lava_cost = check_real(lava_cost, "lava_cost")
        grid = np.array([list(r) for r in rows])
        self.layout, self.shape, self.wind = tuple(rows), grid.shape, wind
        n_rows, n_cols = grid.shape
        S = n_rows * n_cols
        flat = grid.ravel()
        terminal = np.isin(flat, list("#LG"))
        starts = flat == "S"
        if not starts.any():
            starts = flat == "."
        if not starts.any():
            raise ValueError("`layout` has no start cell ('S' or '.')")
        next_state = np.repeat(np.arange(S)[:, None, None], 5, axis=1).repeat(5, axis=2)
        reward = np.zeros((S, 5, 5))
        for s in np.flatnonzero(~terminal):
            for a in range(5):
                for u in range(5):
                    next_state[s, a, u], reward[s, a, u] = self._move(
                        grid, s, a, u, step_cost, lava_cost
                    )
        super().__init__(
            np.broadcast_to(wind, (S, 5)),
            next_state,
            reward,
            terminal,
            starts / starts.sum(),
            horizon,
            render_mode=render_mode,
        )
        self.step_cost, self.lava_cost = step_cost, lava_cost

    def _action_name(self, a: int) -> str:
        return ACTION_NAMES[a]

    def _render_grid(self, s: int, a: int | None) -> str:
        """The layout, one row per line, with the agent's cell as ``A``."""
        rows = [list(row) for row in self.layout]
        row, col = divmod(s, self.shape[1])
        rows[row][col] = "A"
        return "".join("".join(row) + "\n" for row in rows)

    @staticmethod
    def _move(grid, s, a, u, step_cost, lava_cost):
        n_rows, n_cols = grid.shape
        pos = divmod(int(s), n_cols)
        if a == STILL:
            moves = []
        elif u == 4:
            moves = [_ACTION_STEP[a]]
        elif _WIND_STEP[u] == _ACTION_STEP[a]:
            moves = [_ACTION_STEP[a]] * 2
        elif _WIND_STEP[u] == tuple(-c for c in _ACTION_STEP[a]):
            moves = []
        else:
            moves = [_ACTION_STEP[a], _WIND_STEP[u]]
        for dr, dc in moves:
            r, c = pos[0] + dr, pos[1] + dc
            if not (0 <= r < n_rows and 0 <= c < n_cols) or grid[r, c] == "#":
                continue  # a wall blocks this move
            pos = (r, c)
            if grid[r, c] in "LG":
                break  # the first lava or goal cell ends the episode
        cost = step_cost + (lava_cost if grid[pos] == "L" else 0.0)
        return pos[0] * n_cols + pos[1], cost

    @classmethod
    def preset(cls, name: str, horizon: int | None = None, **kwargs) -> WindyGrid:
        """A grid of the paper: ``"empty8"`` (H = 15) or ``"lava_extreme"`` (H = 20).

        Raises
        ------
        ValueError
            If `name` is not a preset (the message lists them).
        """
        check_choice(name, "name", tuple(PRESETS))
        spec = PRESETS[name]
        horizon = spec["horizon"] if horizon is None else horizon
        return cls(spec["layout"], spec["wind"], horizon, **kwargs)

    def state(self, row: int, col: int) -> int:
        """State index of the cell (row, col).

        Raises
        ------
        ValueError
            If the cell is outside the grid.
        """
        row = check_int(row, "row", low=0, high=self.shape[0] - 1)
        col = check_int(col, "col", low=0, high=self.shape[1] - 1)
        return row * self.shape[1] + col

    def render_values(self, values) -> np.ndarray:
        """Reshape an (S,) vector to the (rows, columns) grid.

        Raises
        ------
        ValueError
            If `values` does not have shape (S,).
        """
        S = self.shape[0] * self.shape[1]
        values = check_array(values, "values", shape=(S,), dtype=None, finite=False)
        return values.reshape(self.shape)

    def __str__(self) -> str:
        return repr(self)

    def __repr__(self) -> str:
        return f"WindyGrid(shape={self.shape}, wind={tuple(self.wind)}, horizon={self.horizon})"


def make_named(name: str, horizon: int | None = None) -> TabularCMDP:
    """The environment called `name` in ``presets.NAMED_ENVS`` (the CLI's and the reproduce's).

    Parameters
    ----------
    name : str
        ``"lava_extreme"``, ``"empty8"`` (the paper's windy grids), ``"frozenlake4x4"``,
        ``"frozenlake8x8"``, ``"cliffwalking_slippery"`` or ``"taxi_rainy"``.
    horizon : int, optional
        H; default: the table's (the grids: the official time limits).

    Returns
    -------
    WindyGrid or ConfoundedToyText

    Raises
    ------
    ValueError
        If `name` is unknown or `horizon` < 1.
    """
    check_choice(name, "name", tuple(NAMED_ENVS))
    spec = dict(NAMED_ENVS[name])
    if "preset" in spec:
        return WindyGrid.preset(spec["preset"], horizon=horizon)
    env_id, default = spec.pop("env_id"), spec.pop("horizon")
    return ConfoundedToyText(env_id, default if horizon is None else horizon, **spec)
