"""Real invisible watermarks through invisible-watermark (spec Sec. 5, test 7), the attacks and
PSNR against scikit-image."""

import io

import numpy as np
import pytest

pytest.importorskip("imwatermark")
from PIL import Image, JpegImagePlugin
from skimage import data
from wmarkgpt.invisible import (
    bit_accuracy,
    crop_attack,
    decode_invisible,
    embed_invisible,
    jpeg,
    psnr,
    resize_attack,
)

BITS = np.random.default_rng(3).integers(0, 2, 32).astype(bool)


@pytest.fixture(scope="module")
def cover():
    return data.astronaut()[:256, :320].copy()  # 320 x 256: the smallest legal area, non-square


@pytest.mark.slow
@pytest.mark.parametrize("method", ["dwtDctSvd", "rivaGan"])
def test_round_trip_bit_accuracy_is_one(cover, method):
    stego = embed_invisible(cover, BITS, method)
    assert stego.shape == cover.shape
    assert stego.dtype == np.uint8
    assert bit_accuracy(decode_invisible(stego, 32, method), BITS) == 1.0
    assert psnr(cover, stego) > 30


def test_dwtdctsvd_survives_jpeg_q50_444(cover):
    stego = embed_invisible(cover, BITS, "dwtDctSvd")
    kept = bit_accuracy(decode_invisible(jpeg(stego, 50, "4:4:4"), 32, "dwtDctSvd"), BITS)
    assert kept >= 0.9


@pytest.mark.parametrize(("subsampling", "code"), [("4:4:4", 0), ("4:2:2", 1), ("4:2:0", 2)])
def test_jpeg_attack_uses_the_asked_chroma_subsampling(cover, subsampling, code, monkeypatch):
    saved = {}
    original = Image.Image.save

    def spy(self, fp, format=None, **params):
        original(self, fp, format=format, **params)
        if isinstance(fp, io.BytesIO):
            saved["bytes"] = fp.getvalue()

    monkeypatch.setattr(Image.Image, "save", spy)
    out = jpeg(cover, 50, subsampling)
    assert out.shape == cover.shape
    assert JpegImagePlugin.get_sampling(Image.open(io.BytesIO(saved["bytes"]))) == code


def test_psnr_equals_scikit_image(cover):
    from skimage.metrics import peak_signal_noise_ratio

    noisy = np.clip(
        cover.astype(int) + np.random.default_rng(0).integers(-6, 7, cover.shape), 0, 255
    ).astype(np.uint8)
    assert abs(psnr(cover, noisy) - peak_signal_noise_ratio(cover, noisy, data_range=255)) < 1e-12
    assert psnr(cover, cover) == float("inf")


def test_attack_shapes(cover):
    assert resize_attack(cover, 0.5).shape == cover.shape
    assert crop_attack(cover, 0.5).shape == (128, 160, 3)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda c: embed_invisible(c[:200, :200], BITS, "dwtDctSvd"), "256"),
        (lambda c: embed_invisible(c, BITS[:31], "rivaGan"), "32 bits"),
        (lambda c: embed_invisible(c, BITS, "lsb"), "method"),
        (lambda c: embed_invisible(c, np.array([0, 2, 1]), "dwtDct"), "bits"),
        (lambda c: embed_invisible(c, np.array([], bool), "dwtDct"), "bits"),
        (lambda c: decode_invisible(c, 16, "rivaGan"), "n_bits"),
        (lambda c: jpeg(c, 0), "quality"),
        (lambda c: jpeg(c, 50, "4:1:1"), "subsampling"),
        (lambda c: psnr(c, c[:10]), "shape"),
        (lambda c: resize_attack(c, 0), "scale"),
        (lambda c: crop_attack(c, 1.5), "keep"),
        (lambda c: bit_accuracy([1, 0], [1]), "bits"),
        (lambda c: bit_accuracy([2, 0], [1, 0]), "decoded"),
    ],
)
def test_invisible_refuses_bad_input(cover, call, match):
    with pytest.raises(ValueError, match=match):
        call(cover)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda c: embed_invisible(c, np.resize(BITS, 1281), "dwtDctSvd"), "capacity of 1280"),
        (lambda c: decode_invisible(c, 1281, "dwtDct"), "capacity"),
        (lambda c: embed_invisible(c, BITS, "dwtDct", scales=[36]), "scales"),
        (lambda c: embed_invisible(c, BITS, "dwtDct", scales=[0, float("nan"), 36]), "scales"),
    ],
)
def test_capacity_and_scales_are_checked(cover, call, match):
    with pytest.raises(ValueError, match=match):
        call(cover)
