"""Shared fixtures: one thread (2 shared cores), float64 helpers, tiny split models."""

import pytest
import torch
from fsl_sage import LinearGradScalarAux, SplitSpec, simple_conv_split
from torch import nn

torch.set_num_threads(1)


@pytest.fixture
def tiny_split():
    """simple_conv on 8x8 single-channel images, widths (4, 8): cut shape (8, 2, 2), C = 10."""
    torch.manual_seed(0)
    return simple_conv_split(in_channels=1, num_classes=10, image_size=8, widths=(4, 8))


@pytest.fixture
def tiny_partitions():
    """Three clients with 40, 33 and 25 random 8x8 images (a short last batch at batch 16)."""
    gen = torch.Generator().manual_seed(1)
    sizes = (40, 33, 25)
    return [
        (torch.randn(n, 1, 8, 8, generator=gen), torch.randint(0, 10, (n,), generator=gen))
        for n in sizes
    ]


@pytest.fixture
def hand_split():
    """``hand_split(**changes)``: a hand-built SplitSpec for 8x8 images (client to 32 features,
    server to 10 log-probs, linear aux), with the given fields changed."""

    def make(**changes):
        fields = dict(
            client=nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU()),
            server=nn.Sequential(nn.Linear(32, 10), nn.LogSoftmax(dim=1)),
            aux_factory=lambda: LinearGradScalarAux(32, 10), cut_shape=(32,), num_classes=10,
        )  # fmt: skip
        return SplitSpec(**{**fields, **changes})

    return make
