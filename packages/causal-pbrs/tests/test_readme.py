"""What the README's blocks compute in an empty folder: they write the logs they read (the shared
contract runs the blocks; no logs are prepared, a new user copying the README has none either)."""

import numpy as np
from causal_pbrs import WindyGrid


def test_readme_agent_block_is_the_short_usage(readme_run):
    usage = [block for block in readme_run.blocks if "QUCB(" in block.source]
    assert usage, "the README lost its usage example"
    assert len(usage[0].source.strip().splitlines()) <= 15


def test_readme_bound_holds_and_the_agent_learns(readme):
    V, _ = WindyGrid.preset("lava_extreme").optimal_values()
    assert (readme.namespace["phi"] >= V - 1e-9).all()  # the bound from the logs holds here
    assert readme.namespace["agent"].Q.shape == (20, 81, 5)
    assert np.isfinite(readme.namespace["out"]["gap_regret"]).all()
