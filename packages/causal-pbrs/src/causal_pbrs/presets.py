"""Named environments: the paper's windy grids and the library's gymnasium ids.

``PRESETS`` holds the windy grids of the paper (:meth:`causal_pbrs.WindyGrid.preset`);
``ENV_IDS`` the ids under which :func:`register_envs` registers every public environment with
gymnasium (it runs on ``import causal_pbrs``), so that

    >>> import gymnasium, causal_pbrs
    >>> env = gymnasium.make("causal_pbrs/WindyLava-v0", render_mode="ansi")
    >>> env.unwrapped.horizon
    20

The entry points are strings, so this module imports no environment (imports run one way:
``behavior`` -> ``envs`` -> ``presets``). No id sets ``max_episode_steps``: each environment
truncates itself at its own horizon H, which a keyword such as ``horizon=30`` changes, and a
gymnasium ``TimeLimit`` fixed at registration would cut it short.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium

__all__ = ["ENV_IDS", "NAMED_ENVS", "PRESETS", "register_envs"]

PRESETS: dict[str, dict[str, Any]] = {
    # MiniGrid-Empty-8x8 with the official wind (constants.WIND_DIST) and time limit (KWARGS).
    "empty8": {
        "layout": (
            "########",
            "#......#",
            "#......#",
            "#......#",
            "#......#",
            "#......#",
            "#.....G#",
            "########",
        ),
        "wind": (0.1, 0.1, 0.1, 0.1, 0.6),
        "horizon": 15,
    },
    # causal_gym CustomCrossingEnv(mode="extreme", size=9): lava at columns 2-6 of rows 1 and
    # 3-6, coins (free cells, not start cells) on row 2, goal (7, 7); wind of
    # Custom-LavaCrossing-extreme-v0; 20 steps. 'S' = cells MiniGrid's place_agent may start on.
    "lava_extreme": {
        "layout": (
            "#########",
            "#SLLLLLS#",
            "#S.....S#",
            "#SLLLLLS#",
            "#SLLLLLS#",
            "#SLLLLLS#",
            "#SLLLLLS#",
            "#SSSSSSG#",
            "#########",
        ),
        "wind": (0.0, 0.7, 0.0, 0.0, 0.3),
        "horizon": 20,
    },
}

# The environments the command line and the reproduce name: keyword arguments of
# WindyGrid.preset ("preset") or of ConfoundedToyText ("env_id", "horizon", the rest passed to
# gymnasium.make); :func:`causal_pbrs.envs.make_named` builds them. The toy-text horizons are
# ours (2-3 times the shortest path under slips); FrozenLake's slip is gymnasium's default.
NAMED_ENVS: dict[str, dict[str, Any]] = {
    "lava_extreme": {"preset": "lava_extreme"},
    "empty8": {"preset": "empty8"},
    "frozenlake4x4": {"env_id": "FrozenLake-v1", "horizon": 30, "map_name": "4x4",
                      "is_slippery": True, "success_rate": 1 / 3},
    "frozenlake8x8": {"env_id": "FrozenLake-v1", "horizon": 100, "map_name": "8x8",
                      "is_slippery": True, "success_rate": 1 / 3},
    "cliffwalking_slippery": {"env_id": "CliffWalkingSlippery-v1", "horizon": 50},
    "taxi_rainy": {"env_id": "Taxi-v4", "horizon": 50, "is_rainy": True},
}  # fmt: skip

# id: (entry point, default keyword arguments; those of gymnasium.make override them)
ENV_IDS: dict[str, tuple[str, dict[str, Any]]] = {
    # the paper's grids, as WindyGrid.preset builds them
    "causal_pbrs/WindyLava-v0": ("causal_pbrs.envs:WindyGrid", PRESETS["lava_extreme"]),
    "causal_pbrs/WindyEmpty8x8-v0": ("causal_pbrs.envs:WindyGrid", PRESETS["empty8"]),
    # the classes themselves: make() needs their arguments, e.g. env_id= and horizon=
    "causal_pbrs/WindyGrid-v0": ("causal_pbrs.envs:WindyGrid", {}),
    "causal_pbrs/ConfoundedToyText-v0": ("causal_pbrs.envs:ConfoundedToyText", {}),
    "causal_pbrs/TabularCMDP-v0": ("causal_pbrs.envs:TabularCMDP", {}),
}


def register_envs() -> None:
    """Register the ids of ``ENV_IDS`` with gymnasium; ids already registered are left alone.

    Called on ``import causal_pbrs``. Idempotent: importing again (or calling it again) neither
    re-registers nor warns, and an id someone else registered first is not overridden.

    Examples
    --------
    >>> register_envs()
    >>> gymnasium.spec("causal_pbrs/WindyEmpty8x8-v0").kwargs["horizon"]
    15
    """
    for env_id, (entry_point, kwargs) in ENV_IDS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(env_id, entry_point=entry_point, kwargs=copy.deepcopy(kwargs))
