"""Transforms: same type out as in, torch.manual_seed governs the random distortions, and the
result equals the functional pipeline with the drawn seed."""

import numpy as np
import pytest
import torch
from laion_c import (
    DISTORTIONS,
    GeometricShapes,
    Glitched,
    LaionC,
    LuminanceCheckerboard,
    Mosaic,
    Preprocess,
    Stickers,
    VerticalLines,
    corrupt,
)
from PIL import Image


@pytest.mark.parametrize("name", DISTORTIONS)
def test_pil_and_tensor_in_same_type_out(photos, tiles, name):
    transform = LaionC(name, 3, tiles=tiles)
    image = Image.fromarray(photos[0])
    out = transform(image)
    assert isinstance(out, Image.Image)
    assert out.size == (224, 224)
    x = torch.from_numpy(photos[0]).permute(2, 0, 1).float() / 255
    y = transform(torch.stack([x, x]))
    assert y.shape == (2, 3, 224, 224)
    assert y.dtype == torch.float32
    assert float(y.min()) >= 0
    assert float(y.max()) <= 1


def test_torch_manual_seed_governs_random_distortions(photos, tiles):
    transform = LaionC("stickers", 2, tiles=tiles)
    image = Image.fromarray(photos[1])
    torch.manual_seed(0)
    a = np.asarray(transform(image))
    torch.manual_seed(0)
    b = np.asarray(transform(image))
    c = np.asarray(transform(image))
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()
    torch.manual_seed(0)
    seed = int(torch.randint(0, 2**62, (), dtype=torch.int64))
    np.testing.assert_array_equal(
        a, np.asarray(corrupt(image, "stickers", 2, rng=seed, tiles=tiles))
    )


def test_named_classes_are_laionc(tiles):
    for cls, name in [
        (Glitched, "glitched"), (VerticalLines, "vertical_lines"),
        (GeometricShapes, "geometric_shapes"), (LuminanceCheckerboard, "luminance_checkerboard"),
    ]:  # fmt: skip
        assert cls(1).distortion == name
    assert Mosaic(2, tiles).distortion == "mosaic"
    assert Stickers(1, tiles).distortion == "stickers"
    assert "level=1" in repr(Glitched(1))


def test_preprocess_transform(photos):
    out = Preprocess("mosaic", 2)(Image.fromarray(photos[0]))
    assert out.size == (252, 252)


def test_alias_names(tiles):
    assert LaionC("sticker", 1, tiles).distortion == "stickers"
    assert LaionC("luminance", 1).distortion == "luminance_checkerboard"


def test_works_in_a_dataloader(photos):
    x = (
        torch.from_numpy(np.stack([p[:200, :200] for p in photos])).permute(0, 3, 1, 2).float()
        / 255
    )
    dataset = torch.utils.data.TensorDataset(x)
    transform = LaionC("geometric_shapes", 1)
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=3, collate_fn=lambda b: transform(torch.stack([t[0] for t in b]))
    )
    batch = next(iter(loader))
    assert batch.shape == (3, 3, 224, 224)
