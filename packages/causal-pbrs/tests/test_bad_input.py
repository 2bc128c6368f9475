"""Every public entry point rejects bad input with an error that names the argument."""

import numpy as np
import pytest
from causal_pbrs import (
    QUCB,
    ConfoundedToyText,
    Counts,
    Demonstrator,
    OfflineDataset,
    PotentialShaping,
    TabularCMDP,
    WindyGrid,
    as_potential,
    causal_upper_bound,
    combine,
    expert,
    manski_bounds,
    monte_carlo_values,
    random_policy,
    regret,
    shaped_reward,
)

GOOD = {
    "h": [0, 1],
    "s": [0, 1],
    "x": [1, 0],
    "y": [-0.1, -1.1],
    "s_next": [1, 2],
    "done": [False, True],
    "n_states": 3,
    "n_actions": 2,
    "horizon": 2,
}


def _data(**changes):
    return OfflineDataset(**{**GOOD, **changes})


@pytest.mark.parametrize(
    ("changes", "error", "match"),
    [
        ({"h": [0.0, 1.5]}, ValueError, "`h` must hold whole numbers, got 1.5"),
        ({"s": [True, False]}, TypeError, "`s` must be integer"),
        ({"x": ["a", "b"]}, TypeError, "`x` must be numeric"),
        ({"s": [0, 3]}, ValueError, r"`s` must lie in \[0, 2\], got 3"),
        ({"x": [2, 0]}, ValueError, r"`x` must lie in \[0, 1\], got 2"),
        ({"s_next": [-1, 2]}, ValueError, "`s_next` must lie"),
        ({"h": [0, 2]}, ValueError, "`h` must lie"),
        ({"y": [np.nan, 0.0]}, ValueError, "`y` contains NaN"),
        ({"y": [np.inf, 0.0]}, ValueError, "`y` contains NaN or infinity"),
        ({"done": [2, 0]}, ValueError, "`done` must be boolean"),
        ({"x": [1]}, ValueError, "must have the same length"),
        ({k: [] for k in ("h", "s", "x", "y", "s_next", "done")}, ValueError, "`h` is empty"),
        ({"n_states": 0}, ValueError, "`n_states` must be >= 1"),
        ({"horizon": 0}, ValueError, "`horizon` must be >= 1"),
        ({"n_actions": 1.5}, TypeError, "`n_actions` must be an int"),
        ({"s": [[0, 1], [1, 0]]}, ValueError, "`s` must be 1-D"),
    ],
)
def test_offline_dataset_rejects(changes, error, match):
    with pytest.raises(error, match=match):
        _data(**changes)


def test_offline_dataset_load_and_merge_reject(tmp_path):
    with pytest.raises(FileNotFoundError):
        OfflineDataset.load(tmp_path / "missing.npz")
    np.savez(tmp_path / "part.npz", h=[0], s=[0])
    with pytest.raises(ValueError, match="missing"):
        OfflineDataset.load(tmp_path / "part.npz")
    with pytest.raises(ValueError, match="cannot merge"):
        _data() + _data(n_states=4)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((_data(), -0.5), {}, ValueError, "`reward_max` = -0.5 is below a reward"),
        ((_data(), np.nan), {}, ValueError, "`reward_max` must not be NaN"),
        ((_data(), "0"), {}, TypeError, "`reward_max` must be a real number"),
        (([1, 2], 0.0), {}, TypeError, "`data` must be an OfflineDataset or Counts"),
        ((_data(), 0.0), {"unobserved": "pessimistic"}, ValueError, "`unobserved` must be one"),
        ((_data(), 0.0), {"tol": 0.0}, ValueError, "`tol` must be > 0"),
    ],
)
def test_causal_upper_bound_rejects(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        causal_upper_bound(*args, **kwargs)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: manski_bounds(_data(), -1.0), ValueError, "`reward_max`"),
        (lambda: combine(), ValueError, "`phis`"),
        (lambda: combine(np.zeros(3), np.zeros(4)), ValueError, r"`phis\[1\]` has shape"),
        (lambda: combine([np.nan, 0.0]), ValueError, r"`phis\[0\]` contains NaN"),
        (lambda: monte_carlo_values("log"), TypeError, "`data` must be an OfflineDataset"),
        (lambda: shaped_reward(np.nan, 0.0, 0.0, False, False), ValueError, "`y` contains NaN"),
        (lambda: as_potential(np.zeros((4, 3)), 2, 3), ValueError, r"`potential` must have shape"),
        (lambda: as_potential([np.inf, 0, 0], 2, 3), ValueError, "`potential` contains NaN"),
        (
            lambda: Counts(
                np.zeros((2, 3)),
                np.zeros((2, 3, 2)),
                np.zeros((2, 3, 2, 3)),
                -np.ones((2, 3, 2)),
                np.zeros((2, 3, 2)),
                np.zeros(3, bool),
                0,
                0,
            ),
            ValueError,
            "`n_end` must be non-negative",
        ),
        (
            lambda: Counts(
                np.zeros((2, 3)),
                np.zeros((2, 3, 2)),
                np.zeros((2, 3, 2, 2)),
                np.zeros((2, 3, 2)),
                np.zeros((2, 3, 2)),
                np.zeros(3, bool),
                0,
                0,
            ),
            ValueError,
            "`n_sas` must have",
        ),
    ],
    ids=[
        "manski",
        "combine-none",
        "combine-shape",
        "combine-nan",
        "mc-type",
        "shaped-nan",
        "potential-shape",
        "potential-inf",
        "counts-negative",
        "counts-shape",
    ],
)
def test_bound_and_shaping_helpers_reject(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_states": 0}, ValueError, "`n_states` must be >= 1"),
        ({"n_actions": 0}, ValueError, "`n_actions` must be >= 1"),
        ({"horizon": 0}, ValueError, "`horizon` must be >= 1"),
        ({"n_episodes": 0}, ValueError, "`n_episodes` must be >= 1"),
        ({"n_episodes": 2.0}, TypeError, "`n_episodes` must be an int"),
        ({"potential": np.zeros((5, 3))}, ValueError, r"`potential` must have shape \(4,\)"),
        ({"potential": np.full(4, np.nan)}, ValueError, "`potential` contains NaN"),
        ({"c": 0.0}, ValueError, "`c` must be > 0"),
        ({"p": 1.0}, ValueError, r"`p` must be in \(0, 1\)"),
        ({"clip": "none"}, ValueError, "`clip` must be one of 'valid', 'official'"),
        ({"bonus_range": "H"}, ValueError, "`bonus_range` must be one of"),
        (
            {"potential": np.zeros(4), "bonus_range": "range"},
            ValueError,
            "`reward_min` is required",
        ),
        ({"precision": -1}, ValueError, "`precision` must be >= 0"),
        ({"homogeneous": "yes"}, TypeError, "`homogeneous` must be a bool"),
        ({"random_state": "seed"}, TypeError, "`random_state` must be"),
    ],
)
def test_qucb_rejects(kwargs, error, match):
    base = {"n_states": 4, "n_actions": 2, "horizon": 3, "n_episodes": 10}
    with pytest.raises(error, match=match):
        QUCB(**{**base, **kwargs})


@pytest.mark.parametrize(
    ("method", "args", "match"),
    [
        ("act", (3, 0), r"`h` must be an int in \[0, 2\]"),
        ("act", (0, 4), r"`s` must be an int in \[0, 3\]"),
        ("act", (0, 1.0), "`s` must be an int"),
        ("update", (0, 0, 2, 0.0, 1, False), r"`a` must be an int in \[0, 1\]"),
        ("update", (0, 0, 0, np.nan, 1, False), "`r` must not be NaN"),
        ("update", (0, 0, 0, 0.0, 7, False), "`s_next` must be an int"),
    ],
)
def test_qucb_steps_reject(method, args, match):
    agent = QUCB(4, 2, 3, 10)
    with pytest.raises(ValueError, match=match):
        getattr(agent, method)(*args)


def test_regret_runners_reject():
    env = WindyGrid.preset("empty8")
    good = QUCB(env.n_states, env.n_actions, env.horizon, 5)
    with pytest.raises(TypeError, match="`env` must be a TabularCMDP"):
        regret.run("FrozenLake-v1", good, 5)
    with pytest.raises(ValueError, match=r"`agent` has \(n_states, n_actions, horizon\)"):
        regret.run(env, QUCB(10, 5, 15, 5), 5)
    with pytest.raises(ValueError, match="`n_episodes` must be >= 1"):
        regret.run(env, good, 0)
    with pytest.raises(ValueError, match="`agents` is empty"):
        regret.run_batch(env, [], [], 5)
    with pytest.raises(ValueError, match="`seeds` has 2 entries for 1 agents"):
        regret.run_batch(env, [good], [0, 1], 5)
    tied = QUCB(env.n_states, env.n_actions, env.horizon, 5, random_state=0)
    with pytest.raises(ValueError, match="random_state=None"):
        regret.run_batch(env, [tied], [0], 5)


@pytest.mark.parametrize(
    ("changes", "error", "match"),
    [
        ({"u_prob": [[0.5, 0.4]]}, ValueError, "`u_prob` must sum to 1"),
        ({"u_prob": [[1.5, -0.5]]}, ValueError, "`u_prob` must be non-negative"),
        ({"next_state": [[[0, 2]]]}, ValueError, r"`next_state` must lie in \[0, 0\]"),
        ({"next_state": [[0, 0]]}, ValueError, "`next_state` must be 3-D"),
        ({"reward": [[[np.nan, 0.0]]]}, ValueError, "`reward` contains NaN"),
        ({"terminal": [True]}, ValueError, "`initial` puts probability on a terminal state"),
        ({"horizon": 0}, ValueError, "`horizon` must be >= 1"),
        ({"initial": [0.5]}, ValueError, "`initial` must sum to 1"),
    ],
)
def test_tabular_cmdp_rejects(changes, error, match):
    base = {
        "u_prob": [[0.5, 0.5]],
        "next_state": [[[0, 0]]],
        "reward": [[[0.0, 1.0]]],
        "terminal": [False],
        "initial": [1.0],
        "horizon": 2,
    }
    with pytest.raises(error, match=match):
        TabularCMDP(**{**base, **changes})


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        (("CartPole-v1", 10), {}, TypeError, "`env_id` 'CartPole-v1' has no tabular transition"),
        (("NoSuchEnv-v9", 10), {}, ValueError, "`env_id` 'NoSuchEnv-v9'"),
        (("FrozenLake-v1", 0), {}, ValueError, "`horizon` must be >= 1"),
        (("Taxi-v4", 10), {"fickle_passenger": True}, ValueError, "`fickle_passenger=True`"),
        ((3, 10), {}, TypeError, "`env_id` must be a str"),
    ],
)
def test_confounded_toy_text_rejects(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        ConfoundedToyText(*args, **kwargs)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: WindyGrid.preset("easy"), "`name` must be one of 'empty8', 'lava_extreme'"),
        (lambda: WindyGrid(("#x#",), (0.2,) * 5, 5), "may use only"),
        (lambda: WindyGrid(("###", "#."), (0.2,) * 5, 5), "must be rectangular"),
        (lambda: WindyGrid(("###", "#G#", "###"), (0.2,) * 5, 5), "no start cell"),
        (lambda: WindyGrid(("...",), (0.5,) * 5, 5), "`wind` must sum to 1"),
        (lambda: WindyGrid(("...",), (0.5, 0.5), 5), "`wind` must have size 5"),
        (lambda: WindyGrid(("...",), (0.2,) * 5, 0), "`horizon` must be >= 1"),
    ],
    ids=["preset", "char", "rect", "start", "wind-sum", "wind-shape", "horizon"],
)
def test_windy_grid_rejects(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_environment_and_demonstrator_calls_reject():
    env = WindyGrid.preset("empty8")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"`action` must be an int in \[0, 4\]"):
        env.step(5)
    with pytest.raises(ValueError, match="`n` must be >= 1"):
        env.collect(random_policy(env), 0)
    with pytest.raises(TypeError, match="`policy` must be a Demonstrator or a callable"):
        env.collect("expert", 10)
    with pytest.raises(ValueError, match="`policy` returned 7"):
        env.collect(lambda s, h, u, rng: 7, 10)
    with pytest.raises(TypeError, match="`policy` must be a Demonstrator"):
        env.observational_distribution(lambda s, h, u, rng: 0)
    with pytest.raises(ValueError, match="`table` must be 3-D or 4-D"):
        Demonstrator(env, np.ones((3, 3)) / 3)
    with pytest.raises(ValueError, match=r"`table` must have shape \(15, 64, 5, 5\)"):
        Demonstrator(env, np.ones((3, 64, 5, 5)) / 5)
    with pytest.raises(ValueError, match="`table` rows must be probabilities"):
        Demonstrator(env, np.ones((64, 5, 5)))
    with pytest.raises(ValueError, match=r"`epsilon` must be in \[0, 1\]"):
        expert(env, epsilon=1.5)
    other = WindyGrid.preset("lava_extreme")
    with pytest.raises(ValueError, match="`policy` was built for tables of shape"):
        other.observational_distribution(random_policy(env))
    with pytest.raises(ValueError, match="`phi` must have shape"):
        PotentialShaping(env, np.zeros(3))
