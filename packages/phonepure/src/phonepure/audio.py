r"""Audio I/O and the complex STFT representation of the refiner (stage 2).

The STFT follows SGMSE+/StoRM (sp-uhh/sgmse, ``data_module.py``): ``n_fft = 510`` (256 bins),
hop 128, periodic Hann window, centred frames, and the amplitude compression

$$ c(X) = \beta\,|X|^{\alpha}\,e^{j\angle X}, \qquad \alpha = 0.5,\ \beta = 0.33. $$

STFT and resampling are library calls (``torch.stft``, ``scipy.signal.resample_poly``), never
hand-written.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import torch

__all__ = ["N_FFT", "HOP", "SR", "load", "resample", "stft", "istft", "compress", "decompress"]

N_FFT = 510
"""FFT size of the refiner's STFT (256 bins), SGMSE+ default."""
HOP = 128
"""Hop length in samples of the refiner's STFT, SGMSE+ default."""
SR = 16000
"""Sampling rate in Hz of every model of the library."""


def check_wav(wav, name: str = "wav", *, peak: bool = False) -> torch.Tensor:
    """Validate a waveform: a float tensor of shape (T,), (1, T) or (B, 1, T), finite, non-empty.

    Parameters
    ----------
    wav : torch.Tensor or numpy.ndarray
        The waveform.
    name : str, default="wav"
        Argument name used in error messages.
    peak : bool, default=False
        Also require ``max|wav| <= 1`` (the purifier's input range).

    Returns
    -------
    torch.Tensor
        `wav` as a floating tensor (numpy input becomes float32).

    Raises
    ------
    TypeError
        If `wav` is not a tensor/array or not floating point.
    ValueError
        If the shape is not (T,), (1, T) or (B, 1, T), it is empty, holds NaN/inf, or (with
        `peak`) exceeds 1 in magnitude.
    """
    if isinstance(wav, np.ndarray):
        if not np.issubdtype(wav.dtype, np.floating):
            raise TypeError(f"`{name}` must be floating point, got dtype {wav.dtype}")
        wav = torch.from_numpy(np.ascontiguousarray(wav, dtype=np.float32))
    if not isinstance(wav, torch.Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor or numpy array, got {type(wav).__name__}")
    if not wav.is_floating_point():
        raise TypeError(f"`{name}` must be floating point, got dtype {wav.dtype}")
    ok = (
        wav.ndim == 1
        or (wav.ndim == 2 and wav.shape[0] == 1)
        or (wav.ndim == 3 and wav.shape[1] == 1)
    )
    if not ok:
        raise ValueError(
            f"`{name}` must have shape (T,), (1, T) or (B, 1, T); got {tuple(wav.shape)}"
        )
    if wav.numel() == 0 or wav.shape[-1] == 0:
        raise ValueError(f"`{name}` is empty (shape {tuple(wav.shape)})")
    if not bool(torch.isfinite(wav).all()):
        raise ValueError(f"`{name}` contains NaN or inf")
    if peak and float(wav.detach().abs().max()) > 1.0 + 1e-6:
        raise ValueError(
            f"`{name}` must lie in [-1, 1] (max |x| = {float(wav.detach().abs().max()):.3f}); "
            "scale it first"
        )
    return wav


def _check_sr(sr, name: str = "sr") -> int:
    if isinstance(sr, bool) or not isinstance(sr, int | np.integer):
        raise TypeError(f"`{name}` must be an int, got {type(sr).__name__}")
    if sr <= 0:
        raise ValueError(f"`{name}` must be > 0, got {sr}")
    return int(sr)


def resample(wav: torch.Tensor, sr_in: int, sr_out: int = SR) -> torch.Tensor:
    """Resample along the last axis with ``scipy.signal.resample_poly`` (polyphase, Kaiser).

    Parameters
    ----------
    wav : torch.Tensor of shape (..., T), float
        Signal.
    sr_in, sr_out : int
        Input and output rates in Hz, both > 0.

    Returns
    -------
    torch.Tensor of shape (..., T'), same dtype, ``T' = ceil(T * sr_out / sr_in)``.

    Raises
    ------
    ValueError
        If a rate is not positive.
    """
    sr_in, sr_out = _check_sr(sr_in, "sr_in"), _check_sr(sr_out, "sr_out")
    if sr_in == sr_out:
        return wav
    from scipy.signal import resample_poly

    frac = Fraction(sr_out, sr_in)
    out = resample_poly(
        wav.detach().cpu().double().numpy(), frac.numerator, frac.denominator, axis=-1
    )
    return torch.from_numpy(np.ascontiguousarray(out)).to(dtype=wav.dtype, device=wav.device)


def load(path, sr: int = SR) -> torch.Tensor:
    """Read an audio file (``soundfile``), mix to mono and resample to `sr`.

    Parameters
    ----------
    path : str or pathlib.Path
        Any format libsndfile reads (wav, flac, ogg).
    sr : int, default=16000
        Output rate in Hz.

    Returns
    -------
    torch.Tensor of shape (1, T), float32, in [-1, 1] (integer formats are scaled to it by
    libsndfile; the resampler's ringing of a full-scale signal is clipped).

    Raises
    ------
    FileNotFoundError
        If `path` does not exist.
    ValueError
        If `sr` is not positive, or the file is empty, holds NaN/inf samples or (a float file)
        samples beyond [-1, 1], which would otherwise be clipped: scale it first.
    """
    import soundfile as sf

    sr = _check_sr(sr)
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"`path` does not exist: {path}")
    data, rate = sf.read(str(path), dtype="float32", always_2d=True)
    if data.shape[0] == 0:
        raise ValueError(f"`path` holds no samples: {path}")
    if not np.isfinite(data).all():
        raise ValueError(f"`path` holds NaN or inf samples: {path}")
    top = float(np.abs(data).max())
    if top > 1.0 + 1e-6:
        raise ValueError(
            f"`path` holds samples beyond [-1, 1] (max |x| = {top:.3f}): {path}; scale it first "
            "(divide by its peak), it would otherwise be clipped"
        )
    mono = torch.from_numpy(data.mean(axis=1)).float()[None]
    return resample(mono, int(rate), sr).clamp(-1.0, 1.0)


def _window(device, dtype=torch.float32) -> torch.Tensor:
    return torch.hann_window(N_FFT, periodic=True, device=device, dtype=dtype)


def stft(wav: torch.Tensor) -> torch.Tensor:
    """Complex STFT of the refiner: n_fft 510, hop 128, periodic Hann, centred (reflect pad).

    Parameters
    ----------
    wav : torch.Tensor of shape (..., T), float
        Signal at 16 kHz.

    Returns
    -------
    torch.Tensor of shape (..., 256, 1 + T // 128), complex.

    Raises
    ------
    ValueError
        If `wav` is empty or not finite.
    """
    if not isinstance(wav, torch.Tensor) or wav.numel() == 0:
        raise ValueError("`wav` must be a non-empty tensor")
    if not bool(torch.isfinite(wav).all()):
        raise ValueError("`wav` contains NaN or inf")
    if wav.shape[-1] <= N_FFT // 2:
        raise ValueError(f"`wav` must have more than {N_FFT // 2} samples, got {wav.shape[-1]}")
    lead = wav.shape[:-1]
    flat = wav.reshape(-1, wav.shape[-1])
    spec = torch.stft(
        flat,
        n_fft=N_FFT,
        hop_length=HOP,
        window=_window(wav.device, flat.dtype),
        center=True,
        return_complex=True,
    )
    return spec.reshape(*lead, spec.shape[-2], spec.shape[-1])


def istft(spec: torch.Tensor, length: int) -> torch.Tensor:
    """Inverse of :func:`stft` (``torch.istft``, same window and hop), cropped to `length`.

    Parameters
    ----------
    spec : torch.Tensor of shape (..., 256, N), complex
        Spectrogram.
    length : int
        Output length in samples (> 0).

    Returns
    -------
    torch.Tensor of shape (..., length), real.

    Raises
    ------
    ValueError
        If `spec` does not have 256 bins or `length` is not positive.
    """
    if spec.ndim < 2 or spec.shape[-2] != N_FFT // 2 + 1:
        raise ValueError(
            f"`spec` must have {N_FFT // 2 + 1} frequency bins, got {tuple(spec.shape)}"
        )
    if int(length) <= 0:
        raise ValueError(f"`length` must be > 0, got {length}")
    lead = spec.shape[:-2]
    flat = spec.reshape(-1, spec.shape[-2], spec.shape[-1])
    real_dtype = flat.real.dtype
    out = torch.istft(
        flat,
        n_fft=N_FFT,
        hop_length=HOP,
        window=_window(spec.device, real_dtype),
        center=True,
        length=int(length),
    )
    return out.reshape(*lead, out.shape[-1])


def compress(spec: torch.Tensor, alpha: float = 0.5, beta: float = 0.33) -> torch.Tensor:
    r"""Amplitude compression of SGMSE+: $c(X) = \beta |X|^\alpha e^{j\angle X}$.

    Parameters
    ----------
    spec : torch.Tensor, complex
        STFT.
    alpha, beta : float, default=0.5, 0.33
        Exponent and scale (SGMSE+ ``spec_abs_exponent``, ``spec_factor``).

    Returns
    -------
    torch.Tensor, complex, same shape.
    """
    if not spec.is_complex():
        raise TypeError("`spec` must be a complex tensor")
    return beta * spec.abs() ** alpha * torch.exp(1j * spec.angle())


def decompress(spec: torch.Tensor, alpha: float = 0.5, beta: float = 0.33) -> torch.Tensor:
    r"""Inverse of :func:`compress`: $X = (|c|/\beta)^{1/\alpha} e^{j\angle c}$.

    Parameters
    ----------
    spec : torch.Tensor, complex
        Compressed STFT.
    alpha, beta : float, default=0.5, 0.33
        As in :func:`compress`.

    Returns
    -------
    torch.Tensor, complex, same shape.
    """
    if not spec.is_complex():
        raise TypeError("`spec` must be a complex tensor")
    return (spec.abs() / beta) ** (1.0 / alpha) * torch.exp(1j * spec.angle())


def n_frames(n_samples: int) -> int:
    """STFT frame count ``1 + n_samples // 128`` of a centred STFT."""
    return 1 + int(n_samples) // HOP


def peak_normalise(wav: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Divide by ``max|wav|`` (SGMSE+ inference); returns the scaled signal and the factor."""
    peak = float(wav.detach().abs().max())
    peak = peak if peak > 0 and math.isfinite(peak) else 1.0
    return wav / peak, peak
