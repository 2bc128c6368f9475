"""Gymnasium conventions (issue 31, point 4): registered ids, render_mode="ansi", actions as
gymnasium's Discrete space accepts them; and the modules' import order (point 6)."""

import ast
import importlib
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import causal_pbrs
import gymnasium
import numpy as np
import pytest
from causal_pbrs import ConfoundedToyText, TabularCMDP, WindyGrid
from causal_pbrs.presets import ENV_IDS, PRESETS, register_envs
from gymnasium.utils.env_checker import check_env

# the arguments make() needs for the ids of the classes themselves
MAKE_KWARGS = {
    "causal_pbrs/WindyGrid-v0": {
        "layout": "#S.G#",
        "wind": (0.2, 0.0, 0.2, 0.0, 0.6),
        "horizon": 4,
    },
    "causal_pbrs/ConfoundedToyText-v0": {"env_id": "FrozenLake-v1", "horizon": 30},
    "causal_pbrs/TabularCMDP-v0": {
        "u_prob": [[0.5, 0.5], [1.0, 0.0]],
        "next_state": [[[0, 0], [1, 0]], [[1, 1], [1, 1]]],
        "reward": [[[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]],
        "terminal": [False, True],
        "initial": [1.0, 0.0],
        "horizon": 2,
    },
}


def test_every_public_environment_and_preset_has_an_id():
    entry_points = {entry for entry, _ in ENV_IDS.values()}
    classes = {f"causal_pbrs.envs:{cls.__name__}" for cls in (TabularCMDP, ConfoundedToyText)}
    assert classes | {"causal_pbrs.envs:WindyGrid"} == entry_points
    presets = [kwargs for entry, kwargs in ENV_IDS.values() if kwargs]
    assert sorted(map(repr, presets)) == sorted(map(repr, PRESETS.values()))
    for env_id in ENV_IDS:
        assert env_id.startswith("causal_pbrs/")
        assert gymnasium.spec(env_id).max_episode_steps is None  # the env's own horizon cuts


def test_import_registers_the_ids_and_nothing_else():
    code = (
        "import gymnasium; before = set(gymnasium.registry); import causal_pbrs; "
        "print(sorted(set(gymnasium.registry) - before))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == repr(sorted(ENV_IDS))
    assert "causal_pbrs" not in out.stderr  # no warning about its ids either


def test_registration_is_idempotent_and_leaves_other_registrations_alone(monkeypatch):
    specs = {env_id: gymnasium.spec(env_id) for env_id in ENV_IDS}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # gymnasium warns when an id is registered twice
        importlib.reload(causal_pbrs)
        register_envs()
    assert all(gymnasium.spec(env_id) is spec for env_id, spec in specs.items())
    monkeypatch.delitem(gymnasium.registry, "causal_pbrs/WindyLava-v0")
    register_envs()  # an id missing from the registry comes back, the others stay as they were
    assert gymnasium.spec("causal_pbrs/WindyLava-v0").kwargs == PRESETS["lava_extreme"]
    assert gymnasium.spec("causal_pbrs/WindyGrid-v0") is specs["causal_pbrs/WindyGrid-v0"]


@pytest.mark.parametrize(("env_id", "preset"), [
    ("causal_pbrs/WindyLava-v0", "lava_extreme"),
    ("causal_pbrs/WindyEmpty8x8-v0", "empty8"),
])  # fmt: skip
def test_make_round_trip_gives_the_preset_and_its_trajectories(env_id, preset):
    made = gymnasium.make(env_id)
    direct = WindyGrid.preset(preset)
    assert isinstance(made.unwrapped, WindyGrid)
    for name in ("next_state", "reward", "terminal", "initial", "u_prob"):
        np.testing.assert_array_equal(getattr(made.unwrapped, name), getattr(direct, name))
    assert made.unwrapped.horizon == direct.horizon
    assert (made.reset(seed=3), made.step(1)) == (direct.reset(seed=3), direct.step(1))
    longer = gymnasium.make(env_id, horizon=30, step_cost=-0.2)  # keywords override the preset
    assert (longer.unwrapped.horizon, longer.unwrapped.step_cost) == (30, -0.2)


@pytest.mark.parametrize("env_id", list(ENV_IDS))
def test_gymnasium_env_checker_passes_on_every_id(env_id):
    env = gymnasium.make(env_id, **MAKE_KWARGS.get(env_id, {}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # check_env reports its findings as warnings
        check_env(env.unwrapped)  # also re-makes the id with render_mode="ansi" and renders


def test_toy_text_through_gymnasium_make_passes_the_checker_with_ansi_rendering():
    env = gymnasium.make(
        "causal_pbrs/ConfoundedToyText-v0", env_id="Taxi-v4", horizon=20, is_rainy=True,
        render_mode="ansi",
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


def test_windy_grid_renders_a_text_grid():
    env = WindyGrid("#S.G#", (0.0, 0.0, 0.0, 0.0, 1.0), horizon=4, render_mode="ansi")
    assert env.metadata["render_modes"] == ["ansi"]
    assert env.render() == "h = 0/4, not started: call reset()\n"
    env.reset(seed=0)
    assert env.render() == "h = 0/4, s = 1\n#A.G#\n"
    env.step(3)  # right, no wind: one cell
    assert env.render() == "h = 1/4, s = 2, last action right\n#SAG#\n"
    env.step(3)  # into the goal: the episode is over, the last state entered is shown
    assert env.render() == "h = 2/4, s = 3, last action right\n#S.A#\n"


def test_toy_text_renders_gymnasiums_own_text_and_stays_picklable():
    env = ConfoundedToyText("FrozenLake-v1", horizon=30, is_slippery=False, render_mode="ansi")
    raw = gymnasium.make("FrozenLake-v1", is_slippery=False, render_mode="ansi")
    env.reset(seed=0)
    raw.reset(seed=0)
    env.step(2)
    raw.step(2)
    assert env.render() == "h = 1/30, s = 1, last action 2\n" + raw.render()
    assert "is_slippery=False" in repr(env)
    assert "render_mode" not in repr(env)  # not passed on to the environment the tables come from
    copy = pickle.loads(pickle.dumps(env))
    assert copy.render() == env.render()
    env.close()
    env.close()  # closing twice is allowed (gymnasium's checker asks for it)


def test_tabular_cmdp_renders_its_header_and_no_mode_warns_and_returns_none():
    env = TabularCMDP(**MAKE_KWARGS["causal_pbrs/TabularCMDP-v0"], render_mode="ansi")
    env.reset(seed=0)
    env.step(np.array(1))
    assert env.render() in ("h = 1/2, s = 0, last action 1\n", "h = 1/2, s = 1, last action 1\n")
    quiet = WindyGrid.preset("empty8")
    quiet.reset(seed=0)
    with pytest.warns(UserWarning, match='render_mode="ansi"'):
        assert quiet.render() is None


@pytest.mark.parametrize("mode", ["human", "rgb_array", "ANSI", 1])
def test_other_render_modes_are_refused_at_construction(mode):
    match = r"`render_mode` must be None or 'ansi' \(text\), got"
    with pytest.raises(ValueError, match=match):
        WindyGrid.preset("empty8", render_mode=mode)
    with pytest.raises(ValueError, match=match):
        ConfoundedToyText("FrozenLake-v1", horizon=5, render_mode=mode)
    with pytest.raises(ValueError, match=match):
        TabularCMDP(**MAKE_KWARGS["causal_pbrs/TabularCMDP-v0"], render_mode=mode)
    if not isinstance(mode, str):
        return  # gymnasium.make itself fails on a mode that is not a str
    with warnings.catch_warnings():  # gymnasium.make warns first that the mode is not declared
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=match):
            gymnasium.make("causal_pbrs/WindyLava-v0", render_mode=mode)


@pytest.mark.parametrize(
    "action", [4, np.int64(4), np.uint8(4), np.array(4), np.array(4, dtype=np.int8)],
    ids=["int", "int64", "uint8", "0-d-int64", "0-d-int8"],
)  # fmt: skip
def test_integer_and_zero_dimensional_integer_array_actions_are_the_same_action(action):
    env, ref = WindyGrid.preset("empty8"), WindyGrid.preset("empty8")
    assert env.reset(seed=5) == ref.reset(seed=5)
    assert env.step(action) == ref.step(4)
    assert env.action_space.contains(action)  # what gymnasium's Discrete space accepts


@pytest.mark.parametrize(
    "action",
    [4.0, np.float64(4.0), np.array(4.0), np.array([4]), np.array([[4]]), True, np.bool_(True),
     "4", None, 5, -1, np.array(5)],
    ids=["float", "float64", "0-d-float", "1-d", "2-d", "bool", "np-bool", "str", "none",
         "too-large", "negative", "0-d-too-large"],
)  # fmt: skip
def test_other_actions_are_refused_naming_action(action):
    env = WindyGrid.preset("empty8")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"`action` must be an int in \[0, 4\] \(or a 0-d"):
        env.step(action)


# ------------------------------------------------------------------ point 6: import structure
SRC = Path(causal_pbrs.__file__).parent


def _imports(module):
    """The package's modules that `module` imports, at module level or inside functions."""
    tree = ast.parse((SRC / f"{module}.py").read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [node.module] if node.module else [alias.name for alias in node.names]
            found.update(name.split(".")[0] for name in names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("causal_pbrs."):
            found.add(node.module.split(".")[1])
    return found - {"_version"}


def test_imports_run_one_way_without_cycles():
    modules = sorted(p.stem for p in SRC.glob("*.py") if p.stem != "__init__")
    graph = {m: _imports(m) for m in modules}
    assert "behavior" not in graph["envs"]  # the demonstrators use the environments
    assert "envs" in graph["behavior"]
    assert graph["presets"] == set()  # entry points are strings: presets imports no module
    assert "presets" in graph["envs"]
    done: set[str] = set()

    def visit(m, path):
        assert m not in path, f"import cycle: {' -> '.join([*path, m])}"
        if m not in done:
            for n in graph.get(m, ()):
                visit(n, [*path, m])
            done.add(m)

    for m in modules:
        visit(m, [])
