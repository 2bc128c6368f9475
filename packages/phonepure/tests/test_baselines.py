import numpy as np
import pytest
import torch
from phonepure import (
    BASELINES,
    average_smoothing,
    bandpass,
    downsample,
    lowpass,
    median_smoothing,
    quantize,
)
from scipy.ndimage import uniform_filter1d
from scipy.signal import butter, medfilt, resample_poly, sosfiltfilt

X = np.random.default_rng(0).uniform(-0.5, 0.5, 3001)


def _t(x):
    return torch.from_numpy(x)


def test_as_equals_uniform_filter1d():
    np.testing.assert_allclose(
        average_smoothing(_t(X)).numpy(), uniform_filter1d(X, 3, mode="reflect"), atol=1e-6
    )


def test_ms_equals_medfilt():
    np.testing.assert_allclose(median_smoothing(_t(X)).numpy(), medfilt(X, 3), atol=1e-6)


def test_ds_equals_resample_poly():
    ref = resample_poly(resample_poly(X, 1, 2), 2, 1)[: X.size]
    np.testing.assert_allclose(downsample(_t(X)).numpy(), ref, atol=1e-6)


def test_filters_equal_sosfiltfilt():
    sos = butter(5, 4000, btype="lowpass", fs=16000, output="sos")
    np.testing.assert_allclose(lowpass(_t(X)).numpy(), sosfiltfilt(sos, X), atol=1e-6)
    sos = butter(5, [300, 4000], btype="bandpass", fs=16000, output="sos")
    np.testing.assert_allclose(bandpass(_t(X)).numpy(), sosfiltfilt(sos, X), atol=1e-6)


def test_qt_on_int16_grid():
    out = quantize(_t(X)).numpy()
    ref = np.round(X * 32768 / 128) * 128 / 32768
    np.testing.assert_allclose(out, ref, atol=1e-9)


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_interface_keeps_shape(name):
    for shape in [(500,), (1, 500), (2, 1, 500)]:
        assert BASELINES[name](torch.zeros(shape)).shape == shape


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_bad_wav_rejected(name):
    with pytest.raises(ValueError, match="shape"):
        BASELINES[name](torch.zeros(2, 3, 100))
    with pytest.raises(ValueError, match="NaN"):
        BASELINES[name](torch.full((100,), float("inf")))
    with pytest.raises(ValueError, match="empty"):
        BASELINES[name](torch.zeros(0))


def test_bad_arguments():
    with pytest.raises(ValueError, match="kernel"):
        average_smoothing(torch.zeros(10), kernel=2)
    with pytest.raises(ValueError, match="kernel"):
        median_smoothing(torch.zeros(10), kernel=0)
    with pytest.raises(ValueError, match="cutoff"):
        lowpass(torch.zeros(100), cutoff=9000)
    with pytest.raises(ValueError, match="low"):
        bandpass(torch.zeros(100), low=5000, high=4000)
    with pytest.raises(ValueError, match="step"):
        quantize(torch.zeros(10), step=0)
    with pytest.raises(ValueError, match="factor"):
        downsample(torch.zeros(10), factor=0)
