"""Offline photo sets, the reproduce split and seeded patch sampling."""

import sys

import numpy as np
import pytest
import torch
from finola import data
from finola.data import (
    OPENCV_DATA,
    SKIMAGE_IMAGES,
    eval_patches,
    load_images,
    reproduce_split,
    sample_patches,
)

pytest.importorskip("skimage")
pytest.importorskip("PIL")

HAS_OPENCV = OPENCV_DATA.is_dir() and any(OPENCV_DATA.glob("*.jpg"))
needs_opencv = pytest.mark.skipif(
    not HAS_OPENCV,
    reason=f"opencv-doc is not installed ({OPENCV_DATA}; apt-get install opencv-doc)",
)


@pytest.fixture(scope="module")
def skimage_images():
    return load_images("skimage", return_names=True)


def _check_rgb_unit(images):
    for image in images:
        assert isinstance(image, torch.Tensor)
        assert image.dtype == torch.float32
        assert image.ndim == 3
        assert image.shape[0] == 3
        assert float(image.min()) >= 0
        assert float(image.max()) <= 1


def test_skimage_set(skimage_images):
    images, names = skimage_images
    assert names == list(SKIMAGE_IMAGES)
    assert len(images) == 10
    _check_rgb_unit(images)
    moto = names.index("motorcycle_left")
    assert tuple(images[moto].shape) == (3, 500, 741)
    for grey in ("grass", "gravel", "brick"):  # greyscale repeated to RGB
        image = images[names.index(grey)]
        assert torch.equal(image[0], image[1])
        assert torch.equal(image[0], image[2])
    assert images[names.index("astronaut")].max() == 1.0  # uint8 / 255


@needs_opencv
def test_opencv_set():
    images, names = load_images("opencv", return_names=True)
    assert len(images) == 59
    assert names == sorted(names)
    assert all(n.endswith(".jpg") for n in names)
    _check_rgb_unit(images)


def test_opencv_missing_names_the_install(monkeypatch, tmp_path):
    monkeypatch.setattr(data, "OPENCV_DATA", tmp_path / "nothing")
    with pytest.raises(FileNotFoundError, match="apt-get install opencv-doc"):
        load_images("opencv")


def test_sklearn_set():
    pytest.importorskip("sklearn")
    images, names = load_images("sklearn", return_names=True)
    assert names == ["china.jpg", "flower.jpg"]
    _check_rgb_unit(images)


def test_folder(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 256, (10, 12, 3), dtype=np.uint8)).save(tmp_path / "b.png")
    Image.fromarray(rng.integers(0, 256, (9, 7), dtype=np.uint8)).save(tmp_path / "a.png")
    Image.fromarray(rng.integers(0, 256, (8, 8, 4), dtype=np.uint8)).save(tmp_path / "c.PNG")
    Image.fromarray(rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)).save(tmp_path / "d.JPG")
    (tmp_path / "notes.txt").write_text("not an image")
    images, names = load_images(tmp_path, return_names=True)
    assert names == ["a.png", "b.png", "c.PNG", "d.JPG"]
    assert [tuple(im.shape) for im in images] == [(3, 9, 7), (3, 10, 12), (3, 8, 8), (3, 6, 5)]
    _check_rgb_unit(images)
    png = np.asarray(Image.open(tmp_path / "b.png"))
    np.testing.assert_array_equal(images[1].permute(1, 2, 0).numpy(), png / np.float32(255))
    assert load_images(str(tmp_path)) is not None


@pytest.mark.parametrize("module", ["PIL", "skimage.data"])
def test_missing_extra_names_the_pip_command(monkeypatch, tmp_path, module):
    from PIL import Image

    Image.fromarray(np.zeros((4, 4, 3), dtype=np.uint8)).save(tmp_path / "a.png")
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install 'finola\[images\]'"):
        load_images(tmp_path if module == "PIL" else "skimage")


def test_bad_source(tmp_path):
    with pytest.raises(ValueError, match="`source` must be one of"):
        load_images("imagenet")
    with pytest.raises(FileNotFoundError, match="`source`"):
        load_images(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="no png"):
        load_images(tmp_path)
    (tmp_path / "x.png").write_bytes(b"")
    with pytest.raises(NotADirectoryError, match="`source`"):
        load_images(tmp_path / "x.png")
    with pytest.raises(TypeError, match="`source`"):
        load_images(3)


def _expected_split(names):
    test = [n for i, n in enumerate(names) if i % 5 == 4]
    train = [n for i, n in enumerate(names) if i % 5 != 4]
    return train, test


@needs_opencv
def test_reproduce_split_full():
    split = reproduce_split()
    _, opencv_names = load_images("opencv", return_names=True)
    names = [f"skimage/{n}" for n in SKIMAGE_IMAGES] + [f"opencv/{n}" for n in opencv_names]
    train, test = _expected_split(names)
    assert split.train_names == train
    assert split.test_names == test
    assert len(split.train) == 56
    assert len(split.test) == 13
    assert split.test_names[:2] == ["skimage/motorcycle_left", "skimage/brick"]
    assert not split.reduced
    assert "reduced" not in split.description


def test_reproduce_split_reduced(tmp_path):
    pytest.importorskip("sklearn")
    split = reproduce_split(opencv_dir=tmp_path)
    names = [f"skimage/{n}" for n in SKIMAGE_IMAGES] + ["sklearn/china.jpg", "sklearn/flower.jpg"]
    train, test = _expected_split(names)
    assert split.train_names == train
    assert split.test_names == test
    assert len(split.train) == len(train)
    assert len(split.test) == len(test) == 2
    assert split.reduced
    assert "reduced data" in split.description
    assert "apt-get install opencv-doc" in split.description
    with pytest.raises(ValueError, match="`holdout_every`"):
        reproduce_split(opencv_dir=tmp_path, holdout_every=1)


def test_patches_seeded_in_range(skimage_images):
    images, _ = skimage_images
    a = sample_patches(images, 64, size=32, seed=0)
    assert a.shape == (64, 3, 32, 32)
    assert a.dtype == torch.float32
    assert float(a.min()) >= 0
    assert float(a.max()) <= 1
    assert torch.equal(a, sample_patches(images, 64, size=32, seed=0))
    assert not torch.equal(a, sample_patches(images, 64, size=32, seed=1))
    # a generator works too, and gives the stream of the int seed
    assert torch.equal(a, sample_patches(images, 64, seed=np.random.default_rng(0)))
    # each patch is a crop of one of the images
    small = [torch.rand(3, 40, 45, generator=torch.Generator().manual_seed(i)) for i in range(2)]
    for patch in sample_patches(small, 8, size=16, seed=3):
        found = any(
            torch.equal(patch, im[:, t : t + 16, l : l + 16])
            for im in small
            for t in range(40 - 15)
            for l in range(45 - 15)  # noqa: E741
        )
        assert found


def test_eval_patches_fixed(skimage_images):
    images, _ = skimage_images
    test = eval_patches(images[:3])
    assert test.shape == (512, 3, 32, 32)
    assert torch.equal(test, eval_patches(images[:3]))
    assert not torch.equal(test[:16], sample_patches(images[:3], 16, seed=0))


def test_patches_skip_small_images():
    big = torch.rand(3, 32, 32)
    tiny = torch.zeros(3, 8, 100)
    patches = sample_patches([tiny, big, tiny], 5, size=32, seed=0)
    assert all(torch.equal(p, big) for p in patches)
    with pytest.raises(ValueError, match="`images`: none is at least 32 x 32"):
        sample_patches([tiny], 5, size=32)


def test_patches_bad_input():
    good = torch.rand(3, 40, 40)
    with pytest.raises(ValueError, match=r"`images`\[1\].*\[0, 1\]"):
        sample_patches([good, good * 255], 4)
    with pytest.raises(ValueError, match=r"`images`\[0\].*NaN"):
        sample_patches([torch.full((3, 40, 40), float("nan"))], 4)
    with pytest.raises(TypeError, match=r"`images`\[0\]"):
        sample_patches([torch.zeros(3, 40, 40, dtype=torch.uint8)], 4)
    with pytest.raises(ValueError, match=r"`images`\[0\].*\(C, H, W\)"):
        sample_patches([torch.rand(40, 40)], 4)
    with pytest.raises(ValueError, match="`images` is empty"):
        sample_patches([], 4)
    with pytest.raises(ValueError, match="channels"):
        sample_patches([good, torch.rand(1, 40, 40)], 4)
    with pytest.raises(ValueError, match="`n`"):
        sample_patches([good], 0)
    with pytest.raises(ValueError, match="`size`"):
        sample_patches([good], 4, size=0)
    with pytest.raises(TypeError, match="`images`"):
        sample_patches(good, 4)
    assert sample_patches(torch.rand(2, 3, 40, 40), 3).shape == (3, 3, 32, 32)


def test_channels_last_images_are_named_as_such():
    # new-user trial: an (H, W, C) photo got a message about its size instead of its layout
    with pytest.raises(ValueError, match="channels last"):
        sample_patches([torch.rand(40, 48, 3)], 4, size=32)
