"""Demonstrators who see U: confounding is real, the causal bound is not fooled."""

import itertools

import numpy as np
import pytest
from causal_pbrs import (
    ConfoundedToyText,
    anti_expert,
    causal_upper_bound,
    combine,
    exact_values,
    expert,
    random_policy,
)

from .conftest import random_cmdp


def test_confounding_is_real_on_slippery_frozenlake():
    """Spec §5.8: the anti-expert's values fall below V* somewhere and the expert's (who sees
    the slip) rise above it; the causal bound from the exact distributions never falls below."""
    env = ConfoundedToyText("FrozenLake-v1", 30, is_slippery=True, success_rate=1 / 3)
    V, _ = env.optimal_values()
    demos = (expert(env), anti_expert(env), random_policy(env))
    anti = exact_values(env, demos[1])
    sees_u = exact_values(env, demos[0])
    H = env.horizon
    assert (anti[:H] < V[:H] - 1e-6).any()
    assert (sees_u[:H] > V[:H] + 1e-6).any()  # behavioural values are not upper bounds either
    phi = combine(*(causal_upper_bound(env.observational_distribution(d), 1.0) for d in demos))
    assert (phi >= V - 1e-12).all()


def test_expert_is_optimal_in_the_u_revealed_mdp_by_brute_force(rng):
    """With ε = 0 the expert's value equals the best of all U-revealed deterministic policies
    π(h, s, u), found by enumeration on tiny CMDPs; the anti-expert attains the worst."""
    for _ in range(10):
        env = random_cmdp(rng, S=2, A=2, K=2, H=2)
        best_v, worst_v = (
            exact_values(env, expert(env, 0.0)),
            exact_values(env, anti_expert(env, 0.0)),
        )
        slots = env.horizon * env.n_states * env.n_cells
        values = []
        for choice in itertools.product(range(env.n_actions), repeat=slots):
            table = np.eye(env.n_actions)[
                np.array(choice).reshape(env.horizon, env.n_states, env.n_cells)
            ]
            from causal_pbrs import Demonstrator

            values.append(exact_values(env, Demonstrator(env, table))[0])
        values = np.array(values)
        np.testing.assert_allclose(best_v[0], values.max(axis=0), atol=1e-12)
        np.testing.assert_allclose(worst_v[0], values.min(axis=0), atol=1e-12)


def test_demonstrator_samples_follow_its_table():
    env = ConfoundedToyText("FrozenLake-v1", 5)
    pol = expert(env, epsilon=0.5)
    rng = np.random.default_rng(0)
    draws = [pol(0, 0, 0.1, rng) for _ in range(4000)]
    probs = pol.probs(0, 0, 0.1)
    freq = np.bincount(draws, minlength=4) / 4000
    np.testing.assert_allclose(freq, probs, atol=0.03)
    assert probs.max() == pytest.approx(0.5 + 0.5 / 4)
