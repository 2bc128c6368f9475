"""The README's usage block against numpy's weighted mean (the shared contract runs it)."""

from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_usage_gives_the_weighted_mean(readme):
    expected = np.full(1000, np.mean([0.01 * i for i in range(5)]))  # equal weights
    assert readme.namespace["mean"].shape == (1000,)
    assert np.abs(readme.namespace["mean"] - expected).max() <= 2.0**-17


def test_readme_labels_the_reconstruction():
    text = README.read_text(encoding="utf-8")
    assert "Janus-style" in text
    assert "reconstruction" in text
