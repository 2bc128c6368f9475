"""Test setup: one thread (2 shared cores), and the Triton interpreter where there is no GPU."""

import os
import sys
from pathlib import Path

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when Triton kernels are decorated
torch.set_num_threads(1)
sys.path.insert(0, str(Path(__file__).parent))  # brute.py, ddp_worker.py


@pytest.fixture
def triton_ok():
    pytest.importorskip("triton")
    return True
