"""Replays the README's usage block and checks its result against numpy's weighted mean."""

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_a_short_usage_block():
    blocks = python_blocks()
    assert blocks, "the README lost its usage example"
    assert len(blocks[0].strip().splitlines()) <= 15


def test_readme_usage_runs_and_gives_the_weighted_mean():
    namespace = {}
    exec(compile(python_blocks()[0], "README usage", "exec"), namespace)
    expected = np.full(1000, np.mean([0.01 * i for i in range(5)]))  # equal weights
    assert namespace["mean"].shape == (1000,)
    assert np.abs(namespace["mean"] - expected).max() <= 2.0**-17


def test_readme_labels_the_reconstruction():
    text = README.read_text(encoding="utf-8")
    assert "Janus-style" in text
    assert "reconstruction" in text
