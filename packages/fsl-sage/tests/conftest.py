"""Shared fixtures: one thread (2 shared cores), float64 helpers, tiny split models."""

import pytest
import torch
from fsl_sage import simple_conv_split

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
