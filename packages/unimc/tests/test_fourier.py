import math

import pytest
import torch
from unimc import fourier_embed


def test_fourier_matches_closed_form():
    x = torch.rand(3, 5, 4, dtype=torch.float64)
    out = fourier_embed(x, num_freqs=8)
    assert out.shape == (3, 5, 64)
    for k in range(8):
        f = 100 ** (k / 8)
        for j in range(4):
            assert torch.allclose(out[..., k * 8 + j], torch.sin(f * x[..., j]), atol=1e-12)
            assert torch.allclose(out[..., k * 8 + 4 + j], torch.cos(f * x[..., j]), atol=1e-12)


def test_fourier_equals_diffusers_gligen_exactly():
    emb = pytest.importorskip("diffusers.models.embeddings")
    box = torch.rand(2, 7, 4)
    ref = emb.get_fourier_embeds_from_boundingbox(8, box)
    assert torch.equal(fourier_embed(box, 8), ref)


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"x": torch.zeros(2, 4, dtype=torch.long)}, TypeError, "x"),
        ({"x": torch.tensor(1.0)}, ValueError, "x"),
        ({"x": torch.tensor([[math.nan, 0.0]])}, ValueError, "x"),
        ({"x": torch.zeros(1, 2), "num_freqs": 0}, ValueError, "num_freqs"),
        ({"x": torch.zeros(1, 2), "temperature": -1.0}, ValueError, "temperature"),
    ],
)
def test_fourier_bad_input(kwargs, err, match):
    with pytest.raises(err, match=match):
        fourier_embed(**kwargs)
