"""Test setup: one thread (2 shared cores) and tests/ on sys.path for ``_helpers``."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def readme_folder(readme_folder):
    """A user's photo for the README's blocks (a 600x400 crop of scikit-image's coffee)."""
    import skimage.data
    from PIL import Image

    Image.fromarray(skimage.data.coffee()).save(readme_folder / "photo.jpg")
    return readme_folder
