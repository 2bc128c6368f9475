"""Potential-based reward shaping (PBRS) with a time-indexed potential.

Ng, Harada & Russell (1999): adding F = φ_{h+1}(s') − φ_h(s) to every reward leaves the optimal
policies unchanged, and the shaped optimal values are Ṽ*_h = V*_h − φ_h. Li, Zhang & Bareinboim
(ICML 2025, Sec. 4) take φ = the causal upper bound, so that Ṽ* <= 0 and an agent initialised at
0 is optimistic. The potential of the state after the episode ends is 0 (a terminal state, or the
step h = H; imitation#323 and #184 are bugs of non-zero terminal potentials).

Axis letters: H horizon, S states.
"""

from __future__ import annotations

import gymnasium
import numpy as np

from icml25_core import check_array

from ._validation import check_int

__all__ = ["PotentialShaping", "as_potential", "shaped_reward"]


def as_potential(phi, horizon: int, n_states: int, name: str = "potential") -> np.ndarray:
    """A potential as an (H + 1, S) float64 table with row H = 0.

    Parameters
    ----------
    phi : array_like of shape (S,), (H, S) or (H + 1, S)
        A stationary potential φ(s) (used at every step), or a time-indexed one. Row H of an
        (H + 1, S) table is ignored: after the last step the potential is 0.
    horizon, n_states : int
    name : str
        Argument name used in error messages.

    Raises
    ------
    ValueError
        If the shape fits none of the above, a value is NaN or infinite, or `horizon` or
        `n_states` is < 1.
    TypeError
        If `horizon` or `n_states` is not an int.
    """
    H = check_int(horizon, "horizon", low=1)
    S = check_int(n_states, "n_states", low=1)
    arr = check_array(phi, name, ndim=(1, 2), cast=np.float64)
    out = np.zeros((H + 1, S))
    if arr.shape == (S,):
        out[:H] = arr
    elif arr.shape in ((H, S), (H + 1, S)):
        out[:H] = arr[:H]
    else:
        raise ValueError(
            f"`{name}` must have shape ({S},), ({H}, {S}) or ({H + 1}, {S}), got {arr.shape}"
        )
    return out


def shaped_reward(y, phi_s, phi_next, terminated, last):
    """PBRS reward r' = y + φ_{h+1}(s') − φ_h(s), with φ_{h+1}(s') := 0 at the episode's end.

    Parameters
    ----------
    y : float or array_like
        Environment reward.
    phi_s : float or array_like
        φ_h(s).
    phi_next : float or array_like
        φ_{h+1}(s').
    terminated : bool or array_like of bool
        The step entered a terminal state.
    last : bool or array_like of bool
        The step was the H-th (h = H − 1, 0-based).

    Returns
    -------
    float or ndarray
        Broadcast over the inputs.

    Raises
    ------
    ValueError
        If a value is NaN or infinite, a flag is not 0/1, or the shapes do not broadcast.
    TypeError
        If a value is not numeric (a string such as ``"no"`` for a flag is refused rather than
        read as True).

    Notes
    -----
    Source: Ng, Harada & Russell (1999), Thm. 1; the paper's Sec. 4 with γ = 1. Computed as
    ``(y + φ_next) − φ_s``, the order the agents use.

    Examples
    --------
    >>> shaped_reward(-0.1, -0.9, -0.8, terminated=False, last=False)
    0.0
    >>> shaped_reward(-0.1, -0.9, -0.8, terminated=True, last=False)  # doctest: +ELLIPSIS
    0.8...
    """
    values = [
        check_array(v, n, ndim=None)
        for v, n in ((y, "y"), (phi_s, "phi_s"), (phi_next, "phi_next"))
    ]
    flags = []
    for v, n in ((terminated, "terminated"), (last, "last")):
        flag = check_array(v, n, ndim=None)
        if flag.dtype != bool and not np.isin(flag, (0, 1)).all():
            raise ValueError(f"`{n}` must be boolean (or 0/1)")
        flags.append(flag.astype(bool))
    arrays = {"y": values[0], "phi_s": values[1], "phi_next": values[2]}
    arrays.update(terminated=flags[0], last=flags[1])
    try:
        np.broadcast_shapes(*(a.shape for a in arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{n}: {a.shape}" for n, a in arrays.items())
        raise ValueError(
            f"`y`, `phi_s`, `phi_next`, `terminated`, `last` must broadcast; got {shapes}"
        ) from None
    ends = np.logical_or(flags[0], flags[1])
    out = (values[0] + np.where(ends, 0.0, values[2])) - values[1]
    return float(out) if np.ndim(out) == 0 else out


class PotentialShaping(gymnasium.Wrapper):
    """A gymnasium wrapper whose rewards are the PBRS rewards of a potential φ.

    Parameters
    ----------
    env : gymnasium.Env
        With a ``Discrete`` observation space; its episodes last at most `horizon` steps.
    phi : array_like of shape (S,), (H, S) or (H + 1, S)
        The potential (see :func:`as_potential`).
    horizon : int, optional
        H; defaults to ``env.horizon`` (the environments of this library have one).

    Notes
    -----
    ``info["reward"]`` keeps the environment's own reward. Do not also give the same potential
    to :class:`causal_pbrs.QUCB`, which shapes internally: wrap the environment for agents
    that know nothing of φ.

    Truncation is not termination. φ_{h+1}(s') is set to 0 only when the step terminates or
    is the `horizon`-th. When an inner ``TimeLimit`` (``gymnasium.make(...,
    max_episode_steps=T)``) truncates at T < H, the last step's reward keeps φ_T(s_T), so the
    shaped return of that episode is Σ_h y_h + φ_T(s_T) − φ_0(s_0). That is PBRS of the
    H-step problem, right for learners that bootstrap V(s') on truncation (gymnasium's
    ``terminated`` / ``truncated`` convention). If T is the real horizon of your task, build the
    environment with ``horizon=T`` instead (``gymnasium.make(id, horizon=T)``): the potential is
    then 0 after step T and optimal policies stay unchanged.

    Raises
    ------
    TypeError
        If `env` is not a gymnasium environment, its observation space is not ``Discrete``, or
        `horizon` is not an int.
    ValueError
        If `phi` has the wrong shape, `horizon` is missing or < 1, or shorter than the
        environment's own ``horizon`` (its episodes would outlast the potential).
    RuntimeError
        From :meth:`step`, if an episode runs past `horizon` steps.

    Examples
    --------
    >>> from causal_pbrs import WindyGrid
    >>> env = WindyGrid.preset("empty8")
    >>> shaped = PotentialShaping(env, np.zeros(64))
    >>> s, info = shaped.reset(seed=0)
    """

    def __init__(self, env, phi, horizon: int | None = None) -> None:
        if not isinstance(env, gymnasium.Env):
            raise TypeError(f"`env` must be a gymnasium.Env, got {type(env).__name__}")
        super().__init__(env)
        if not isinstance(env.observation_space, gymnasium.spaces.Discrete):
            raise TypeError("`env` must have a Discrete observation space")
        own = getattr(env.unwrapped, "horizon", None)
        horizon = own if horizon is None else horizon
        if horizon is None:
            raise ValueError("`horizon` is required for an environment without `.horizon`")
        self.horizon = check_int(horizon, "horizon", low=1)
        if own is not None and self.horizon < own:
            raise ValueError(
                f"`horizon` = {self.horizon} is shorter than the environment's horizon {own}: "
                "its episodes would outlast the potential"
            )
        self.phi = as_potential(phi, self.horizon, int(env.observation_space.n), "phi")
        self._s: int | None = None
        self._h = 0

    def reset(self, **kwargs):
        """Reset the wrapped environment and the step counter; returns ``(s, info)`` as it does."""
        s, info = self.env.reset(**kwargs)
        self._s, self._h = int(s), 0
        return s, info

    def step(self, action):
        """Step the wrapped environment; the reward becomes ``y + Φ_{h+1}(s') - Φ_h(s)``.

        Φ of the state after a terminal or the last step (h + 1 = horizon) is 0, so shaping leaves
        every policy's return unchanged up to ``-Φ_0(s_0)`` (Ng et al. 1999; paper Sec. 3). The raw
        reward stays in ``info["reward"]``. A step that an inner ``TimeLimit`` truncates
        earlier keeps ``Φ_{h+1}(s')`` (see the class's Notes).

        Raises
        ------
        RuntimeError
            Before ``reset``, or past the given horizon.
        """
        if self._s is None:
            raise RuntimeError("call reset() before step()")
        h = self._h
        if h >= self.horizon:
            raise RuntimeError(
                f"the episode has run past `horizon` = {self.horizon} steps without ending: "
                "give the wrapper the environment's real horizon"
            )
        s_next, y, terminated, truncated, info = self.env.step(action)
        last = h + 1 >= self.horizon
        phi_next = 0.0 if (terminated or last) else self.phi[h + 1, int(s_next)]
        reward = (float(y) + phi_next) - self.phi[h, self._s]
        self._s, self._h = int(s_next), h + 1
        return s_next, reward, terminated, truncated, {**info, "reward": y}
