"""What the README's usage block samples (the card must run as written; the shared contract runs
it, after the conftest's `readme_folder` seeds torch)."""

import pytest
import torch


@pytest.mark.slow
def test_readme_usage_samples_and_weighs_the_walkers(readme):
    assert len(readme.blocks) == 1
    res = readme.namespace["res"]
    assert res.x.shape == (1024, 16)
    assert res.log_w.shape == (1024,)
    assert 0 < res.ess <= 1
    assert torch.isfinite(readme.namespace["m_abs"])
    assert len(readme.stdout.splitlines()) == 2
