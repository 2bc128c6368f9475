r"""Phoneme templates: the prior $P$ of stage 2 (De-AntiFake section 4.2).

Per phone occurrence, the per-bin median of the compressed magnitude $|c(X)|$ over its frames,
rounded to 0.1; the template of a phone is the mean over its occurrences. Fit on peak-normalised
audio (the refiner sees peak-normalised input). File format of the official code: one line per
phone, ``phone<TAB>[v1, v2, ...]`` with 256 values.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from .alignment import PhoneAlignment
from .alignment import strip_stress as _strip
from .audio import N_FFT, check_wav, compress, peak_normalise, stft

__all__ = ["PhonemeTemplates"]

N_BINS = N_FFT // 2 + 1


class PhonemeTemplates:
    """Per-phone spectral templates (256 compressed-magnitude bins each).

    Parameters
    ----------
    table : dict of str to numpy.ndarray of shape (256,), optional
        Phone -> template.
    strip_stress : bool, default=False
        Look phones up without their stress digit (``AH1`` -> ``AH``).

    Attributes
    ----------
    table_ : dict of str to numpy.ndarray of shape (256,), float32

    Raises
    ------
    ValueError
        If a template does not have 256 values.
    """

    def __init__(self, table: dict[str, np.ndarray] | None = None, strip_stress: bool = False):
        self.table_: dict[str, np.ndarray] = {}
        self.strip_stress = bool(strip_stress)
        for k, v in (table or {}).items():
            v = np.asarray(v, dtype=np.float32)
            if v.shape != (N_BINS,):
                raise ValueError(f"template of {k!r} must have {N_BINS} bins, got shape {v.shape}")
            self.table_[k] = v

    @property
    def phones(self) -> list[str]:
        """Phones with a template."""
        return list(self.table_)

    def _key(self, p: str) -> str:
        return _strip(p) if self.strip_stress else p

    @classmethod
    def fit(
        cls,
        wavs: Sequence[torch.Tensor],
        alignments: Sequence[PhoneAlignment | None],
        round_to: float = 0.1,
        strip_stress: bool = False,
    ) -> PhonemeTemplates:
        """Fit templates from clips and their alignments.

        Parameters
        ----------
        wavs : sequence of torch.Tensor of shape (T,) or (1, T), float
            Clips at 16 kHz (peak-normalised here).
        alignments : sequence of PhoneAlignment or None
            One per clip (None skips the clip); durations must sum to ``1 + T // 128``.
        round_to : float, default=0.1
            Rounding step of the per-occurrence medians (> 0).
        strip_stress : bool, default=False
            Pool stressed variants.

        Returns
        -------
        PhonemeTemplates

        Raises
        ------
        ValueError
            If lengths differ, `round_to` <= 0 or an alignment does not match its clip.
        """
        if len(wavs) != len(alignments):
            raise ValueError(
                f"`wavs` ({len(wavs)}) and `alignments` ({len(alignments)}) differ in length"
            )
        if not round_to > 0:
            raise ValueError(f"`round_to` must be > 0, got {round_to}")
        occ: dict[str, list[np.ndarray]] = {}
        for i, (w, al) in enumerate(zip(wavs, alignments, strict=True)):
            if al is None:
                continue
            w = check_wav(w, f"wavs[{i}]").reshape(-1).float()
            mag = compress(stft(peak_normalise(w)[0])).abs().numpy()  # (256, N)
            if al.n_frames != mag.shape[1]:
                raise ValueError(
                    f"alignments[{i}] covers {al.n_frames} frames, the clip has {mag.shape[1]}"
                )
            start = 0
            for p, d in zip(al.phones, al.durations, strict=True):
                med = np.median(mag[:, start : start + d], axis=1)
                occ.setdefault(_strip(p) if strip_stress else p, []).append(
                    np.round(med / round_to) * round_to
                )
                start += d
        table = {p: np.mean(v, axis=0).astype(np.float32) for p, v in occ.items()}
        return cls(table, strip_stress=strip_stress)

    def render(
        self, alignment: PhoneAlignment, n_frames: int, strict: bool = False
    ) -> torch.Tensor:
        """Repeat each phone's template for its duration, zero-pad or crop to `n_frames`.

        A phone without a template (``sil`` included) is rendered as a zero vector with a
        warning that lists the missing phones; ``strict=True`` raises instead.

        Parameters
        ----------
        alignment : PhoneAlignment
            Phones and durations.
        n_frames : int
            STFT frames of the clip (>= 1).
        strict : bool, default=False
            Raise instead of zero-filling phones without a template.

        Returns
        -------
        torch.Tensor of shape (256, n_frames), float32.

        Raises
        ------
        ValueError
            If `n_frames` < 1, or, with ``strict=True``, a phone has no template (all
            unknown phones are listed).

        Warns
        -----
        UserWarning
            If a phone has no template (zero vector used; all unknown phones are listed),
            or if ``alignment.n_frames / n_frames`` is outside [0.8, 1.3].
        """
        if isinstance(n_frames, bool) or not isinstance(n_frames, int) or n_frames < 1:
            raise ValueError(f"`n_frames` must be an int >= 1, got {n_frames!r}")
        keys = [self._key(p) for p in alignment.phones]
        unknown = sorted(
            {p for p, k in zip(alignment.phones, keys, strict=True) if k not in self.table_}
        )
        if unknown:
            msg = f"`alignment` has phones without a template: {unknown}"
            if strict:
                raise ValueError(msg)
            warnings.warn(f"{msg}; they are rendered as zero vectors", stacklevel=2)
        ratio = alignment.n_frames / n_frames
        if not 0.8 <= ratio <= 1.3:
            warnings.warn(
                f"alignment/STFT frame ratio {ratio:.2f} outside [0.8, 1.3]", stacklevel=2
            )
        zero = np.zeros(N_BINS, np.float32)
        vecs = torch.from_numpy(
            np.stack([self.table_.get(k, zero) for k in keys], axis=1)
        )  # (256, P)
        out = torch.repeat_interleave(vecs, torch.tensor(alignment.durations), dim=1)
        if out.shape[1] < n_frames:
            out = torch.nn.functional.pad(out, (0, n_frames - out.shape[1]))
        return out[:, :n_frames].contiguous()

    def save(self, path) -> Path:
        """Write ``phone<TAB>[v1, ...]`` lines (values with ``repr``, exact round trip)."""
        path = Path(path)
        lines = [f"{p}\t[{', '.join(repr(float(x)) for x in v)}]" for p, v in self.table_.items()]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path, strip_stress: bool = False) -> PhonemeTemplates:
        """Read the paper's text format.

        Parameters
        ----------
        path : str or pathlib.Path
            File with ``phone<TAB>[v1, ...]`` lines.
        strip_stress : bool, default=False
            As in the constructor.

        Returns
        -------
        PhonemeTemplates

        Raises
        ------
        FileNotFoundError
            If `path` does not exist.
        ValueError
            On a malformed line or a template without 256 values.
        """
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"`path` does not exist: {path}")
        table = {}
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                phone, vals = line.split("\t", 1)
                arr = np.array(
                    [float(x) for x in vals.strip().strip("[]").split(",")], dtype=np.float32
                )
            except ValueError as err:
                raise ValueError(
                    f"line {n} of {path} is not 'phone<TAB>[v1, ...]': {err}"
                ) from None
            table[phone.strip()] = arr
        return cls(table, strip_stress=strip_stress)

    def as_array(self) -> np.ndarray:
        """Templates stacked, shape (n_phones, 256), float32."""
        return (
            np.stack(list(self.table_.values()))
            if self.table_
            else np.zeros((0, N_BINS), np.float32)
        )
