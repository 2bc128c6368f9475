import numpy as np
import pytest
import torch
from phonepure import compress, decompress, istft, load, resample, stft


@pytest.mark.parametrize("T", [256, 300, 16000, 16001])
def test_stft_bins_frames_and_inverse(T):
    g = torch.Generator().manual_seed(T)
    x = torch.rand(2, T, generator=g, dtype=torch.float64) - 0.5
    X = stft(x)
    assert X.shape == (2, 256, 1 + T // 128)
    torch.testing.assert_close(istft(X, T), x, atol=1e-5, rtol=0)


def test_compress_inverse():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(256, 40, dtype=torch.complex128, generator=g)
    torch.testing.assert_close(decompress(compress(X)), X, atol=1e-6, rtol=0)
    torch.testing.assert_close(compress(X).abs(), 0.33 * X.abs() ** 0.5)


def test_stft_uses_periodic_hann_centered():
    x = torch.randn(1000, dtype=torch.float64)
    ref = torch.stft(
        x,
        510,
        128,
        window=torch.hann_window(510, periodic=True, dtype=torch.float64),
        center=True,
        return_complex=True,
    )
    torch.testing.assert_close(stft(x), ref)


def test_resample_matches_scipy():
    from scipy.signal import resample_poly

    x = np.random.default_rng(0).standard_normal(2205)
    out = resample(torch.from_numpy(x), 22050, 16000)
    torch.testing.assert_close(out, torch.from_numpy(resample_poly(x, 320, 441)))


def test_load_reads_and_resamples(tmp_path):
    import soundfile as sf

    sf.write(tmp_path / "a.wav", np.zeros((4800, 2), np.float32), 48000)
    assert load(tmp_path / "a.wav").shape == (1, 1600)
    with pytest.raises(FileNotFoundError, match="path"):
        load(tmp_path / "missing.wav")
    with pytest.raises(ValueError, match="sr"):
        load(tmp_path / "a.wav", sr=0)


def test_bad_inputs():
    with pytest.raises(ValueError, match="wav"):
        stft(torch.zeros(0))
    with pytest.raises(ValueError, match="more than 255"):
        stft(torch.zeros(255))
    with pytest.raises(ValueError, match="NaN"):
        stft(torch.tensor([float("nan")] * 300))
    with pytest.raises(ValueError, match="spec"):
        istft(torch.zeros(100, 3, dtype=torch.complex64), 100)
    with pytest.raises(ValueError, match="length"):
        istft(torch.zeros(256, 3, dtype=torch.complex64), 0)
    with pytest.raises(TypeError, match="spec"):
        compress(torch.zeros(3))
    with pytest.raises(ValueError, match="sr_in"):
        resample(torch.zeros(10), 0, 16000)
