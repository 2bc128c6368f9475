"""Exact regret: lockstep batches equal single runs; episode regret equals exact evaluation."""

import numpy as np
import pytest
from causal_pbrs import (
    QUCB,
    ConfoundedToyText,
    WindyGrid,
    anti_expert,
    causal_upper_bound,
    combine,
    expert,
    random_policy,
    regret,
)

from .conftest import random_cmdp


def _configs(env):
    S, H = env.n_states, env.horizon
    phi = np.random.default_rng(0).normal(size=(H + 1, S))
    return [
        {},
        {"potential": phi},
        {"homogeneous": True, "precision": 3},
        {"potential": phi, "homogeneous": True, "clip": "official", "precision": 2},
        {"potential": phi[0], "bonus_range": "range", "reward_min": env.reward_range[0]},
    ]


ENVS = {
    "lava": lambda: WindyGrid.preset("lava_extreme"),
    "frozenlake": lambda: ConfoundedToyText("FrozenLake-v1", 30),
    "cliff": lambda: ConfoundedToyText("CliffWalkingSlippery-v1", 40),
    "taxi-rainy": lambda: ConfoundedToyText("Taxi-v4", 25, is_rainy=True),
    "random-cmdp": lambda: random_cmdp(np.random.default_rng(2), S=6, A=3, K=3, H=4),
}


@pytest.mark.parametrize("name", list(ENVS))
def test_lockstep_batch_equals_single_runs(name):
    env = ENVS[name]()
    S, A, H, K = env.n_states, env.n_actions, env.horizon, 80
    configs = _configs(env)
    singles = [QUCB(S, A, H, K, **c) for c in configs]
    outs = [regret.run(env, a, K, seed=i) for i, a in enumerate(singles)]
    batch = [QUCB(S, A, H, K, **c) for c in configs]
    outs_b = regret.run_batch(env, batch, range(len(configs)), K)
    for one, two, a1, a2 in zip(outs, outs_b, singles, batch, strict=True):
        for key in one:
            np.testing.assert_array_equal(one[key], two[key])
        np.testing.assert_array_equal(a1.Q, a2.Q)
        np.testing.assert_array_equal(a1.N, a2.N)
        np.testing.assert_array_equal(a1.V[:, ~env.terminal], a2.V[:, ~env.terminal])


@pytest.mark.parametrize("homogeneous", [False, True])
def test_episode_regret_is_the_exact_value_gap_of_the_greedy_policy(homogeneous):
    env = ConfoundedToyText("FrozenLake-v1", 20)
    S, A, H = env.n_states, env.n_actions, env.horizon
    agent = QUCB(S, A, H, 5, homogeneous=homogeneous)
    agent._Q[...] = np.random.default_rng(1).normal(size=agent._Q.shape)
    policy = np.eye(A)[agent.Q.argmax(-1)]  # (H, S, A), independent evaluation below
    V_pi = env.values_of(policy)
    V_star, _ = env.optimal_values()
    out = regret.run(env, agent, 1, seed=4)
    s0 = 0  # FrozenLake starts at 0
    assert out["episode_regret"][0] == pytest.approx(V_star[0, s0] - V_pi[0, s0], abs=1e-12)


def test_random_ties_are_evaluated_as_the_uniform_mixture():
    env = ConfoundedToyText("FrozenLake-v1", 10)
    agent = QUCB(16, 4, 10, 3, random_state=0)  # all Q equal: every action tied
    V_pi = env.values_of(np.full((10, 16, 4), 0.25))
    out = regret.run(env, agent, 1, seed=0)
    assert out["episode_regret"][0] == pytest.approx(env.optimal_values()[0][0, 0] - V_pi[0, 0])


def test_gap_regret_averages_to_the_episode_regret_for_a_fixed_policy(monkeypatch):
    """Performance difference: E[Σ_h V*_h(s_h) − Q*_h(s_h, a_h)] = V*_1(s_1) − V^π_1(s_1).
    With updates switched off the greedy policy stays fixed; 4000 episodes, 5 standard errors."""
    env = WindyGrid.preset("empty8")
    agent = QUCB(env.n_states, 5, env.horizon, 4000)
    agent._Q[...] = np.random.default_rng(0).normal(size=agent._Q.shape)
    monkeypatch.setattr(agent, "_update", lambda *args: None)
    out = regret.run(env, agent, 4000, seed=1)
    gap, episode = out["gap_regret"], out["episode_regret"]
    assert abs(gap.mean() - episode.mean()) < 5 * gap.std() / np.sqrt(len(gap))
    assert np.unique(episode).size > 1  # several start states


@pytest.mark.parametrize("name", ["empty8", "lava_extreme"])
@pytest.mark.parametrize("official", [False, True], ids=["paper", "official"])
def test_regret_ordering_on_small_grids(name, official):
    """The exact potential V* beats the causal bound, which beats no shaping."""
    env = WindyGrid.preset(name)
    S, A, H, K = env.n_states, env.n_actions, env.horizon, 500
    V, _ = env.optimal_values()
    demos = (expert(env), anti_expert(env), random_policy(env))
    phi = combine(*(causal_upper_bound(env.observational_distribution(d), 0.0) for d in demos))
    opts = {"homogeneous": True, "clip": "official", "precision": 3} if official else {}
    agents = [QUCB(S, A, H, K, potential=p, **opts) for p in (None, phi, V)]
    vanilla, causal, perfect = (
        r["episode_regret"].sum() for r in regret.run_batch(env, agents, [0] * 3, K)
    )
    assert perfect < causal < vanilla
