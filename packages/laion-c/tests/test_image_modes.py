"""Issue 34.1: high-bit PIL modes (16-bit grey, 32-bit ``I``, float ``F``) are scaled to 8 bits in
every entry point (``corrupt``, ``distort``, ``build``, ``eval``, ``tiles``, the CLI), not clipped
by ``Image.convert("RGB")``; values that cannot be mapped faithfully are refused naming the mode.

Peer: the same photo as an 8-bit ``L`` image. A 16-bit value ``257 g`` is the 8-bit value ``g``
(``round(257 g * 255 / 65535) = g``), a float ``g / 255`` (or ``g`` in [0, 255]) too, so every
output must equal the 8-bit one pixel for pixel."""

import numpy as np
import pytest
import torch
from laion_c import (
    build_dataset,
    build_tiles,
    corrupt,
    distort,
    evaluate,
    preprocess,
)
from laion_c.cli import main
from PIL import Image


@pytest.fixture(scope="module")
def grey(photos):
    """An 8-bit grey photo (H, W) uint8 covering 0..255 in its corner, and its 16-bit twin."""
    g = np.asarray(Image.fromarray(photos[0]).convert("L")).copy()
    g[:16, :16] = np.arange(256, dtype=np.uint8).reshape(16, 16)  # every grey level
    return g


def modes(g):
    """The same picture in each high-bit mode (the 8-bit peer is ``Image.fromarray(g)``)."""
    return {
        "I;16": Image.fromarray(g.astype(np.uint16) * 257),
        "I": Image.fromarray(g.astype(np.int32) * 257),
        "F [0, 1]": Image.fromarray(g.astype(np.float32) / 255),
        "F [0, 255]": Image.fromarray(g.astype(np.float32)),
    }


def test_pil_modes_equal_the_8_bit_peer_in_corrupt_and_distort(grey):
    peer = Image.fromarray(grey)
    for label, image in modes(grey).items():
        assert image.mode == label.split()[0]
        for name in ("vertical_lines", "glitched"):
            want = np.asarray(corrupt(peer, name, 1))
            assert np.array_equal(np.asarray(corrupt(image, name, 1)), want), (label, name)
        pre = np.asarray(preprocess(image, "glitched", 1))
        assert np.array_equal(pre, np.asarray(preprocess(peer, "glitched", 1))), label
        assert np.array_equal(
            np.asarray(distort(image, "vertical_lines", 2)),
            np.asarray(distort(peer, "vertical_lines", 2)),
        )


@pytest.mark.parametrize(
    ("image", "match"),
    [
        (Image.fromarray(np.full((40, 40), -0.5, np.float32)), r"mode 'F'.*\[0, 1\] or \[0, 255\]"),
        (Image.fromarray(np.full((40, 40), 300.0, np.float32)), r"mode 'F'"),
        (Image.fromarray(np.full((40, 40), np.nan, np.float32)), r"mode 'F'"),
        (Image.fromarray(np.full((40, 40), -3, np.int32)), r"'I' image is read as 16-bit"),
        (Image.fromarray(np.full((40, 40), 70000, np.int32)), r"'I' image is read as 16-bit"),
        (Image.new("La", (40, 40)), r"mode 'La'"),
    ],
)
def test_unmappable_modes_are_refused_naming_img_and_mode(image, match):
    with pytest.raises(ValueError, match=match) as info:
        corrupt(image, "glitched", 1)
    assert "`img`" in str(info.value)


def save_pair(folder, grey):
    """``folder/{g8,g16}.png``: the 8-bit grey photo and its 16-bit PNG twin."""
    folder.mkdir(parents=True, exist_ok=True)
    Image.fromarray(grey).save(folder / "g8.png")
    Image.fromarray(grey.astype(np.uint16) * 257).save(folder / "g16.png")
    with Image.open(folder / "g16.png") as image:
        assert image.mode.startswith("I")  # really a high-bit file


def test_build_eval_tiles_and_cli_read_16_bit_files_like_8_bit(grey, tmp_path, capsys):
    src = tmp_path / "src" / "cat"
    save_pair(src, grey)
    out = tmp_path / "out"
    build_dataset(tmp_path / "src", out, distortions="vertical_lines", levels=1)
    cell = out / "vertical_lines" / "intensity_level_1" / "cat"
    a, b = (Image.open(cell / f"{s}_vertical_lines_1.JPEG") for s in ("g8", "g16"))
    with a, b:
        assert np.array_equal(np.asarray(a), np.asarray(b))

    seen = []

    def model(x):
        seen.append(x.clone())
        return torch.zeros(len(x), 1000)

    root = tmp_path / "root" / "glitched" / "intensity_level_1" / "cat"
    save_pair(root, grey)
    evaluate(model, tmp_path / "root", normalize=None, distortions="glitched", levels=1)
    batch = torch.cat(seen)
    assert batch.shape[0] == 2
    assert torch.equal(batch[0], batch[1])  # files sorted: g16, g8

    t16 = build_tiles([src / "g16.png"], sizes=[4])[4].tiles
    assert np.array_equal(t16, build_tiles([src / "g8.png"], sizes=[4])[4].tiles)

    for stem in ("g8", "g16"):
        argv = ["distort", str(src / f"{stem}.png"), str(tmp_path / f"{stem}_out.png")]
        assert main([*argv, "--distortion", "vertical_lines", "--level", "1"]) == 0
    with Image.open(tmp_path / "g8_out.png") as a, Image.open(tmp_path / "g16_out.png") as b:
        assert np.array_equal(np.asarray(a), np.asarray(b))


def test_a_float_file_out_of_range_is_refused_naming_the_file(tmp_path):
    src = tmp_path / "src" / "cat"
    src.mkdir(parents=True)
    Image.fromarray(np.full((40, 40), 1000.0, np.float32)).save(src / "f.tif")
    with pytest.raises(ValueError, match=r"f\.tif.*`src`.*mode 'F'"):
        build_dataset(tmp_path / "src", tmp_path / "out", distortions="glitched", levels=1)
