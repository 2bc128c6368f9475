"""What the README's blocks compute (the shared contract runs them; this checks their values)."""

import torch


def test_readme_usage_values(readme):
    ns = readme.namespace
    assert ns["v"].shape == (2, 3, 32, 32)
    assert ns["tokens"].tokens.shape == (2, 18, 128)  # one instance per fixture image
    # gates 0 at init: the conditioned TinyDiT equals the plain one (zero-init output: all 0)
    assert torch.count_nonzero(ns["v"]) == 0
    assert int(ns["tokens"].mask.sum()) == 2 + 10 + 3  # 2 instances, 10 + 3 labelled keypoints


def test_readme_metrics_values(readme):
    res = readme.namespace["res"]
    assert set(res) == {1, 2}
    assert 0.0 <= res.summary()["AP"] <= 1.0
    assert "0.0" in readme.stdout or "1.0" in readme.stdout
