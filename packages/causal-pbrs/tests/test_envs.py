"""Environments: exact tables against gymnasium, a peer's value iteration, brute-force
enumeration, the official notebook's V* and the windy-grid move rules."""

import warnings
from collections import defaultdict

import gymnasium
import numpy as np
import pytest
from causal_pbrs import ConfoundedToyText, TabularCMDP, WindyGrid, random_policy

from .conftest import COUNT_FIELDS, dense, random_behaviour, random_cmdp

TOY_TEXT = [
    ("FrozenLake-v1", {"map_name": "4x4", "is_slippery": True, "success_rate": 1 / 3}),
    ("FrozenLake-v1", {"map_name": "8x8", "is_slippery": True, "success_rate": 0.6}),
    ("CliffWalkingSlippery-v1", {}),
    ("Taxi-v4", {"is_rainy": True}),
]


@pytest.mark.parametrize(("env_id", "kwargs"), TOY_TEXT, ids=lambda v: str(v))
def test_toy_text_do_tables_are_distributions_matching_gymnasium_p(env_id, kwargs):
    """Spec §5.7: T rows sum to 1 and T, R equal the sums over gymnasium's slots."""
    env = ConfoundedToyText(env_id, 20, **kwargs)
    T, R, _ = env.tables()
    np.testing.assert_allclose(T.sum(axis=2), 1.0, atol=1e-12)
    P = gymnasium.make(env_id, **kwargs).unwrapped.P
    for s in range(0, env.n_states, max(1, env.n_states // 40)):
        for a in range(env.n_actions):
            T_ref, R_ref = np.zeros(env.n_states), 0.0
            for p, s_next, r, _ in P[s][a]:  # duplicate rows per action are summed (gym#1935)
                T_ref[s_next] += p
                R_ref += p * r
            np.testing.assert_allclose(T[s, a], T_ref, atol=1e-12)
            assert R[s, a] == pytest.approx(R_ref, abs=1e-12)


def test_frozenlake_optimal_values_match_bettermdptools_value_iteration():
    """Spec §5.7: V* at a large horizon equals the peer's value iteration with gamma = 1."""
    from bettermdptools.algorithms.planner import Planner

    kwargs = {"map_name": "4x4", "is_slippery": True}
    env = ConfoundedToyText("FrozenLake-v1", 3000, **kwargs)
    V, _ = env.optimal_values()
    P = gymnasium.make("FrozenLake-v1", **kwargs).unwrapped.P
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        V_peer, _, _ = Planner(P).value_iteration(
            gamma=1.0, n_iters=100_000, theta=1e-13, dtype=np.float64
        )
    np.testing.assert_allclose(V[0], V_peer, atol=1e-6)


@pytest.mark.parametrize(("env_id", "kwargs"), TOY_TEXT, ids=lambda v: str(v))
def test_gymnasium_and_table_paths_give_identical_trajectories(env_id, kwargs):
    """Spec §5.7: same seed, same actions -> the same states, rewards and terminations."""
    H = 60
    ours = ConfoundedToyText(env_id, H, **kwargs)
    raw = gymnasium.make(env_id, **kwargs).unwrapped
    actions = np.random.default_rng(7)
    for seed in range(5):
        s1, _ = ours.reset(seed=seed)
        s2, _ = raw.reset(seed=seed)
        assert s1 == s2
        for h in range(H):
            a = int(actions.integers(ours.n_actions))
            t1 = ours.step(a)
            s2, r2, done2, _, _ = raw.step(a)
            assert (t1[0], t1[1], t1[2]) == (s2, float(r2), done2), (seed, h)
            if done2 or t1[3]:
                break


def test_step_never_reveals_u_and_truncates_at_the_horizon():
    env = WindyGrid.preset("empty8", horizon=3)
    _, info = env.reset(seed=0)
    assert info == {"h": 0}
    for h in range(3):
        _, _, terminated, truncated, info = env.step(4)  # still: never moves, never ends
        assert set(info) == {"h"}
        assert (terminated, truncated) == (False, h == 2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def _brute_force_distribution(env, policy):
    """Enumerate every logged path (s_0, u_0, x_0, ...) with its probability."""
    stats = defaultdict(float)

    def walk(h, s, mass):
        if h == env.horizon or mass == 0:
            return
        stats["n_s", h, s] += mass
        for k in range(env.n_cells):
            for x in range(env.n_actions):
                m = mass * env.u_prob[s, k] * policy.probs_table[h, s, k, x]
                if m == 0:
                    continue
                s_next, y = env.next_state[s, x, k], env.reward[s, x, k]
                stats["n_sa", h, s, x] += m
                stats["y_sum", h, s, x] += m * y
                if env.terminal[s_next]:
                    stats["n_end", h, s, x] += m
                else:
                    stats["n_sas", h, s, x, s_next] += m
                    walk(h + 1, s_next, m)

    for s in range(env.n_states):
        walk(0, s, env.initial[s])
    return stats


def test_exact_observational_distribution_equals_brute_force_enumeration(rng):
    for _ in range(30):
        env = random_cmdp(rng)
        policy = random_behaviour(env, rng)
        counts = env.observational_distribution(policy)
        stats = _brute_force_distribution(env, policy)
        for name in COUNT_FIELDS:
            expected = np.zeros_like(dense(counts, name))
            for key, value in stats.items():
                if key[0] == name:
                    expected[key[1:]] = value
            np.testing.assert_allclose(dense(counts, name), expected, atol=1e-12)


def test_collected_logs_converge_to_the_exact_distribution():
    env = WindyGrid.preset("lava_extreme")
    policy = random_policy(env)
    data = env.collect(policy, 200_000, rng=5)
    n_episodes = int(data.episode_starts().sum())
    exact = env.observational_distribution(policy)
    freq = data.counts().n_sa / n_episodes
    # binomial noise: < 5 standard deviations everywhere
    sd = np.sqrt(exact.n_sa * (1 - np.minimum(exact.n_sa, 1)) / n_episodes) + 1e-4
    assert (np.abs(freq - exact.n_sa) < 5 * sd).all()
    assert len(data) >= 200_000
    assert data.done[-1] or data.h[-1] == env.horizon - 1  # the last episode is whole


# ---------------------------------------------------------------------------- windy grid
UP, DOWN, LEFT, RIGHT, STILL = range(5)
W_RIGHT, W_DOWN, W_LEFT, W_UP, W_NONE = range(5)
OPEN = ("#######", "#.....#", "#.....#", "#.....#", "#.....#", "#.....#", "#######")


def _move(layout, start, action, wind):
    env = WindyGrid(layout, (0.2,) * 5, horizon=5)
    s = env.state(*start)
    s_next = env.next_state[s, action, wind]
    return divmod(int(s_next), env.shape[1]), float(env.reward[s, action, wind])


@pytest.mark.parametrize(
    ("action", "wind", "end"),
    [
        (RIGHT, W_NONE, (3, 4)),  # no wind: one cell
        (RIGHT, W_RIGHT, (3, 5)),  # wind along the move: two cells
        (RIGHT, W_LEFT, (3, 3)),  # against the wind: stays
        (RIGHT, W_DOWN, (4, 4)),  # sideways: one along d, then one along u
        (UP, W_LEFT, (2, 2)),
        (STILL, W_DOWN, (3, 3)),  # `still` never moves
        (STILL, W_NONE, (3, 3)),
    ],
    ids=["none", "same", "opposite", "sideways", "sideways-up-left", "still-action", "still-both"],
)
def test_windy_move_rules(action, wind, end):
    """Spec §5.9: one case per (action, wind) class."""
    assert _move(OPEN, (3, 3), action, wind) == (end, -0.1)


def test_walls_block_moves_one_by_one():
    layout = ("#####", "#...#", "#...#", "#####")
    assert _move(layout, (1, 3), RIGHT, W_RIGHT)[0] == (1, 3)  # both moves into the wall
    assert _move(layout, (1, 3), RIGHT, W_DOWN)[0] == (2, 3)  # blocked, then the wind's move
    assert _move(layout, (1, 2), DOWN, W_DOWN)[0] == (2, 2)  # second move blocked


def test_the_first_lava_or_goal_cell_ends_the_episode():
    layout = ("#######", "#..LG.#", "#.....#", "#######")
    assert _move(layout, (1, 2), RIGHT, W_RIGHT) == ((1, 3), pytest.approx(-1.1))  # stops in lava
    assert _move(layout, (1, 3 - 1), RIGHT, W_DOWN) == ((1, 3), pytest.approx(-1.1))
    assert _move(("#####", "#.G.#", "#####"), (1, 1), RIGHT, W_RIGHT) == ((1, 2), -0.1)  # goal
    env = WindyGrid(layout, (0.2,) * 5, horizon=5)
    assert env.terminal[env.state(1, 3)]
    assert env.terminal[env.state(1, 4)]


# The official notebook's printed V* of Custom-LavaCrossing-extreme-v0 (rows y, columns x).
NOTEBOOK_V = np.array(
    [
        [0, 0, 0, 0, 0, 0, 0, 0, 0],
        [0, -0.954, 0, 0, 0, 0, 0, -0.374, 0],
        [0, -0.856, -0.853, -0.844, -0.814, -0.712, -0.374, -0.322, 0],
        [0, -0.854, 0, 0, 0, 0, 0, -0.254, 0],
        [0, -0.809, 0, 0, 0, 0, 0, -0.209, 0],
        [0, -0.73, 0, 0, 0, 0, 0, -0.13, 0],
        [0, -0.7, 0, 0, 0, 0, 0, -0.1, 0],
        [0, -0.6, -0.5, -0.4, -0.3, -0.2, -0.1, 0, 0],
        [0, 0, 0, 0, 0, 0, 0, 0, 0],
    ]
)
COIN_DEPENDENT = [(1, 1), (2, 1), (2, 2), (2, 3), (2, 4), (2, 5)]  # (row, col)


def test_lava_extreme_optimal_values_match_the_official_notebook():
    """Every cell whose optimal route avoids the coin row matches the printed V* (3 decimals)."""
    env = WindyGrid.preset("lava_extreme", horizon=400)
    V = env.optimal_values()[0][0].reshape(env.shape)
    mask = np.ones(env.shape, dtype=bool)
    for cell in COIN_DEPENDENT:
        mask[cell] = False
    np.testing.assert_allclose(V[mask], NOTEBOOK_V[mask], atol=5e-4 + 1e-12)


def test_notebook_values_on_the_coin_row_follow_from_plus_02_coin_rewards():
    """An independent re-implementation of the moves in which each coin cell entered pays
    +0.2 (the notebook's causal_gym; coins always present during value iteration) reproduces
    the whole printed table: the coin row is the only difference."""
    grid = [list(r) for r in WindyGrid.preset("lava_extreme").layout]
    coins = {(2, c) for c in range(2, 7)}
    steps = {UP: (-1, 0), DOWN: (1, 0), LEFT: (0, -1), RIGHT: (0, 1)}
    winds = {W_RIGHT: (0, 1), W_DOWN: (1, 0), W_LEFT: (0, -1), W_UP: (-1, 0)}
    wind_p = {W_DOWN: 0.7, W_NONE: 0.3}

    def outcome(pos, a, w):
        if a == STILL:
            return pos, -0.1, False
        d = steps[a]
        if w == W_NONE:
            path = [d]
        elif winds[w] == d:
            path = [d, d]
        elif winds[w] == (-d[0], -d[1]):
            path = []
        else:
            path = [d, winds[w]]
        bonus = 0.0
        for dr, dc in path:
            nxt = (pos[0] + dr, pos[1] + dc)
            if grid[nxt[0]][nxt[1]] == "#":
                continue
            pos = nxt
            if grid[pos[0]][pos[1]] in "LG":  # coins picked up on the way still count
                return pos, bonus - 0.1 - (1.0 if grid[pos[0]][pos[1]] == "L" else 0.0), True
            bonus += 0.2 if pos in coins else 0.0
        return pos, -0.1 + bonus, False

    V = np.zeros((9, 9))
    for _ in range(2000):
        new = np.zeros_like(V)
        for r in range(9):
            for c in range(9):
                if grid[r][c] in "#LG":
                    continue
                q = []
                for a in range(5):
                    total = 0.0
                    for w, p in wind_p.items():
                        nxt, y, done = outcome((r, c), a, w)
                        total += p * (y + (0.0 if done else V[nxt]))
                    q.append(total)
                new[r, c] = max(q)
        if np.abs(new - V).max() < 1e-12:
            break
        V = new
    np.testing.assert_allclose(V, NOTEBOOK_V, atol=5e-4 + 1e-12)


def test_windy_presets_and_sizes():
    lava = WindyGrid.preset("lava_extreme")
    assert (lava.n_states, lava.n_actions, lava.horizon) == (81, 5, 20)
    np.testing.assert_allclose(lava.wind, [0, 0.7, 0, 0, 0.3])
    starts = np.flatnonzero(lava.initial)
    assert len(starts) == 18
    np.testing.assert_allclose(lava.initial[starts], 1 / 18)
    empty = WindyGrid.preset("empty8")
    assert empty.horizon == 15
    assert empty.initial.max() == 1 / 35  # 36 interior cells, one is the goal
    assert lava.reward_range == pytest.approx((-1.1, -0.1))


def test_tabular_cmdp_doc_example_value():
    env = TabularCMDP(
        u_prob=[[0.5, 0.5], [1.0, 0.0]],
        next_state=[[[0, 0], [1, 0]], [[1, 1], [1, 1]]],
        reward=[[[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]],
        terminal=[False, True],
        initial=[1.0, 0.0],
        horizon=2,
    )
    V, Q = env.optimal_values()
    # h = 0: action 1 reaches the goal (reward 1) w.p. 1/2, else stays; then h = 1 again 1/2
    assert V[0, 0] == pytest.approx(0.5 + 0.5 * 0.5)
    assert Q[1, 0, 0] == 0.0
    assert Q[1, 0, 1] == 0.5
