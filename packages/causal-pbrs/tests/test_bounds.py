"""The causal upper bound against V* (exact enumeration), closed forms and the loop reference."""

import dataclasses

import numpy as np
import pytest
from causal_pbrs import (
    Demonstrator,
    OfflineDataset,
    TabularCMDP,
    WindyGrid,
    causal_upper_bound,
    combine,
    manski_bounds,
    monte_carlo_values,
    random_policy,
)
from causal_pbrs.reference import naive_causal_upper_bound

from .conftest import random_behaviour, random_cmdp


def _check_valid(env, phi, V, b, atol=1e-12):
    live = ~env.terminal
    H = env.horizon
    assert (phi[:H, live] >= V[:H, live] - atol).all()
    if b >= 0:  # unvisited terminal states get b + M >= 0 = their worth
        assert (phi >= V - atol).all()


def test_bound_is_valid_on_200_random_cmdps_also_combined(rng):
    """Spec §5.1: exact observational distribution, U-dependent behaviour, terminals."""
    for _ in range(200):
        env = random_cmdp(rng)
        V, _ = env.optimal_values()
        b = float(env.reward.max()) + float(rng.choice([0.0, rng.uniform(0, 0.5)]))
        phis = []
        for _ in range(3):
            dist = env.observational_distribution(random_behaviour(env, rng))
            phi = causal_upper_bound(dist, b)
            _check_valid(env, phi, V, b)
            phis.append(phi)
        _check_valid(env, combine(*phis), V, b)


def test_h1_confounded_bandit_matches_the_closed_form(rng):
    """Spec §5.2: φ = max_x P(x) E[Y|x] + (1 − P(x)) b, exactly."""
    for _ in range(50):
        A, K = int(rng.integers(2, 5)), int(rng.integers(1, 4))
        env = random_cmdp(rng, S=1, A=A, K=K, H=1, terminals=False)
        policy = random_behaviour(env, rng)
        b = float(env.reward.max()) + float(rng.uniform(0, 1))
        p_u = env.u_prob[0]
        pi = policy.probs_table[0, 0]  # (K, A)
        p_x = p_u @ pi
        ey = np.divide(p_u @ (pi * env.reward[0].T), p_x, out=np.zeros(A), where=p_x > 0)
        expected = np.max(p_x * ey + (1 - p_x) * b)
        phi = causal_upper_bound(env.observational_distribution(policy), b)
        assert phi[0, 0] == pytest.approx(expected, abs=1e-12)
        assert phi[1, 0] == 0.0


def test_bound_is_tight_when_u_is_inert_and_behaviour_optimal(rng):
    """Spec §5.3: U moves nothing, the demonstrator always plays the optimal action: φ = V* on
    the visited states (here the optimal action earns b and keeps the episode in states 0-2)."""
    for _ in range(50):
        S, A, K, H = 6, 3, 2, int(rng.integers(1, 5))
        b = 1.0
        best = rng.integers(0, A, size=S)
        next_state = np.repeat(rng.integers(0, S, size=(S, A, 1)), K, axis=2)
        reward = np.repeat(rng.uniform(-1.0, 0.9, size=(S, A, 1)), K, axis=2)
        for s in range(3):  # the good region: the optimal action earns b and stays inside
            next_state[s, best[s]] = rng.integers(0, 3)
            reward[s, best[s]] = b
        terminal = np.zeros(S, dtype=bool)
        terminal[5] = True
        initial = np.array([0.5, 0.3, 0.2, 0, 0, 0])
        env = TabularCMDP(rng.dirichlet(np.ones(K), size=S), next_state, reward, terminal,
                          initial, H)  # fmt: skip
        table = np.broadcast_to(np.eye(A)[best][None, :, None, :], (H, S, K, A))
        dist = env.observational_distribution(Demonstrator(env, table))
        V, _ = env.optimal_values()
        phi = causal_upper_bound(dist, b)
        visited = dist.n_s > 0
        np.testing.assert_allclose(phi[:H][visited], V[:H][visited], rtol=0, atol=1e-12)


def test_combine_never_increases_an_entry_and_stays_valid(rng):
    """Spec §5.4."""
    for _ in range(50):
        env = random_cmdp(rng)
        V, _ = env.optimal_values()
        b = float(env.reward.max())
        phis = [
            causal_upper_bound(env.observational_distribution(random_behaviour(env, rng)), b)
            for _ in range(3)
        ]
        both = combine(*phis)
        for phi in phis:
            assert (both <= phi).all()
        _check_valid(env, both, V, b)


def test_manski_bounds_match_the_closed_form_and_cover_the_do_tables(rng):
    for _ in range(30):
        env = random_cmdp(rng, terminals=False)
        policy = random_behaviour(env, rng)
        dist = env.observational_distribution(policy)
        b = float(env.reward.max())
        T_up, R_up = manski_bounds(dist, b)
        T, R, _ = env.tables()
        for h in range(env.horizon):
            for s in np.flatnonzero(dist.n_s[h] > 0):
                for x in range(env.n_actions):
                    p = dist.n_sa[h, s, x] / dist.n_s[h, s]
                    joint = env.u_prob[s] * policy.probs_table[h, s, :, x]  # P(u, x | s)
                    r_obs = joint @ env.reward[s, x] / p if p > 0 else 0.0
                    assert R_up[h, s, x] == pytest.approx(r_obs * p + b * (1 - p), abs=1e-12)
                    assert R_up[h, s, x] >= R[s, x] - 1e-12
                    assert (T_up[h, s, x] >= T[s, x] - 1e-12).all()


@pytest.mark.parametrize("stationary", [False, True], ids=["time-indexed", "stationary"])
@pytest.mark.parametrize("unobserved", ["optimistic", "skip"])
@pytest.mark.parametrize("case", ["lava", "frozenlake-b1", "cliff-bneg"])
def test_vectorised_bound_equals_the_loop_reference(stationary, unobserved, case):
    from causal_pbrs import ConfoundedToyText, expert

    if case == "lava":
        env, b = WindyGrid.preset("lava_extreme"), 0.0
    elif case == "frozenlake-b1":
        env, b = ConfoundedToyText("FrozenLake-v1", 12), 1.0
    else:
        env, b = ConfoundedToyText("CliffWalkingSlippery-v1", 15), -1.0
    data = env.collect(random_policy(env), 1500, rng=0) + env.collect(expert(env), 1500, rng=1)
    fast = causal_upper_bound(data, b, stationary=stationary, unobserved=unobserved)
    slow = naive_causal_upper_bound(data, b, stationary=stationary, unobserved=unobserved)
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-12)


def test_stationary_bound_upper_bounds_the_first_step_on_a_stationary_behaviour(rng):
    """Pooled counts are exact for a behaviour that ignores h; the sweeps from 0 stop early
    only when values fall (b = 0, negative rewards), so φ >= V*_1."""
    for _ in range(50):
        env = random_cmdp(rng)
        env = TabularCMDP(env.u_prob, env.next_state, -np.abs(env.reward), env.terminal,
                          env.initial, env.horizon)  # fmt: skip
        policy = Demonstrator(env, random_behaviour(env, rng).probs_table[0])  # same at every h
        V, _ = env.optimal_values()
        phi = causal_upper_bound(env.observational_distribution(policy), 0.0, stationary=True)
        assert (phi[0] >= V[0] - 1e-12).all()


def test_skip_mode_can_break_validity_where_the_optimistic_mode_cannot():
    """An optimal action the demonstrator never logs: "skip" ignores it and undershoots V*."""
    # one state, two actions; action 1 is better but never taken; H = 1; rewards <= b = 1
    env = TabularCMDP([[1.0]], [[[0], [0]]], [[[0.0], [1.0]]], [False], [1.0], 1)
    never_1 = Demonstrator(env, [[[[1.0, 0.0]]]])
    dist = env.observational_distribution(never_1)
    V, _ = env.optimal_values()
    assert causal_upper_bound(dist, 1.0, unobserved="skip")[0, 0] == 0.0 < V[0, 0]
    assert causal_upper_bound(dist, 1.0)[0, 0] == 1.0 >= V[0, 0]


def test_monte_carlo_values_equal_a_brute_force_average():
    env = WindyGrid.preset("empty8")
    data = env.collect(random_policy(env), 3000, rng=3)
    rows = list(zip(data.h, data.s, data.y, data.done, strict=True))
    returns, episode = [], []
    for i, (h, s, y, done) in enumerate(rows):
        episode.append((s, h, y))
        last = i + 1 == len(rows) or done or rows[i + 1][0] == 0
        if last:
            G = 0.0
            for s_, h_, y_ in reversed(episode):
                G += y_
                returns.append((s_, h_, G))
            episode = []
    expected = np.zeros(env.n_states)
    for s in range(env.n_states):
        gs = [G for s_, _, G in returns if s_ == s]
        expected[s] = np.mean(gs) if gs else 0.0
    got = monte_carlo_values(data)
    np.testing.assert_allclose(got[0], expected, atol=1e-9)
    assert (got[-1] == 0).all()


def test_negative_reward_max_is_valid_on_live_states_and_caps_an_unseen_terminal_at_b():
    """README "Validity is on the non-terminal states": CliffWalking, whose goal (47) an
    anti-expert never reaches, with b = −1 (every reward is −1 or −100)."""
    from causal_pbrs import ConfoundedToyText, anti_expert

    env = ConfoundedToyText("CliffWalking-v1", horizon=20)
    V, _ = env.optimal_values()
    data = env.collect(anti_expert(env), 5000, rng=0)
    assert not data.counts().terminal[47]  # the log never shows the goal terminal
    phi = causal_upper_bound(data, reward_max=-1.0)
    _check_valid(env, phi, V, -1.0)  # valid on every non-terminal state
    np.testing.assert_array_equal(phi[:20, 47], -1.0)  # the live cap b, below V* = 0 there
    assert (V[:20, 47] == 0.0).all()


def _bandit_log(n, rng):
    """One step, a random demonstrator: action 0 pays 1 w.p. 0.9, action 1 pays 0 (V* = 0.9)."""
    from causal_pbrs.data import Counts

    x = rng.random(n) < 0.5
    y = (rng.random(n) < 0.9) & x
    n_sa = np.array([[[x.sum(), n - x.sum()], [0, 0]]], float)
    y_sum = np.array([[[y.sum(), 0.0], [0, 0]]])
    return Counts(n_s=n_sa.sum(-1), n_sa=n_sa, n_sas=np.zeros((1, 2, 2, 2)), n_end=n_sa.copy(),
                  y_sum=y_sum, terminal=np.array([False, True]), y_min=0.0,
                  y_max=float(y.max()))  # fmt: skip


def test_the_delta_bound_stays_valid_where_the_plug_in_breaks_on_small_logs():
    # issue 31: the plug-in bound 0.5 R̃ + 0.5 falls below V* = 0.9 when R̃ < 0.8, which 20
    # logged steps (about 10 of action 0) give in some seeds; the δ-bound must not
    plug_in, widened = [], []
    for seed in range(50):
        counts = _bandit_log(20, np.random.default_rng(seed))
        plug_in.append(causal_upper_bound(counts, reward_max=1.0)[0, 0])
        widened.append(causal_upper_bound(counts, 1.0, delta=0.05, reward_min=0.0)[0, 0])
    assert sum(v < 0.9 for v in plug_in) >= 1  # the plug-in does break
    assert all(v >= 0.9 for v in widened)


def test_the_delta_bound_is_above_the_plug_in_and_valid_on_frozenlake_logs():
    from causal_pbrs import random_policy
    from causal_pbrs.envs import make_named

    env = make_named("frozenlake4x4")
    V = env.optimal_values()[0]
    live = ~env.terminal
    lo, hi = env.reward_range
    data = env.collect(random_policy(env), 500, rng=0)
    plug_in = causal_upper_bound(data, reward_max=hi)
    widened = causal_upper_bound(data, reward_max=hi, delta=0.05, reward_min=lo)
    assert (widened >= plug_in - 1e-12).all()  # every interval only widens
    assert (widened[:-1][:, live] >= V[:-1][:, live] - 1e-9).all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"delta": 0.0, "reward_min": 0.0}, "delta"),
        ({"delta": 1.5, "reward_min": 0.0}, "delta"),
        ({"delta": 0.05}, "reward_min"),
        ({"delta": 0.05, "reward_min": 0.5}, "reward_min"),
        ({"delta": 0.05, "reward_min": 0.0, "stationary": True}, "time-indexed"),
        ({"delta": 0.05, "reward_min": 0.0, "unobserved": "skip"}, "time-indexed"),
    ],
)
def test_the_delta_bound_rejects_bad_arguments(kwargs, match):
    counts = _bandit_log(20, np.random.default_rng(0))
    with pytest.raises(ValueError, match=match):
        causal_upper_bound(counts, 1.0, **kwargs)


def _l1_ball_max(p, w, r):
    """max w·p̃ over p̃ >= 0, Σ p̃ = 1, ‖p̃ − p‖₁ <= r, as an LP in (p̃, t) with |p̃ − p| <= t."""
    from scipy.optimize import linprog

    m, eye = len(p), np.eye(len(p))
    A_ub = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, m)), np.ones((1, m))]])
    b_ub = np.concatenate([p, -p, [r]])
    A_eq = np.concatenate([np.ones(m), np.zeros(m)])[None]
    cost = np.concatenate([-w, np.zeros(m)])
    lp = linprog(cost, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=[1.0], bounds=(0, None))
    assert lp.status == 0
    return -lp.fun


def test_the_worst_case_continuation_equals_a_linear_program(rng):
    """max p̃·w over {p̃ >= 0, Σ p̃ = 1, ‖p̃ − p‖₁ <= r} solved by scipy's linprog (HiGHS), per
    logged (s, x) of random logs: the sparse greedy transfer must reach the LP optimum."""
    from causal_pbrs.bounds import _worst_case_continuation

    for _ in range(10):
        env = random_cmdp(rng, S=5, A=2, H=3)
        counts = env.collect(random_behaviour(env, rng), 60, rng=rng).counts()
        S, A = env.n_states, env.n_actions
        for h in range(env.horizon):
            v_next = rng.normal(size=S)
            radius = rng.uniform(0.0, 2.5, size=(env.horizon, S, A))
            ours = _worst_case_continuation(counts, h, v_next, radius)
            outcomes = np.concatenate(
                [counts.transition_counts(h), counts.n_end[h][..., None]], axis=-1
            )
            w = np.append(v_next, 0.0)
            for s in range(S):
                for x in range(A):
                    n = counts.n_sa[h, s, x]
                    if n == 0:
                        continue
                    best = _l1_ball_max(outcomes[s, x] / n, w, radius[h, s, x])
                    assert ours[s, x] == pytest.approx(best, abs=1e-9)


def test_taxi_at_the_horizon_of_200_fits_and_the_bound_is_valid():
    """Issue 31: dense (H, S, A, S) counts were 2.4 GB for Taxi at H = 200 (S = 500, A = 6);
    the sparse counts and the bound built from the exact observational distribution stay
    small, and φ >= V* on the live states (V* by backward induction on the do-tables)."""
    import tracemalloc

    from causal_pbrs import ConfoundedToyText

    env = ConfoundedToyText("Taxi-v4", horizon=200, is_rainy=True)
    policy = random_policy(env)
    tracemalloc.start()
    counts = env.observational_distribution(policy)
    phi = causal_upper_bound(counts, reward_max=20.0)
    widened = causal_upper_bound(
        env.collect(policy, 20_000, rng=0), reward_max=20.0, delta=0.05, reward_min=-10.0
    )
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 300 * 2**20  # dense counts alone: 200·500·6·500·8 bytes = 2.4 GB
    V = env.optimal_values()[0]
    _check_valid(env, phi, V, 20.0, atol=1e-9)
    _check_valid(env, widened, V, 20.0, atol=1e-9)


def test_the_delta_bound_is_finite_when_every_reward_is_the_same():
    # trial 31 (H1): reward_min == reward_max gave 0 x inf = NaN on never-logged (h, s, x)
    from causal_pbrs import ConfoundedToyText

    env = ConfoundedToyText("FrozenLake-v1", horizon=10, is_slippery=True)
    data = env.collect(random_policy(env), 300, rng=0)
    logged = data.counts().n_sa > 0
    assert not logged.all()
    b = float(data.y.max())
    phi = causal_upper_bound(data, b, delta=0.05, reward_min=b if b == data.y.min() else 0.0)
    assert np.isfinite(phi).all()
    constant = OfflineDataset(data.h, data.s, data.x, np.zeros(len(data)), data.s_next,
                              data.done, env.n_states, env.n_actions, env.horizon)  # fmt: skip
    phi = causal_upper_bound(constant, 0.0, delta=0.05, reward_min=0.0)
    assert np.isfinite(phi).all()
    assert (phi <= 0).all()


def test_pooled_counts_keep_their_horizon():
    # trial 31 (M1): pooled counts used to be read as a 1-step problem (capped at b)
    env = WindyGrid.preset("lava_extreme")
    data = env.collect(random_policy(env), 3000, rng=0)
    pooled = data.counts().pooled()
    assert pooled.pooled_horizon == 20
    assert data.counts(pooled=True).pooled_horizon == 20
    reference = causal_upper_bound(data, 0.0, stationary=True)
    np.testing.assert_allclose(
        causal_upper_bound(pooled, 0.0, stationary=True), reference, atol=1e-12
    )
    assert reference.shape == (21, 81)
    with pytest.raises(ValueError, match="pooled over 20 steps: pass stationary=True"):
        causal_upper_bound(pooled, 0.0)
    with pytest.raises(
        ValueError, match="cannot add counts pooled over None steps to counts pooled over 20"
    ):
        pooled + dataclasses.replace(pooled, pooled_horizon=None)  # a one-step problem's


def test_reward_min_without_delta_is_refused():
    data = WindyGrid.preset("empty8").collect(random_policy(WindyGrid.preset("empty8")), 100, rng=0)
    with pytest.raises(ValueError, match="`reward_min` is used only with `delta`"):
        causal_upper_bound(data, 0.0, reward_min=-1.0)


def test_combine_refuses_one_list_of_bounds():
    with pytest.raises(TypeError, match=r"combine\(\*bounds\)"):
        combine([np.zeros((2, 3)), np.ones((2, 3))])
