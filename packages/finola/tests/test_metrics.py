"""psnr: the CompressAI convention (clamp to [0, 1], per image, mean) against scikit-image."""

import math

import numpy as np
import pytest
import torch
from finola.metrics import psnr

skimage_metrics = pytest.importorskip("skimage.metrics")


def _pair(shape=(4, 3, 16, 12), noise=0.1, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.rand(shape, generator=g, dtype=torch.float64)
    x = y + noise * torch.randn(shape, generator=g, dtype=torch.float64)
    return x, y


def test_equals_skimage_per_image_then_mean():  # spec test 8
    x, y = _pair()
    expected = [
        skimage_metrics.peak_signal_noise_ratio(
            y[i].numpy(), x[i].clamp(0, 1).numpy(), data_range=1
        )
        for i in range(len(x))
    ]
    per_image = psnr(x, y, per_image=True)
    assert per_image.shape == (4,)
    assert per_image.dtype == torch.float64
    np.testing.assert_allclose(per_image.numpy(), expected, rtol=1e-12)
    value = psnr(x, y)
    assert isinstance(value, float)
    assert value == pytest.approx(float(np.mean(expected)), rel=1e-12)
    # the mean of per-image PSNRs, not the PSNR of the mean MSE
    pooled = 10 * math.log10(1 / float((x.clamp(0, 1) - y).square().mean()))
    assert value != pytest.approx(pooled, rel=1e-9)


def test_float32_single_image_and_numpy():
    x, y = _pair(shape=(3, 20, 20), seed=1)
    expected = skimage_metrics.peak_signal_noise_ratio(
        y.numpy(), x.clamp(0, 1).numpy(), data_range=1
    )
    assert psnr(x, y) == pytest.approx(expected, rel=1e-12)
    assert psnr(x.float(), y.float()) == pytest.approx(expected, rel=1e-5)
    assert psnr(x.numpy(), y.numpy()) == pytest.approx(expected, rel=1e-12)
    assert psnr(x, y, per_image=True).shape == (1,)


def test_clamps_the_reconstruction():
    y = torch.full((2, 3, 8, 8), 0.5)
    assert psnr(torch.full_like(y, 1.7), y) == pytest.approx(psnr(torch.ones_like(y), y))
    with pytest.raises(ValueError, match="over twice data_range"):  # new-user trial: 0-255 x
        psnr(torch.full_like(y, 200.0), y)
    assert psnr(torch.full_like(y, -3.0), y) == pytest.approx(10 * math.log10(1 / 0.25))
    assert psnr(y + 0.1, y) == pytest.approx(20.0, abs=1e-5)
    assert psnr(y, y) == math.inf


def test_data_range():
    x, y = _pair(seed=2)
    x255, y255 = x * 255, y * 255
    assert psnr(x255, y255, data_range=255) == pytest.approx(psnr(x, y), rel=1e-12)
    with pytest.warns(UserWarning, match="CompressAI#190"):  # [0, 1] images, peak 255
        psnr(x, y, data_range=255)


@pytest.mark.parametrize("scale", [255.0, 2.0])
def test_reference_outside_unit_range_raises(scale):  # spec test 8, CompressAI#190
    x, y = _pair(seed=3)
    with pytest.raises(ValueError, match=r"`y`.*outside \[0, 1\]"):
        psnr(x * scale, y * scale)
    with pytest.raises(ValueError, match="`y`"):
        psnr(x, y - 0.5)
    with pytest.raises(ValueError, match="`y`"):
        psnr(torch.randint(0, 256, (3, 8, 8), dtype=torch.uint8), torch.full((3, 8, 8), 200))


def test_bad_input():
    x, y = _pair()
    with pytest.raises(ValueError, match="same shape"):
        psnr(x, y[:2])
    with pytest.raises(ValueError, match=r"`x`.*NaN"):
        psnr(torch.full_like(x, math.nan), y)
    with pytest.raises(ValueError, match=r"`y`.*NaN"):
        psnr(x, torch.full_like(y, math.nan))
    with pytest.raises(ValueError, match=r"`x`.*empty"):
        psnr(x[:0], y[:0])
    with pytest.raises(ValueError, match=r"`x`.*shape"):
        psnr(x[0, 0], y[0, 0])
    with pytest.raises(ValueError, match="`data_range`"):
        psnr(x, y, data_range=0)
    with pytest.raises(TypeError, match="`x`"):
        psnr(x.tolist(), y)
    with pytest.raises(TypeError, match="`per_image`"):
        psnr(x, y, per_image=1)
