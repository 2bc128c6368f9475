"""Replays the README's Python blocks, on logs written from the lava grid's demonstrators."""

import re
from pathlib import Path

import numpy as np
from causal_pbrs import WindyGrid, expert, random_policy

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_a_short_usage_block():
    blocks = python_blocks()
    assert blocks, "the README lost its usage example"
    assert len(blocks[0].strip().splitlines()) <= 15


def test_readme_blocks_run_in_order(tmp_path, monkeypatch):
    env = WindyGrid.preset("lava_extreme")
    env.collect(expert(env), 20_000, rng=0).save(tmp_path / "expert.npz")
    env.collect(random_policy(env), 20_000, rng=1).save(tmp_path / "random.npz")
    monkeypatch.chdir(tmp_path)
    namespace = {}
    for index, block in enumerate(python_blocks()):
        exec(compile(block, f"README block {index}", "exec"), namespace)
    V, _ = env.optimal_values()
    assert (namespace["phi"] >= V - 1e-9).all()  # the bound from the logs holds here
    assert namespace["agent"].Q.shape == (20, 81, 5)
    assert np.isfinite(namespace["out"]["gap_regret"]).all()
