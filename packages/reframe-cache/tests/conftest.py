"""Test setup: one thread (2 shared cores), the Triton interpreter where there is no GPU, and
tests/ on sys.path for ``_rc_helpers`` (pytest's importlib mode)."""

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # read when Triton kernels are decorated
torch.set_num_threads(1)
