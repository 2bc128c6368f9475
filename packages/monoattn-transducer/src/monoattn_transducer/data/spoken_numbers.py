"""Spoken-number corpus: English speech (espeak-ng) -> German numeral morphemes (reordering).

Source ``num2words(n, lang="en")`` (hyphen -> space) is spoken by espeak-ng through the
``espeakng-loader`` wheel (ctypes, synchronous mode, synth callback, 22 050 Hz int16); the target
``num2words(n, lang="de")`` is cut into numeral morphemes by longest match: 21 -> "ein und
zwanzig", so the units come before the tens that English says first (spec section 4).
Features: 80-dim log-mel (librosa), 10 ms hop. Needs the ``[speech]`` extra. espeak-ng seeds
its noise generator (breath of the ``+f2``/``+f3`` variants) from the clock at start-up, so two
syntheses of the corpus used to differ (trial 23: every utterance of those two training voices);
:func:`synthesize` now reseeds it per utterance from the text and settings, and a corpus built in
a fresh process is the same every time. The corpus is cached (npz + manifest).
"""

import ctypes
import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from icml25_core import check_scalar

__all__ = [
    "MORPHEMES",
    "build_corpus",
    "english_words",
    "german_morphemes",
    "log_mel",
    "synthesize",
]

MORPHEMES = (
    "eins", "ein", "zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun", "zehn",
    "elf", "zwölf", "dreizehn", "vierzehn", "fünfzehn", "sechzehn", "siebzehn", "achtzehn",
    "neunzehn", "zwanzig", "dreißig", "vierzig", "fünfzig", "sechzig", "siebzig", "achtzig",
    "neunzig", "hundert", "und",
)  # fmt: skip
SAMPLE_RATE = 22050
VOICES = ("en", "en-us", "en+m3", "en-us+f2", "en+f4", "en-us+m5", "en+klatt", "en-us+f3")
RATES = (140, 175, 210)
PITCHES = (40, 60)


def english_words(n: int) -> str:
    """``num2words(n, lang="en")`` with hyphens as spaces ("forty seven")."""
    from num2words import num2words

    check_scalar(n, "n", kind=int, low=0)
    return str(num2words(n, lang="en")).replace("-", " ")


def german_morphemes(n: int) -> list[str]:
    """German numeral of `n` cut into :data:`MORPHEMES` by longest match (21 -> ein und zwanzig).

    Raises
    ------
    ValueError
        If the word cannot be cut into known morphemes.
    """
    from num2words import num2words

    check_scalar(n, "n", kind=int, low=0)
    word = str(num2words(n, lang="de")).lower()
    out: list[str] = []
    i = 0
    while i < len(word):
        best = max((m for m in MORPHEMES if word.startswith(m, i)), key=len, default=None)
        if best is None:
            raise ValueError(f"`n`={n}: cannot cut {word!r} at {word[i:]!r}")
        out.append(best)
        i += len(best)
    return out


class _Espeak:
    _lib: Any = None
    buf: list[np.ndarray] = []  # noqa: RUF012 - filled by the synth callback
    _cb: Any = None

    @classmethod
    def lib(cls) -> Any:
        if cls._lib is None:
            import espeakng_loader

            lib = ctypes.CDLL(espeakng_loader.get_library_path())
            path = espeakng_loader.get_data_path().encode()
            rate = lib.espeak_Initialize(2, 0, ctypes.c_char_p(path), 0)  # SYNCHRONOUS
            if rate != SAMPLE_RATE:
                raise RuntimeError(f"espeak-ng initialised at {rate} Hz, expected {SAMPLE_RATE}")
            cls.buf = []
            proto = ctypes.CFUNCTYPE(
                ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
            )

            def cb(wav, n, _events):
                if n > 0:
                    cls.buf.append(np.ctypeslib.as_array(wav, shape=(n,)).copy())
                return 0

            cls._cb = proto(cb)
            lib.espeak_SetSynthCallback(cls._cb)
            lib.espeak_ng_SetRandSeed.argtypes = [ctypes.c_long]
            lib.espeak_ng_SetRandSeed.restype = None
            cls._lib = lib
        return cls._lib


def synthesize(
    text: str, voice: str = "en", rate: int = 175, pitch: int = 50, *, seed: int | None = None
) -> np.ndarray:
    """Speak `text` with espeak-ng: int16 ``[n_samples]`` at 22 050 Hz.

    espeak-ng's noise generator is reseeded before each utterance (from `seed`, by default a
    CRC of the text and settings), so a fixed sequence of calls gives the same samples in every
    process (espeak-ng seeds it from the clock otherwise). Some voices still carry a little state
    from one utterance to the next inside one process: call in the same order for equal output.

    Parameters
    ----------
    text : str
    voice : str, default="en"
        espeak-ng voice name with an optional ``+variant`` (the loader has ``en``, ``en-us``;
        no ``en-gb``).
    rate : int, default=175
        Words per minute (80..450).
    pitch : int, default=50
        0..100.
    seed : int, keyword-only, optional
        Seed of espeak-ng's noise generator, in [0, 2**31); default: CRC-32 of
        ``text|voice|rate|pitch``.

    Raises
    ------
    ValueError
        For empty text, an unknown voice or parameters out of range.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError("`text` must be a non-empty str")
    check_scalar(rate, "rate", kind=int, low=80, high=450)
    check_scalar(pitch, "pitch", kind=int, low=0, high=100)
    if seed is None:
        seed = zlib.crc32(f"{text}|{voice}|{rate}|{pitch}".encode()) & 0x7FFFFFFF
    check_scalar(seed, "seed", kind=int, low=0, high=2**31 - 1)
    lib = _Espeak.lib()
    if lib.espeak_SetVoiceByName(ctypes.c_char_p(voice.encode())) != 0:
        raise ValueError(f"`voice` {voice!r} is not an espeak-ng voice here")
    lib.espeak_SetParameter(1, rate, 0)
    lib.espeak_SetParameter(3, pitch, 0)
    lib.espeak_ng_SetRandSeed(seed)
    _Espeak.buf = []
    data = text.encode()
    lib.espeak_Synth(ctypes.c_char_p(data), len(data) + 1, 0, 1, 0, 0, None, None)
    lib.espeak_Synchronize()
    return np.concatenate(_Espeak.buf) if _Espeak.buf else np.zeros(0, np.int16)


def log_mel(wave: np.ndarray, sr: int = SAMPLE_RATE, n_mels: int = 80) -> np.ndarray:
    """80-dim log-mel features, 25 ms window, 10 ms hop (librosa): float32 ``[frames, n_mels]``."""
    import librosa

    y = np.asarray(wave, dtype=np.float32) / 32768.0
    mel = librosa.feature.melspectrogram(
        y=y, sr=sr, n_fft=int(0.025 * sr) + 1, hop_length=sr // 100, n_mels=n_mels, fmax=8000
    )
    return np.log(mel + 1e-6).T.astype(np.float32)


def build_corpus(
    cache_dir: str | Path,
    numbers: range = range(1, 100),
    voices: tuple[str, ...] = VOICES,
    rates: tuple[int, ...] = RATES,
    pitches: tuple[int, ...] = PITCHES,
    progress: Any = None,
) -> dict[str, Any]:
    """Synthesise (once) and load the corpus: features, targets, voices.

    Cached in `cache_dir` as ``spoken_numbers.npz`` + ``manifest.json``; a cache whose manifest
    matches the settings is read instead of re-synthesised.

    Returns
    -------
    dict
        ``feats`` (list of float32 ``[frames, 80]``), ``numbers``, ``voices``, ``rates``,
        ``pitches`` (int/str arrays per utterance), ``source`` (English), ``target`` (morphemes).
    """
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    settings = {"numbers": list(numbers), "voices": list(voices), "rates": list(rates),
                "pitches": list(pitches), "version": 2}  # fmt: skip
    # version 2: seeded synthesis (version-1 caches held a clock-seeded, run-dependent corpus)
    man_path, npz_path = cache / "manifest.json", cache / "spoken_numbers.npz"
    if man_path.exists() and npz_path.exists():
        man = json.loads(man_path.read_text())
        if man.get("settings") == settings:
            z = np.load(npz_path)
            flat, offs = z["feats"], z["offsets"]
            feats = [flat[offs[i] : offs[i + 1]] for i in range(len(offs) - 1)]
            return {**man["items"], "feats": feats}
    items: dict[str, list] = {"numbers": [], "voices": [], "rates": [], "pitches": []}
    feats = []
    grid = [(n, v, r, p) for v in voices for r in rates for p in pitches for n in numbers]
    it = grid if progress is None else progress(grid, desc="espeak-ng corpus", unit="utt")
    for n, v, r, p in it:
        feats.append(log_mel(synthesize(english_words(n), v, r, p)))
        for key, val in zip(items, (n, v, r, p), strict=True):
            items[key].append(val)
    items["source"] = [english_words(n) for n in items["numbers"]]
    items["target"] = [" ".join(german_morphemes(n)) for n in items["numbers"]]
    offs = np.cumsum([0] + [len(f) for f in feats])
    np.savez_compressed(npz_path, feats=np.concatenate(feats), offsets=offs)
    man_path.write_text(json.dumps({"settings": settings, "items": items}))
    return {**items, "feats": feats}
