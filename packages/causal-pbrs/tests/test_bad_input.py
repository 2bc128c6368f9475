"""Every public entry point rejects bad input with an error that names the argument."""

import numpy as np
import pytest
import scipy.sparse
from causal_pbrs import (
    QUCB,
    ConfoundedToyText,
    Counts,
    Demonstrator,
    OfflineDataset,
    PotentialShaping,
    TabularCMDP,
    WindyGrid,
    anti_expert,
    as_potential,
    causal_upper_bound,
    combine,
    exact_values,
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


def _counts(**changes):
    """The counts of the good log, with fields scaled (arrays by a number) or replaced."""
    counts = _data().counts()
    fields = {
        name: getattr(counts, name)
        for name in ("n_s", "n_sa", "n_sas", "n_end", "y_sum", "terminal", "y_min", "y_max")
    }
    for name, value in changes.items():
        scale = name.startswith("n_") and np.isscalar(value)
        fields[name] = fields[name] * value if scale else value
    return Counts(**fields)


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


def _npy_file(path):
    np.save(path / "one.npy", np.zeros(3))
    return path / "one.npy"


def _text_file(path):
    (path / "log.txt").write_text("h s x y s_next done\n0 0 1 0.0 1 0\n")
    return path / "log.txt"


def _object_arrays(path):
    cols = {k: np.asarray(v) for k, v in GOOD.items() if k not in ("n_states", "n_actions")}
    cols["h"] = np.array([0, 1], dtype=object)
    np.savez(path / "objects.npz", **cols)
    return path / "objects.npz"


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda path: path, ValueError, "`path` .* is a folder"),
        (_npy_file, ValueError, r"`path` .* holds a single array \(\.npy\)"),
        (_text_file, ValueError, "`path` .* is not an .npz archive"),
        (_object_arrays, ValueError, "`path` .*: an array cannot be read safely"),
        (lambda path: None, TypeError, "`path` must be a str or path-like, got NoneType"),
        (lambda path: path / "none.npz", FileNotFoundError, "`path` .*none.npz: no such file"),
    ],
    ids=["folder", "npy", "text", "object-arrays", "none", "missing"],
)
def test_offline_dataset_load_rejects_bad_files(tmp_path, make, error, match):
    with pytest.raises(error, match=match):
        OfflineDataset.load(make(tmp_path), n_states=3, n_actions=2, horizon=2)


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
        ((_data(), 0.0), {"stationary": "no"}, TypeError, "`stationary` must be a bool, got 'no'"),
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
        (lambda: _counts(n_s=3), ValueError, "`n_sa` must add up to `n_s`"),
        (lambda: _counts(n_sas=5), ValueError, "`n_sas` and `n_end` must add up to `n_sa`"),
        (lambda: _counts(n_sas=-1), ValueError, "`n_sas` must be non-negative"),
        (lambda: _counts(n_sas=np.nan), ValueError, "`n_sas` contains NaN"),
        (
            lambda: _counts(n_sas=scipy.sparse.csr_array((10, 3))),
            ValueError,
            r"`n_sas` must have shape \(H·S·A, S\) = \(12, 3\) when sparse",
        ),
        (lambda: _counts(y_max=np.nan), ValueError, "`y_max` must not be NaN"),
        (lambda: _counts(y_min="low"), TypeError, "`y_min` must be a real number"),
        (lambda: _counts(y_min=1.0), ValueError, "`y_min` = 1.0 exceeds `y_max`"),
        (lambda: _counts(y_max=-2.0, y_min=-3.0), ValueError, "`y_sum` implies a reward above"),
        (lambda: _counts(y_min=-0.5), ValueError, "`y_sum` implies a reward below"),
        (lambda: _data().counts(pooled="x"), TypeError, "`pooled` must be a bool, got 'x'"),
        (lambda: monte_carlo_values(_data(), stationary="no"), TypeError, "`stationary` must"),
        (lambda: shaped_reward(1.0, 0.0, 5.0, "no", False), TypeError, "`terminated` must be"),
        (lambda: shaped_reward(1.0, 0.0, 5.0, False, 2), ValueError, "`last` must be boolean"),
        (
            lambda: shaped_reward(np.zeros(3), np.zeros(2), 0.0, False, False),
            ValueError,
            "`y`, `phi_s`, `phi_next`, `terminated`, `last` must broadcast",
        ),
        (lambda: as_potential(np.zeros(3), 0, 3), ValueError, "`horizon` must be >= 1"),
        (lambda: as_potential(np.zeros(3), "2", 3), TypeError, "`horizon` must be an int"),
        (lambda: as_potential(np.zeros(3), 2, 0), ValueError, "`n_states` must be >= 1"),
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
        "counts-n_s-sum",
        "counts-n_sa-sum",
        "counts-n_sas-negative",
        "counts-n_sas-nan",
        "counts-n_sas-sparse-shape",
        "counts-y_max-nan",
        "counts-y_min-type",
        "counts-y-order",
        "counts-y_max-low",
        "counts-y_min-high",
        "counts-pooled-flag",
        "mc-stationary-flag",
        "shaped-terminated-flag",
        "shaped-last-flag",
        "shaped-broadcast",
        "potential-horizon-0",
        "potential-horizon-type",
        "potential-states-0",
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
    ("method", "args", "error", "match"),
    [
        ("act", (3, 0), ValueError, r"`h` must be an int in \[0, 2\]"),
        ("act", (0, 4), ValueError, r"`s` must be an int in \[0, 3\]"),
        ("act", (0, 1.0), ValueError, "`s` must be an int"),
        ("act", (True, 0), ValueError, "`h` must be an int"),
        ("update", (0, 0, 2, 0.0, 1, False), ValueError, r"`a` must be an int in \[0, 1\]"),
        ("update", (0, 0, 0, np.nan, 1, False), ValueError, "`r` must not be NaN"),
        ("update", (0, 0, 0, 0.0, 7, False), ValueError, "`s_next` must be an int"),
        ("update", (0, 0, 0, 0.0, 1, "False"), TypeError, "`terminated` must be a bool"),
        ("update", (0, 0, 0, 0.0, 1, None), TypeError, "`terminated` must be a bool"),
        ("update", (0, 0, 0, 0.0, 1, 2), TypeError, r"`terminated` must be a bool \(or 0/1\)"),
    ],
)
def test_qucb_steps_reject(method, args, error, match):
    agent = QUCB(4, 2, 3, 10)
    with pytest.raises(error, match=match):
        getattr(agent, method)(*args)
    assert agent.N.sum() == 0  # nothing was learnt from the refused step


def test_qucb_update_takes_numpy_and_integer_flags():
    agent = QUCB(4, 2, 3, 10)
    agent.update(0, 0, 0, 0.0, 1, np.bool_(True))
    agent.update(0, 0, 1, 0.0, 1, 0)
    assert agent.N[0, 0].tolist() == [1, 1]


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


def test_regret_runners_refuse_more_episodes_than_the_agents_k():
    """Issue 31, point 5: K sets ι = log(SAHK/p); past K the bonus's guarantee is void."""
    env = WindyGrid.preset("empty8")
    agent = QUCB(env.n_states, env.n_actions, env.horizon, 5)
    match = r"`n_episodes` = 6 is more than the K = 5 episodes `agent` was built for"
    with pytest.raises(ValueError, match=match):
        regret.run(env, agent, 6)
    other = QUCB(env.n_states, env.n_actions, env.horizon, 10)
    with pytest.raises(ValueError, match=r"= 6 is more than the K = 5 episodes `agents\[1\]`"):
        regret.run_batch(env, [other, agent], [0, 1], 6)
    assert agent.N.sum() == other.N.sum() == 0  # refused before any episode
    assert regret.run(env, agent, 3, seed=0)["gap_regret"].shape == (3,)  # fewer than K: fine


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda env, a: regret.run(env, a, 5, seed="a"), TypeError, "`seed` must be None or"),
        (lambda env, a: regret.run(env, a, 5, seed=-1), ValueError, "`seed` must be None or"),
        (lambda env, a: regret.run(env, None, 5), TypeError, "`agent` must be a QUCB"),
        (
            lambda env, a: regret.run(env, a, 5, episode_regret="no"),
            TypeError,
            "`episode_regret` must be a bool",
        ),
        (
            lambda env, a: regret.run_batch(env, [a], [-3], 5),
            ValueError,
            r"`seeds\[0\]` must be None or",
        ),
        (
            lambda env, a: regret.run_batch(env, [a], [0], 5, callback=5),
            TypeError,
            "`callback` must be callable, got int",
        ),
        (
            lambda env, a: regret.run_batch(env, a, [0], 5),
            TypeError,
            "`agents` must be a sequence of QUCB; for one agent, use run",
        ),
        (
            lambda env, a: regret.run_batch(env, [a], 0, 5),
            TypeError,
            "`seeds` must be a sequence of ints",
        ),
        (
            lambda env, a: regret.run_batch(env, [a, QUCB(2, 5, 15, 5)], [0, 1], 5),
            ValueError,
            r"`agents\[1\]` has \(n_states, n_actions, horizon\)",
        ),
    ],
    ids=[
        "seed-type",
        "seed-negative",
        "agent-none",
        "episode-regret-flag",
        "seeds-negative",
        "callback",
        "agents-single",
        "seeds-type",
        "agents-sizes",
    ],
)
def test_regret_runner_arguments_reject(call, error, match):
    env = WindyGrid.preset("empty8")
    agent = QUCB(env.n_states, env.n_actions, env.horizon, 5)
    with pytest.raises(error, match=match):
        call(env, agent)
    assert agent.N.sum() == 0  # refused before any episode was played


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
        (("FrozenLake-v1", 10), {"foo": 1}, TypeError, "`kwargs` .*'foo'"),
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


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda env: WindyGrid(5, (0.2,) * 5, 5), TypeError, "`layout` must be a string or"),
        (lambda env: env.state(8, 0), ValueError, r"`row` must be in \[0, 7\], got 8"),
        (lambda env: env.state(0, -1), ValueError, r"`col` must be in \[0, 7\], got -1"),
        (lambda env: env.render_values(np.zeros(5)), ValueError, "`values` must have size 64"),
        (lambda env: env.cell(0, 1.5), ValueError, r"`u` must be in \[0, 1\), got 1.5"),
        (lambda env: env.cell(64, 0.5), ValueError, r"`s` must be in \[0, 63\], got 64"),
        (
            lambda env: env.values_of(np.zeros((3, 3))),
            ValueError,
            r"`policy_probs` must have shape \(15, 64, 5\) or \(64, 5\)",
        ),
        (
            lambda env: env.values_of(np.full((64, 5), 5.0)),
            ValueError,
            "`policy_probs` must sum to 1",
        ),
        (
            lambda env: env.values_of(np.tile([2.0, -1.0, 0.0, 0.0, 0.0], (64, 1))),
            ValueError,
            "`policy_probs` must be non-negative",
        ),
    ],
    ids=[
        "layout",
        "row",
        "col",
        "render",
        "cell-u",
        "cell-s",
        "values-shape",
        "values-sum",
        "values-negative",
    ],
)
def test_windy_grid_methods_reject(call, error, match):
    with pytest.raises(error, match=match):
        call(WindyGrid.preset("empty8"))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda env: expert(None), TypeError, "`env` must be a TabularCMDP"),
        (lambda env: anti_expert("FrozenLake-v1"), TypeError, "`env` must be a TabularCMDP"),
        (lambda env: random_policy(None), TypeError, "`env` must be a TabularCMDP"),
        (lambda env: Demonstrator(None, np.ones((1, 1, 1))), TypeError, "`env` must be a"),
        (lambda env: exact_values(None, random_policy(env)), TypeError, "`env` must be a"),
        (lambda env: random_policy(env)(64, 0, 0), ValueError, r"`s` must be in \[0, 63\]"),
        (lambda env: random_policy(env)(0, 15, 0), ValueError, r"`h` must be in \[0, 14\]"),
        (lambda env: random_policy(env)(0, 0, 5), ValueError, r"`u` must be in \[0, 4\]"),
        (lambda env: random_policy(env).probs(0, 0, 0.5), TypeError, "`u` must be an int"),
    ],
    ids=[
        "expert",
        "anti-expert",
        "random",
        "table",
        "exact-values",
        "call-s",
        "call-h",
        "call-u",
        "probs-u-type",
    ],
)
def test_demonstrators_reject(call, error, match):
    with pytest.raises(error, match=match):
        call(WindyGrid.preset("empty8"))


def test_toy_text_demonstrator_rejects_a_draw_outside_the_unit_interval():
    env = ConfoundedToyText("FrozenLake-v1", horizon=5)
    with pytest.raises(ValueError, match=r"`u` must be in \[0, 1\), got 1.5"):
        random_policy(env)(0, 0, 1.5)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"horizon": 0}, ValueError, "`horizon` must be >= 1"),
        ({"horizon": 2.5}, TypeError, "`horizon` must be an int"),
        (
            {"horizon": 10},
            ValueError,
            "`horizon` = 10 is shorter than the environment's horizon 15",
        ),
    ],
)
def test_potential_shaping_rejects(kwargs, error, match):
    env = WindyGrid.preset("empty8")
    with pytest.raises(error, match=match):
        PotentialShaping(env, np.zeros(64), **kwargs)


def test_potential_shaping_rejects_a_non_environment_and_a_too_long_episode():
    import gymnasium

    with pytest.raises(TypeError, match=r"`env` must be a gymnasium\.Env, got NoneType"):
        PotentialShaping(None, np.zeros(3), horizon=2)
    # FrozenLake has no `.horizon`: a horizon shorter than its episodes is only found by step()
    shaped = PotentialShaping(gymnasium.make("FrozenLake-v1", is_slippery=False), np.zeros(16), 2)
    shaped.reset(seed=0)
    shaped.step(0)
    shaped.step(0)  # two steps left against the wall: still in the start state
    with pytest.raises(RuntimeError, match="run past `horizon` = 2 steps"):
        shaped.step(0)


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
