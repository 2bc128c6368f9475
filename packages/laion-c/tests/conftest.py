"""Shared fixtures: real photos from scikit-image, a small seeded tile library, the README's
folders."""

import numpy as np
import pytest
import skimage.data
import torch
from laion_c import build_tiles, preprocess
from PIL import Image

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def photos():
    """Three real RGB photos (scikit-image sample data), uint8 (H, W, 3)."""
    return [skimage.data.chelsea(), skimage.data.astronaut(), skimage.data.coffee()]


@pytest.fixture(scope="session")
def crops(photos):
    """The photos after the official Resize(256) + CenterCrop(224): uint8 (224, 224, 3)."""
    return [np.asarray(preprocess(p, "glitched", 1)) for p in photos]


@pytest.fixture(scope="session")
def tiles():
    """{t: TileLibrary} for every mosaic size and the stickers, from other skimage photos."""
    sources = [
        skimage.data.rocket(),
        skimage.data.immunohistochemistry(),
        skimage.data.colorwheel(),
    ]
    return build_tiles([Image.fromarray(s) for s in sources], crops_per_image=40, rng=0)


@pytest.fixture(scope="session")
def readme_folder(readme_folder):
    """The user's folders the README reads: ``my_photos/`` (tiles) and ``my_images/cat/``."""
    (readme_folder / "my_photos").mkdir()
    for name in ("astronaut", "coffee", "rocket"):
        photo = Image.fromarray(getattr(skimage.data, name)())
        photo.save(readme_folder / "my_photos" / f"{name}.jpg")
    (readme_folder / "my_images" / "cat").mkdir(parents=True)
    Image.fromarray(skimage.data.chelsea()).save(
        readme_folder / "my_images" / "cat" / "chelsea.png"
    )
    return readme_folder
