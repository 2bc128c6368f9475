r"""Input-transformation baselines of the paper's comparison (De-AntiFake Table 1), one interface.

Each baseline maps a waveform (T,), (1, T) or (B, 1, T) at 16 kHz to the same shape:
AS (average smoothing, window 3), MS (median smoothing, kernel 3), DS (down- then up-sampling
by 2, ``resample_poly``), LPF (Butterworth low-pass 4 kHz, zero phase), BPF (0.3-4 kHz), QT
(quantisation to a step of 128 on the int16 scale), Gaussian (additive noise) and AudioPure
(DiffWave purification, stage 1 alone). Filters and resamplers are scipy calls.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .audio import SR, check_wav

__all__ = [
    "average_smoothing",
    "median_smoothing",
    "downsample",
    "lowpass",
    "bandpass",
    "quantize",
    "gaussian_noise",
    "audiopure",
    "BASELINES",
]


def _flat(wav) -> tuple[torch.Tensor, tuple[int, ...]]:
    wav = check_wav(wav)
    return wav.reshape(-1, wav.shape[-1]), tuple(wav.shape)


def _check_odd_kernel(kernel: int) -> None:
    """Raise ``ValueError`` naming `kernel` unless it is an odd int >= 1."""
    if isinstance(kernel, bool) or not isinstance(kernel, int) or kernel < 1 or kernel % 2 == 0:
        raise ValueError(f"`kernel` must be an odd int >= 1, got {kernel!r}")


def average_smoothing(wav, kernel: int = 3) -> torch.Tensor:
    r"""AS: moving average, $y_n = \frac1k\sum_{|i|\le k/2} x_{n+i}$, edges reflected
    (= ``scipy.ndimage.uniform_filter1d(mode='reflect')``).

    Parameters
    ----------
    wav : torch.Tensor of shape (T,), (1, T) or (B, 1, T), float
    kernel : int, default=3
        Odd window (>= 1).

    Returns
    -------
    torch.Tensor, same shape.

    Raises
    ------
    ValueError
        On bad audio or an even/non-positive `kernel`.
    """
    x, shape = _flat(wav)
    _check_odd_kernel(kernel)
    h = kernel // 2
    xp = torch.cat([x[:, :h].flip(-1), x, x[:, x.shape[1] - h :].flip(-1)], dim=1) if h else x
    out = xp.unfold(1, kernel, 1).mean(-1)
    return out.reshape(shape)


def median_smoothing(wav, kernel: int = 3) -> torch.Tensor:
    """MS: running median, zero-padded edges (= ``scipy.signal.medfilt``).

    Parameters
    ----------
    wav : torch.Tensor of shape (T,), (1, T) or (B, 1, T), float
    kernel : int, default=3
        Odd window (>= 1).

    Returns
    -------
    torch.Tensor, same shape.

    Raises
    ------
    ValueError
        On bad audio or an even/non-positive `kernel`.
    """
    x, shape = _flat(wav)
    _check_odd_kernel(kernel)
    h = kernel // 2
    xp = torch.nn.functional.pad(x, (h, h))
    return xp.unfold(1, kernel, 1).median(-1).values.reshape(shape)


def _scipy(fn: Callable[[np.ndarray], np.ndarray], wav) -> torch.Tensor:
    x, shape = _flat(wav)
    out = fn(x.detach().cpu().double().numpy())
    return torch.from_numpy(np.ascontiguousarray(out)).to(x.dtype).reshape(shape)


def downsample(wav, factor: int = 2) -> torch.Tensor:
    """DS: ``resample_poly(x, 1, factor)`` then ``resample_poly(., factor, 1)``, cropped.

    Parameters
    ----------
    wav : torch.Tensor of shape (T,), (1, T) or (B, 1, T), float
    factor : int, default=2
        Down-sampling factor (>= 1).

    Returns
    -------
    torch.Tensor, same shape.
    """
    from scipy.signal import resample_poly

    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
        raise ValueError(f"`factor` must be an int >= 1, got {factor!r}")

    def f(a: np.ndarray) -> np.ndarray:
        T = a.shape[-1]
        up = resample_poly(resample_poly(a, 1, factor, axis=-1), factor, 1, axis=-1)
        return np.pad(up, ((0, 0), (0, max(0, T - up.shape[-1]))))[:, :T]

    return _scipy(f, wav)


def _sos_filter(wav, btype: str, freqs, order: int) -> torch.Tensor:
    from scipy.signal import butter, sosfiltfilt

    sos = butter(order, freqs, btype=btype, fs=SR, output="sos")
    # sosfiltfilt's default reflect padding (scipy's own formula) needs T > padlen
    padlen = 3 * (2 * len(sos) + 1 - min(int((sos[:, 2] == 0).sum()), int((sos[:, 5] == 0).sum())))

    def f(a: np.ndarray) -> np.ndarray:
        if a.shape[-1] <= padlen:
            raise ValueError(
                f"`wav` has {a.shape[-1]} samples; this zero-phase {btype} filter (order "
                f"{order}) needs at least {padlen + 1}"
            )
        return sosfiltfilt(sos, a, axis=-1)

    return _scipy(f, wav)


def lowpass(wav, cutoff: float = 4000.0, order: int = 5) -> torch.Tensor:
    """LPF: zero-phase Butterworth low-pass (``butter`` + ``sosfiltfilt``), 16 kHz input.

    Parameters
    ----------
    wav : torch.Tensor of shape (T,), (1, T) or (B, 1, T), float
    cutoff : float, default=4000
        Cut-off in Hz, in (0, 8000).
    order : int, default=5
        Filter order.

    Returns
    -------
    torch.Tensor, same shape.
    """
    if not 0 < cutoff < SR / 2:
        raise ValueError(f"`cutoff` must be in (0, {SR // 2}) Hz, got {cutoff!r}")
    return _sos_filter(wav, "lowpass", cutoff, order)


def bandpass(wav, low: float = 300.0, high: float = 4000.0, order: int = 5) -> torch.Tensor:
    """BPF: zero-phase Butterworth band-pass `low`-`high` Hz.

    Parameters
    ----------
    wav : torch.Tensor of shape (T,), (1, T) or (B, 1, T), float
    low, high : float, default=300, 4000
        Band edges in Hz, ``0 < low < high < 8000``.
    order : int, default=5

    Returns
    -------
    torch.Tensor, same shape.
    """
    if not 0 < low < high < SR / 2:
        raise ValueError(f"`low`/`high` must satisfy 0 < low < high < {SR // 2}, got {low}, {high}")
    return _sos_filter(wav, "bandpass", [low, high], order)


def quantize(wav, step: int = 128) -> torch.Tensor:
    r"""QT: $\mathrm{round}(32768x/q)\,q/32768$ (quantisation on the int16 scale, step $q$).

    Parameters
    ----------
    wav : torch.Tensor of shape (T,), (1, T) or (B, 1, T), float
    step : int, default=128

    Returns
    -------
    torch.Tensor, same shape.
    """
    x, shape = _flat(wav)
    if isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise ValueError(f"`step` must be an int >= 1, got {step!r}")
    return (torch.round(x * 32768.0 / step) * step / 32768.0).reshape(shape)


def gaussian_noise(
    wav, sigma: float = 0.005, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Gaussian: add N(0, sigma^2) noise.

    Parameters
    ----------
    wav : torch.Tensor of shape (T,), (1, T) or (B, 1, T), float
    sigma : float, default=0.005
        Noise standard deviation (>= 0).
    generator : torch.Generator, optional

    Returns
    -------
    torch.Tensor, same shape.
    """
    x, shape = _flat(wav)
    if not sigma >= 0:
        raise ValueError(f"`sigma` must be >= 0, got {sigma!r}")
    return (x + sigma * torch.randn(x.shape, generator=generator)).reshape(shape)


def audiopure(purifier: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """AudioPure: the DiffWave purifier (stage 1) alone, wrapped in the baseline interface."""

    def run(wav, generator: torch.Generator | None = None) -> torch.Tensor:
        with torch.no_grad():
            return purifier(check_wav(wav).clamp(-1, 1), generator=generator)

    return run


BASELINES: dict[str, Callable[..., torch.Tensor]] = {
    "AS": average_smoothing,
    "MS": median_smoothing,
    "DS": downsample,
    "LPF": lowpass,
    "BPF": bandpass,
    "QT": quantize,
    "Gaussian": gaussian_noise,
}
"""Name -> transform ``f(wav) -> wav`` (AudioPure needs a model: :func:`audiopure`)."""
