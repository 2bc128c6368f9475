"""Property-based tests of the causal bound, its combination, V* and potential-based shaping."""

import numpy as np
from causal_pbrs import causal_upper_bound, combine, shaped_reward
from causal_pbrs.reference import naive_causal_upper_bound
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import random_behaviour, random_cmdp

seeds = st.integers(0, 2**32 - 1)
slack = st.floats(0.0, 1.0)


def _env_and_distribution(seed):
    rng = np.random.default_rng(seed)
    env = random_cmdp(rng)
    return env, env.observational_distribution(random_behaviour(env, rng)), rng


@given(seeds, slack)
def test_the_bound_is_above_v_star_on_every_live_state(seed, extra):
    """φ_h(s) >= V*_h(s) for every reward bound b >= max reward (the paper's Thm. 1, on the
    exact observational distribution of a U-dependent demonstrator)."""
    env, dist, _ = _env_and_distribution(seed)
    b = float(env.reward.max()) + extra
    V, _ = env.optimal_values()
    phi = causal_upper_bound(dist, b)
    live = ~env.terminal
    assert (phi[: env.horizon, live] >= V[: env.horizon, live] - 1e-12).all()


@given(seeds, slack, slack)
def test_the_bound_grows_with_the_reward_bound(seed, extra, more):
    """A looser reward bound b' >= b can only loosen the bound: φ(b') >= φ(b) (every backup
    is monotone in b)."""
    env, dist, _ = _env_and_distribution(seed)
    b = float(env.reward.max()) + extra
    assert (causal_upper_bound(dist, b + more) >= causal_upper_bound(dist, b) - 1e-12).all()


@given(seeds, slack)
def test_combining_bounds_is_their_minimum_and_stays_valid(seed, extra):
    """combine(φ1, φ2) = min(φ1, φ2) elementwise, symmetric, idempotent, and still >= V*
    (each bound is valid, so their minimum is; paper Sec. 3)."""
    rng = np.random.default_rng(seed)
    env = random_cmdp(rng)
    b = float(env.reward.max()) + extra
    phis = [
        causal_upper_bound(env.observational_distribution(random_behaviour(env, rng)), b)
        for _ in range(2)
    ]
    both = combine(*phis)
    np.testing.assert_array_equal(both, np.minimum(*phis))
    np.testing.assert_array_equal(combine(*phis[::-1]), both)
    np.testing.assert_array_equal(combine(both, both), both)
    V, _ = env.optimal_values()
    live = ~env.terminal
    assert (both[: env.horizon, live] >= V[: env.horizon, live] - 1e-12).all()


@given(seeds)
def test_v_star_dominates_every_markov_policy_of_the_learner(seed):
    """V*_h(s) >= V^π_h(s) for any π_h(a | s) that does not see U (backward induction is
    optimal over the learner's policies; a demonstrator that sees U may do better)."""
    rng = np.random.default_rng(seed)
    env = random_cmdp(rng)
    policy = rng.dirichlet(np.ones(env.n_actions), size=(env.horizon, env.n_states))
    V, _ = env.optimal_values()
    assert (env.values_of(policy) - 1e-12 <= V).all()


@given(seeds, st.booleans())
@settings(max_examples=25)
def test_the_vectorised_bound_equals_the_loop_reference_on_logs(seed, stationary):
    """The vectorised counts and backups equal the dictionary-and-loop reference on sampled
    logs, per-step and stationary (official ``calculate_values.py`` semantics)."""
    env, _, rng = _env_and_distribution(seed)
    data = env.collect(random_behaviour(env, rng), 40, rng)
    b = float(env.reward.max()) + 0.5
    np.testing.assert_allclose(
        causal_upper_bound(data, b, stationary=stationary),
        naive_causal_upper_bound(data, b, stationary=stationary),
        rtol=0,
        atol=1e-12,
    )


@given(st.data(), st.integers(1, 6))
def test_shaped_returns_telescope_to_the_return_minus_the_start_potential(data, horizon):
    """Σ_h (y_h + φ_{h+1}(s_{h+1}) − φ_h(s_h)) = Σ_h y_h − φ_0(s_0) when φ after the last step
    is 0 (Ng et al. 1999, Thm. 1 with γ = 1): shaping shifts every return by the same amount."""
    floats = st.floats(-10, 10)
    length = data.draw(st.integers(1, horizon))
    y = np.array(data.draw(st.lists(floats, min_size=length, max_size=length)))
    phi = np.array(data.draw(st.lists(floats, min_size=length + 1, max_size=length + 1)))
    terminated = [False] * (length - 1) + [length < horizon]
    last = [False] * (length - 1) + [length == horizon]
    shaped = [
        shaped_reward(y[h], phi[h], phi[h + 1], terminated[h], last[h]) for h in range(length)
    ]
    np.testing.assert_allclose(np.sum(shaped), np.sum(y) - phi[0], rtol=0, atol=1e-9)
