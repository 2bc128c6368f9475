"""Potential-based shaping: the shaped MDP's optimal policy and values (Ng et al. 1999)."""

import gymnasium
import numpy as np
import pytest
from causal_pbrs import PotentialShaping, WindyGrid, as_potential, shaped_reward

from .conftest import random_cmdp


def _shaped_backward_induction(env, phi):
    """Backward induction on the shaped MDP, written out from the do-tables."""
    T, R, terminal = env.tables()
    H, S = env.horizon, env.n_states
    V = np.zeros((H + 1, S))
    Q = np.zeros((H, S, env.n_actions))
    for h in range(H - 1, -1, -1):
        phi_next = np.where(terminal, 0.0, phi[h + 1]) if h < H - 1 else np.zeros(S)
        R_shaped = (R + T @ phi_next) - phi[h][:, None]
        Q[h] = R_shaped + T @ np.where(terminal, 0.0, V[h + 1])
        V[h] = Q[h].max(axis=1)
    return V, Q


def test_shaping_keeps_the_optimal_policy_and_shifts_values_by_phi(rng):
    """Spec §5.5: Ṽ* = V* − φ and Q̃* = Q* − φ_h(s) on non-terminal states (1e-12)."""
    for _ in range(100):
        env = random_cmdp(rng)
        H, S = env.horizon, env.n_states
        phi = as_potential(rng.normal(size=(H + 1, S)), H, S)
        V, Q = env.optimal_values()
        V_s, Q_s = _shaped_backward_induction(env, phi)
        live = ~env.terminal
        np.testing.assert_allclose(V_s[:H, live], (V - phi)[:H, live], atol=1e-12)
        np.testing.assert_allclose(Q_s[:, live], (Q - phi[:H, :, None])[:, live], atol=1e-12)
        top2 = np.sort(Q[:, live], axis=-1)[..., -2:] if env.n_actions > 1 else None
        clear = (
            np.ones(Q[:, live].shape[:2], bool)
            if top2 is None
            else top2[..., 1] - top2[..., 0] > 1e-9
        )
        assert (Q_s[:, live].argmax(-1) == Q[:, live].argmax(-1))[clear].all()  # ties aside


def test_shaped_reward_closed_form():
    assert shaped_reward(-0.1, -0.9, -0.8, False, False) == pytest.approx(0.0)
    assert shaped_reward(-0.1, -0.9, -0.8, True, False) == pytest.approx(0.8)
    assert shaped_reward(-0.1, -0.9, -0.8, False, True) == pytest.approx(0.8)
    out = shaped_reward([1.0, 1.0], [0.5, 0.5], [2.0, 2.0], [False, True], [False, False])
    np.testing.assert_allclose(out, [2.5, 0.5])


def test_wrapper_rewards_sum_to_return_minus_initial_potential():
    """Σ r' = Σ y − φ_0(s_0) over a whole episode (the potentials telescope; φ = 0 at the end)."""
    env = WindyGrid.preset("empty8")
    phi = np.random.default_rng(0).normal(size=(env.horizon + 1, env.n_states))
    shaped = PotentialShaping(env, phi)
    moves = np.random.default_rng(1)
    for seed in range(5):
        s0, _ = shaped.reset(seed=seed)
        total, raw, done = 0.0, 0.0, False
        while not done:
            _, r, terminated, truncated, info = shaped.step(int(moves.integers(5)))
            total, raw = total + r, raw + info["reward"]
            done = terminated or truncated
        assert total == pytest.approx(raw - phi[0, s0], abs=1e-12)


def test_wrapper_keeps_the_potential_when_an_inner_time_limit_truncates_before_h():
    """Truncation is not termination: a TimeLimit cut at T < H keeps φ_T(s_T) in the last
    reward, so the episode's shaped return is Σ y + φ_T(s_T) − φ_0(s_0) (documented)."""
    import causal_pbrs  # noqa: F401 (registers the gymnasium ids)

    env = gymnasium.make("causal_pbrs/WindyEmpty8x8-v0", max_episode_steps=3)  # H = 15
    phi = np.random.default_rng(0).normal(size=(16, 64))
    shaped = PotentialShaping(env, phi)
    assert shaped.horizon == 15  # the environment's own H, not the TimeLimit's 3
    s0, _ = shaped.reset(seed=0)
    s, total, raw = s0, 0.0, 0.0
    for h in range(3):
        s_next, r, terminated, truncated, info = shaped.step(4)  # still: never ends
        assert r == (info["reward"] + phi[h + 1, s_next]) - phi[h, s]  # no zero at the cut
        total, raw, s = total + r, raw + info["reward"], s_next
    assert (terminated, truncated) == (False, True)
    assert total == pytest.approx(raw + phi[3, s] - phi[0, s0], abs=1e-12)
    # the documented alternative: the environment's horizon at T zeroes φ after step T
    cut = PotentialShaping(gymnasium.make("causal_pbrs/WindyEmpty8x8-v0", horizon=3), phi[:4])
    s0, _ = cut.reset(seed=0)
    total = raw = 0.0
    for _ in range(3):
        _, r, _, truncated, info = cut.step(4)
        total, raw = total + r, raw + info["reward"]
    assert truncated
    assert total == pytest.approx(raw - phi[0, s0], abs=1e-12)


def test_wrapper_works_with_a_plain_gymnasium_env():
    env = gymnasium.make("FrozenLake-v1")
    shaped = PotentialShaping(env, np.ones(16), horizon=100)
    shaped.reset(seed=0)
    _, r, terminated, _, _ = shaped.step(0)
    assert r == pytest.approx(0.0) or terminated


def test_stationary_potential_is_broadcast_and_zero_after_the_last_step():
    phi = as_potential([1.0, 2.0], 3, 2)
    np.testing.assert_array_equal(phi, [[1, 2], [1, 2], [1, 2], [0, 0]])
