"""Replays the README's Python blocks in an empty folder: they write the logs they read."""

import re
from pathlib import Path

import numpy as np
from causal_pbrs import WindyGrid

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_a_short_usage_block():
    usage = [block for block in python_blocks() if "QUCB(" in block]
    assert usage, "the README lost its usage example"
    assert len(usage[0].strip().splitlines()) <= 15


def test_readme_blocks_run_in_order(tmp_path, monkeypatch):
    # no logs are prepared here: a new user copying the README has none either
    env = WindyGrid.preset("lava_extreme")
    monkeypatch.chdir(tmp_path)
    namespace = {}
    for index, block in enumerate(python_blocks()):
        exec(compile(block, f"README block {index}", "exec"), namespace)
    V, _ = env.optimal_values()
    assert (namespace["phi"] >= V - 1e-9).all()  # the bound from the logs holds here
    assert namespace["agent"].Q.shape == (20, 81, 5)
    assert np.isfinite(namespace["out"]["gap_regret"]).all()
