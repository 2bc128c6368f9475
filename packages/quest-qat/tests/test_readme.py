"""What the README's blocks leave, on the README's own toy model (the shared contract runs them)."""

import torch
from quest_qat import QuESTInt4Linear


def test_readme_blocks_convert_the_toy_model(readme):
    model = readme.namespace["model"]
    assert isinstance(model[0], QuESTInt4Linear)
    assert torch.isfinite(readme.namespace["loss"])
    assert model(torch.randn(3, 256)).shape == (3, 256)
