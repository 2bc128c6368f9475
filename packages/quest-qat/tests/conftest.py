"""Test settings: one thread (2 shared cores) and the Triton interpreter (no GPU here).

``TRITON_INTERPRET`` must be set before triton decorates the kernels, so it is set at import.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(20250205)
