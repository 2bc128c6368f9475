r"""Speaker verification with Resemblyzer's GE2E encoder, rewritten to be differentiable.

Pipeline (resemble-ai/Resemblyzer 0.1.4, ``audio.py`` and ``voice_encoder.py``): 16 kHz, volume
normalised to -30 dBFS (increase only), power STFT (n_fft 400, hop 160, Hann, centred) ->
40 Slaney mel bands (``librosa.filters.mel``), no log; 3-layer LSTM (256) -> Linear -> ReLU ->
L2 norm on 160-frame partials every 77 frames; the utterance embedding is the L2-normalised mean
of the partial embeddings. No webrtcvad trimming (it would shift a perturbation).

$$ e(x) = \frac{\bar e}{\lVert \bar e\rVert}, \quad
   \bar e = \frac{1}{K}\sum_{k}
   \frac{\mathrm{ReLU}(W h_k + b)}{\lVert \mathrm{ReLU}(W h_k + b)\rVert}. $$
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .audio import check_wav

MIN_SAMPLES = 1600  # 0.1 s: below this GE2E.embed warns

__all__ = ["GE2E", "compute_partial_slices", "normalize_volume", "eer"]

SR = 16000
N_FFT = 400
HOP = 160
N_MELS = 40
PARTIAL = 160


def compute_partial_slices(
    n_samples: int, rate: float = 1.3, min_coverage: float = 0.75
) -> tuple[list[slice], list[slice]]:
    """Partial-utterance slices of Resemblyzer (160 mel frames, step ``round(16000/rate/160)``).

    Parameters
    ----------
    n_samples : int
        Waveform length (>= 1).
    rate : float, default=1.3
        Partials per second.
    min_coverage : float, default=0.75
        Keep the last partial if at least this fraction is covered.

    Returns
    -------
    (list of slice, list of slice)
        Waveform and mel slices.

    Raises
    ------
    ValueError
        If `n_samples` < 1 or `min_coverage` outside (0, 1].
    """
    if int(n_samples) < 1:
        raise ValueError(f"`n_samples` must be >= 1, got {n_samples}")
    if not 0 < min_coverage <= 1:
        raise ValueError(f"`min_coverage` must be in (0, 1], got {min_coverage}")
    n_frames = int(np.ceil((n_samples + 1) / HOP))
    step = int(np.round((SR / rate) / HOP))
    wav_s, mel_s = [], []
    for i in range(0, max(1, n_frames - PARTIAL + step + 1), step):
        mel_s.append(slice(i, i + PARTIAL))
        wav_s.append(slice(i * HOP, (i + PARTIAL) * HOP))
    last = wav_s[-1]
    coverage = (n_samples - last.start) / (last.stop - last.start)
    if coverage < min_coverage and len(mel_s) > 1:
        mel_s, wav_s = mel_s[:-1], wav_s[:-1]
    return wav_s, mel_s


def normalize_volume(wav: torch.Tensor, target_dbfs: float = -30.0, increase_only: bool = True):
    r"""Scale to `target_dbfs` ($10\log_{10}\overline{x^2}$), only upwards if `increase_only`."""
    dbfs = 10 * torch.log10(torch.mean(wav**2).clamp_min(1e-20))
    change = target_dbfs - dbfs
    if increase_only and float(change.detach()) < 0:
        return wav
    return wav * 10 ** (change / 20)


class GE2E(nn.Module):
    """Resemblyzer's GE2E speaker encoder as a differentiable module.

    Parameters
    ----------
    mel_basis : numpy.ndarray of shape (40, 201), optional
        Mel filterbank; defaults to ``librosa.filters.mel(sr=16000, n_fft=400, n_mels=40)``.

    Raises
    ------
    ImportError
        If librosa is missing and no `mel_basis` is given (``pip install 'phonepure[sv]'``).
    """

    def __init__(self, mel_basis: np.ndarray | None = None):
        super().__init__()
        if mel_basis is None:
            try:
                import librosa
            except ImportError as err:  # pragma: no cover
                raise ImportError("GE2E needs librosa: pip install 'phonepure[sv]'") from err
            mel_basis = librosa.filters.mel(sr=SR, n_fft=N_FFT, n_mels=N_MELS)
        self.mel_basis: torch.Tensor
        self.window: torch.Tensor
        self.register_buffer(
            "mel_basis", torch.as_tensor(np.asarray(mel_basis), dtype=torch.float32)
        )
        self.register_buffer("window", torch.hann_window(N_FFT, periodic=True))
        self.lstm = nn.LSTM(N_MELS, 256, 3, batch_first=True)
        self.linear = nn.Linear(256, 256)

    @classmethod
    def from_resemblyzer(cls) -> GE2E:
        """Load the weights bundled in the installed ``resemblyzer`` wheel (never imported).

        Returns
        -------
        GE2E
            In eval mode, parameters frozen.

        Raises
        ------
        ImportError
            If resemblyzer is not installed (``pip install 'phonepure[sv]'``).
        """
        spec = importlib.util.find_spec("resemblyzer")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("resemblyzer's weights are needed: pip install 'phonepure[sv]'")
        path = Path(next(iter(spec.submodule_search_locations))) / "pretrained.pt"
        ckpt = torch.load(path, map_location="cpu", weights_only=False)
        state = {
            k: v for k, v in ckpt["model_state"].items() if k.split(".")[0] in ("lstm", "linear")
        }
        model = cls()
        model.load_state_dict(state, strict=False)
        model.eval()
        for p in model.parameters():
            p.requires_grad_(False)
        return model

    def mel(self, wav: torch.Tensor) -> torch.Tensor:
        """Mel power spectrogram, (T,) -> (frames, 40), like ``librosa.feature.melspectrogram``."""
        spec = torch.stft(
            wav,
            N_FFT,
            HOP,
            window=self.window,
            center=True,
            pad_mode="constant",
            return_complex=True,
        )
        power = spec.real**2 + spec.imag**2
        return (self.mel_basis @ power).T

    def embed_partials(self, mels: torch.Tensor) -> torch.Tensor:
        """(K, 160, 40) mel partials -> (K, 256) L2-normalised embeddings."""
        _, (hidden, _) = self.lstm(mels)
        raw = torch.relu(self.linear(hidden[-1]))
        return raw / torch.norm(raw, dim=1, keepdim=True).clamp_min(1e-12)

    def embed(self, wav, normalize: bool = True) -> torch.Tensor:
        """Utterance embedding, differentiable in `wav`.

        No webrtcvad silence trimming (Resemblyzer's ``preprocess_wav`` trims; trimming would
        shift a perturbation): trim beforehand if wanted.

        Parameters
        ----------
        wav : torch.Tensor of shape (T,) or (1, T), float
            16 kHz audio.
        normalize : bool, default=True
            Volume to -30 dBFS (increase only), as ``preprocess_wav``.
        Returns
        -------
        torch.Tensor of shape (256,), float32, unit norm.

        Raises
        ------
        ValueError
            On a bad shape, NaN/inf or empty input.

        Warns
        -----
        UserWarning
            If `wav` leaves [-1, 1] (int16-scaled?) or is shorter than 0.1 s (1600 samples).
        """
        wav = check_wav(wav)
        if wav.ndim == 3 or (wav.ndim == 2 and wav.shape[0] != 1):
            raise ValueError(f"`wav` must have shape (T,) or (1, T), got {tuple(wav.shape)}")
        x = wav.reshape(-1).float()
        if x.shape[0] < MIN_SAMPLES:
            warnings.warn(
                f"`wav` has {x.shape[0]} samples (< {MIN_SAMPLES}, 0.1 s): the embedding is "
                "not meaningful",
                stacklevel=2,
            )
        if float(x.detach().abs().max()) > 1:
            warnings.warn(
                "`wav` leaves [-1, 1] (int16-scaled audio? divide by 32768)", stacklevel=2
            )
        if normalize:
            x = normalize_volume(x)
        wav_s, mel_s = compute_partial_slices(x.shape[0])
        stop = wav_s[-1].stop
        if stop > x.shape[0]:
            x = nn.functional.pad(x, (0, stop - x.shape[0]))
        m = self.mel(x)
        mels = torch.stack([m[s] for s in mel_s])
        e = self.embed_partials(mels).mean(0)
        return e / torch.norm(e).clamp_min(1e-12)

    def embed_many(self, wavs, normalize: bool = True) -> torch.Tensor:
        """Embed several clips with one LSTM call over all their partials (differentiable).

        Parameters
        ----------
        wavs : sequence of torch.Tensor of shape (T_i,)
            16 kHz clips of any lengths.
        normalize : bool, default=True
            Volume normalisation as in :meth:`embed`.

        Returns
        -------
        torch.Tensor of shape (len(wavs), 256), unit rows.

        Raises
        ------
        ValueError
            If `wavs` is empty or a clip is invalid.
        """
        if len(wavs) == 0:
            raise ValueError("`wavs` is empty")
        mels, counts = [], []
        for i, w in enumerate(wavs):
            x = check_wav(w, f"wavs[{i}]").reshape(-1).float()
            if normalize:
                x = normalize_volume(x)
            wav_s, mel_s = compute_partial_slices(x.shape[0])
            if wav_s[-1].stop > x.shape[0]:
                x = nn.functional.pad(x, (0, wav_s[-1].stop - x.shape[0]))
            m = self.mel(x)
            mels += [m[s] for s in mel_s]
            counts.append(len(mel_s))
        parts = self.embed_partials(torch.stack(mels))
        out = torch.stack([c.mean(0) for c in torch.split(parts, counts)])
        return out / torch.norm(out, dim=1, keepdim=True).clamp_min(1e-12)

    def forward(self, wav: torch.Tensor) -> torch.Tensor:
        """Alias of :meth:`embed`."""
        return self.embed(wav)


def eer(scores, labels) -> tuple[float, float]:
    """Equal error rate and its threshold from verification trials.

    The threshold is the score where the false-accept rate (impostors with score >= thr)
    and false-reject rate (genuine with score < thr) are closest; EER is their mean there.

    Parameters
    ----------
    scores : array-like of shape (n,), float
        Similarities.
    labels : array-like of shape (n,), {0, 1}
        1 for genuine trials; both classes needed.

    Returns
    -------
    (float, float)
        EER in [0, 1] and the threshold.

    Raises
    ------
    ValueError
        On arrays that are not 1-D, mismatched lengths, NaN, or a missing class.
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels)
    for name, v in (("scores", s), ("labels", y)):
        if v.ndim != 1:
            raise ValueError(f"`{name}` must be 1-D, got shape {v.shape}")
    if s.shape != y.shape or s.size == 0:
        raise ValueError(
            f"`scores` and `labels` must be non-empty and equal length, got {s.shape}, {y.shape}"
        )
    if not np.isfinite(s).all():
        raise ValueError("`scores` contains NaN or inf")
    if not set(np.unique(y).tolist()) <= {0, 1} or len(np.unique(y)) != 2:
        raise ValueError("`labels` must contain both 0 and 1 (and nothing else)")
    pos, neg = s[y == 1], s[y == 0]
    best = (np.inf, 0.0, 0.0)
    for thr in np.unique(s):
        far = float(np.mean(neg >= thr))
        frr = float(np.mean(pos < thr))
        gap = abs(far - frr)
        if gap < best[0]:
            best = (gap, (far + frr) / 2, float(thr))
    return best[1], best[2]
