"""What the README's blocks leave, on the README's own toy model (the shared contract runs them)."""

import torch
from quest_qat import QuESTInt4Linear, QuESTInt8Linear, QuESTLinear


def test_readme_blocks_convert_the_toy_model(readme):
    model = readme.namespace["model"]
    assert isinstance(model[0], QuESTInt4Linear)
    assert torch.isfinite(readme.namespace["loss"])
    assert model(torch.randn(3, 256)).shape == (3, 256)


def test_readme_deployment_block_takes_every_path(readme):
    """W4A16 (int4 weights, float activations), W8A8 (int8), the safetensors round trip and the
    two tensor-parallel styles."""
    ns = readme.namespace
    w4a16, w8a8, restored, tp = ns["w4a16"], ns["w8a8"], ns["restored"], ns["tp"]
    assert isinstance(w4a16[0], QuESTInt4Linear)
    assert w4a16[0].a_bits is None
    assert isinstance(w8a8[2], QuESTInt8Linear)
    assert w8a8[2].a_bits == 8
    x = torch.randn(3, 256)
    assert torch.equal(restored(x), w8a8(x))
    assert isinstance(tp[0], QuESTLinear)
    assert tp[2].tp_style is not None
    assert type(tp[0].weight).__name__ == "DTensor"
