"""Spectra and candidate sets: MGF reading (pyteomics), Casanovo's preprocessing, the
candidate-set Dataset and its collate function.

Preprocessing follows Casanovo 5.2.1 / depthcharge (spectrum_utils calls ``set_mz_range(50.5,
4500)``, ``remove_precursor_peak(2.0, "Da")``, ``filter_intensity(0, 300)``, ``scale_intensity
("root", 1)``, then unit L2 norm), re-implemented in numpy and tested against spectrum_utils.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from icml25_core import check_array, check_scalar

from .mass import UNIT, pmd_batch, rmd_batch
from .vocab import Vocab

__all__ = [
    "Spectrum",
    "read_mgf",
    "preprocess",
    "CandidateSet",
    "collate",
    "encode_candidates",
    "PROTON",
]

#: Proton mass (Da), Casanovo's precursor mass convention M = (m/z - PROTON) * z.
PROTON = 1.007276
_HYDROGEN = 1.007825  # spectrum_utils' adduct mass for the precursor peak removal


@dataclass
class Spectrum:
    """One MS/MS spectrum.

    Attributes
    ----------
    mz, intensity : numpy.ndarray of float64, shape (N,)
        Peaks, m/z in Th, intensities in arbitrary units.
    precursor_mz : float
        Precursor m/z (Th).
    charge : int
        Precursor charge (>= 1).
    title : str
    peptide : str or None
        The annotation (``SEQ=``), when present.
    index : int
        0-based position in its file.
    """

    mz: np.ndarray
    intensity: np.ndarray
    precursor_mz: float
    charge: int
    title: str = ""
    peptide: str | None = None
    index: int = 0
    params: dict = field(default_factory=dict, repr=False)

    @property
    def precursor_mass(self) -> float:
        """Neutral precursor mass M = (m/z - 1.007276) * z (Da)."""
        return (self.precursor_mz - PROTON) * self.charge


def _charge(value, where: str) -> int:
    if isinstance(value, list | tuple | np.ndarray):
        if len(value) == 0:
            raise ValueError(f"{where}: empty CHARGE")
        if len(value) > 1:
            raise ValueError(
                f"{where}: several charges {[int(v) for v in value]} in CHARGE; write one"
            )
        value = value[0]
    try:
        z = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: CHARGE {value!r} is not a number") from None
    if not math.isfinite(z) or z < 1 or z != int(z):
        raise ValueError(f"{where}: CHARGE {value!r} must be a positive integer")
    return int(z)


def read_mgf(path, default_charge: int | None = None) -> list[Spectrum]:
    """Read an MGF file with :func:`pyteomics.mgf.read`.

    Parameters
    ----------
    path : str or os.PathLike
        The MGF file.
    default_charge : int, optional
        Charge for spectra without ``CHARGE=`` (nor a charge on ``PEPMASS=``); without it such a
        spectrum is an error.

    Returns
    -------
    list of Spectrum
        In file order; ``peptide`` from ``SEQ=`` when present.

    Raises
    ------
    FileNotFoundError
        If `path` does not exist.
    ValueError
        On a missing, non-finite or non-positive ``PEPMASS``, a missing or bad charge (several
        charges such as ``2+ and 3+`` included), NaN/inf or negative peaks, m/z and intensity
        arrays of different lengths, or a spectrum without ``END IONS``; the message names the
        file and the 0-based spectrum index. Also when a non-empty file holds no
        ``BEGIN IONS`` block at all.

    Notes
    -----
    Charges above a model's ``max_charge`` (10) and unknown tokens in ``SEQ=`` are read as
    they are; :class:`CandidateSet` rejects them.
    """
    from pyteomics import mgf

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"`path`: no MGF file at {str(path)!r}")
    if default_charge is not None:
        default_charge = int(check_scalar(default_charge, "default_charge", kind=int, low=1))
    out = []
    with mgf.read(str(path), use_index=False, convert_arrays=1) as reader:
        idx = 0
        records = iter(reader)
        while True:
            where = f"{path.name}, spectrum {idx}"
            try:
                rec = next(records)
            except StopIteration:
                break
            except (ValueError, TypeError, IndexError, KeyError) as exc:
                raise ValueError(f"{where}: unreadable MGF record ({exc})") from None
            if rec is None:  # pyteomics' answer to a block without END IONS
                raise ValueError(f"{where}: no END IONS (truncated file?)")
            params = rec.get("params", {})
            pepmass = params.get("pepmass")
            if pepmass is None or pepmass[0] is None:
                raise ValueError(f"{where}: no PEPMASS")
            if not math.isfinite(float(pepmass[0])) or float(pepmass[0]) <= 0:
                raise ValueError(f"{where}: PEPMASS {pepmass[0]!r} must be a positive number")
            charge_value = params.get("charge")
            if charge_value is None or len(charge_value) == 0:
                if default_charge is None:
                    raise ValueError(f"{where}: no CHARGE; pass `default_charge` to read it anyway")
                charge = default_charge
            else:
                charge = _charge(charge_value, where)
            mz = np.asarray(rec["m/z array"], dtype=np.float64)
            inten = np.asarray(rec["intensity array"], dtype=np.float64)
            if mz.shape != inten.shape:
                raise ValueError(f"{where}: {mz.size} m/z values but {inten.size} intensities")
            if not (np.isfinite(mz).all() and np.isfinite(inten).all()):
                raise ValueError(f"{where}: NaN or infinite peak values")
            if (mz < 0).any() or (inten < 0).any():
                raise ValueError(f"{where}: negative m/z or intensity")
            out.append(
                Spectrum(
                    mz=mz,
                    intensity=inten,
                    precursor_mz=float(pepmass[0]),
                    charge=charge,
                    title=str(params.get("title", idx)),
                    peptide=params.get("seq"),
                    index=idx,
                    params=dict(params),
                )
            )
            idx += 1
    if not out and path.read_text(errors="replace").strip():
        raise ValueError(
            f"`path`: {path.name} holds no BEGIN IONS ... END IONS block (not an MGF?)"
        )
    return out


def preprocess(
    spec: Spectrum,
    n_peaks: int = 300,
    min_mz: float = 50.5,
    max_mz: float = 4500.0,
    remove_precursor_tol: float = 2.0,
) -> np.ndarray:
    """Casanovo's peak preprocessing.

    m/z range [min_mz, max_mz] (inclusive), remove peaks within `remove_precursor_tol` Da of the
    precursor at every charge 1..z (spectrum_utils' rule, adduct 1.007825), keep the `n_peaks`
    most intense, square-root the intensities, scale the maximum to 1 and then to unit L2 norm.
    Peaks with an intensity <= 0 are dropped (:func:`read_mgf` rejects negative intensities; a
    hand-made :class:`Spectrum` may hold them).

    Parameters
    ----------
    spec : Spectrum
    n_peaks : int, default=300
        Casanovo ``n_peaks``.
    min_mz, max_mz : float, default=50.5, 4500
        Casanovo ``min_mz`` / ``max_mz`` (Th).
    remove_precursor_tol : float, default=2.0
        Casanovo ``remove_precursor_tol`` (Da).

    Returns
    -------
    numpy.ndarray of float32, shape (N, 2)
        Columns m/z and intensity, sorted by m/z; ``[[0, 1]]`` when no peak is left.

    Raises
    ------
    TypeError
        If `spec` is not a :class:`Spectrum`.
    ValueError
        On NaN/inf peaks or out-of-range arguments.
    """
    if not isinstance(spec, Spectrum):
        raise TypeError(f"`spec` must be a ranknovo.data.Spectrum, got {type(spec).__name__}")
    n_peaks = int(check_scalar(n_peaks, "n_peaks", kind=int, low=1))
    min_mz = float(check_scalar(min_mz, "min_mz", low=0))
    max_mz = float(check_scalar(max_mz, "max_mz", low=min_mz))
    tol = float(check_scalar(remove_precursor_tol, "remove_precursor_tol", low=0))
    mz = check_array(spec.mz, "spec.mz", ndim=1, allow_empty=True, cast=np.float64)
    inten = check_array(spec.intensity, "spec.intensity", ndim=1, allow_empty=True, cast=np.float64)
    if mz.shape != inten.shape:
        raise ValueError(f"`spec`: {mz.size} m/z values but {inten.size} intensities")
    order = np.argsort(mz, kind="stable")
    mz, inten = mz[order], inten[order]
    keep = (mz >= min_mz) & (mz <= max_mz)
    mz, inten = mz[keep], inten[keep]
    neutral = (spec.precursor_mz - _HYDROGEN) * spec.charge
    for z in range(spec.charge, 0, -1):
        target = neutral / z + _HYDROGEN
        keep = np.abs(mz - target) > tol
        mz, inten = mz[keep], inten[keep]
    keep = inten > 0
    mz, inten = mz[keep], inten[keep]
    if mz.size > n_peaks:
        top = np.zeros(mz.size, dtype=bool)
        top[np.argsort(inten)[-n_peaks:]] = True
        mz, inten = mz[top], inten[top]
    if mz.size == 0:
        return np.array([[0.0, 1.0]], dtype=np.float32)
    inten = np.sqrt(inten)
    inten = inten / inten.max()
    inten = inten / np.linalg.norm(inten)
    return np.stack([mz, inten], axis=1).astype(np.float32)


def encode_candidates(
    candidates: Sequence, vocab: Vocab, max_len: int = 100
) -> tuple[np.ndarray, np.ndarray]:
    """One spectrum's candidate block: ``<cls>`` + tokens, right-padded with the gap ``-`` to
    the longest candidate (RankNovo's MSA without alignment).

    Parameters
    ----------
    candidates : sequence of str or of token lists
        At least one peptide.
    vocab : Vocab
    max_len : int, default=100
        Longest candidate allowed (tokens, N-terminal modification included).

    Returns
    -------
    tokens : numpy.ndarray of int64, shape (R, 1 + longest)
    lengths : numpy.ndarray of int64, shape (R,)
        Tokens per candidate (without ``<cls>``).

    Raises
    ------
    TypeError
        If `candidates` is a str (one peptide instead of a list of peptides).
    ValueError
        On an empty candidate list, an empty or too long candidate, an unknown token.
    """
    if isinstance(candidates, str):
        raise TypeError(
            f"`candidates` must be a list of peptides, got the str {candidates!r} (wrap it in a "
            "list: one spectrum's candidates are a list)"
        )
    if len(candidates) == 0:
        raise ValueError("`candidates` is empty: each spectrum needs at least one candidate")
    enc = [vocab.encode(c) for c in candidates]
    for c, e in zip(candidates, enc, strict=True):
        if len(e) == 0:
            raise ValueError(f"`candidates` holds an empty peptide {c!r}")
        if len(e) > max_len:
            raise ValueError(f"`candidates`: peptide of length {len(e)} > max_len={max_len}")
    width = 1 + max(len(e) for e in enc)
    toks = np.full((len(enc), width), vocab.gap_id, dtype=np.int64)
    toks[:, 0] = vocab.cls_id
    for r, e in enumerate(enc):
        toks[r, 1 : 1 + len(e)] = e
    return toks, np.array([len(e) for e in enc], dtype=np.int64)


class CandidateSet(torch.utils.data.Dataset):
    """Spectra with their candidate peptides (and optionally the true peptide for labels).

    Parameters
    ----------
    spectra : sequence of numpy.ndarray, each float (N_i, 2)
        Preprocessed peaks (:func:`preprocess`).
    precursors : array_like of float, shape (S, 2)
        Precursor m/z and charge per spectrum.
    candidates : sequence of sequences of str
        The candidates of each spectrum (at least one each).
    truths : sequence of str, optional
        True peptides; when given, items carry PMD/RMD labels (computed here, i.e. in
        DataLoader workers).
    vocab : Vocab, optional
    max_len : int, default=100
    unit : float, default=51.4238
    max_charge : int, default=10
        Highest charge allowed (the model's ``max_charge``).

    Raises
    ------
    TypeError
        If `candidates`, one of its entries or `truths` is a str (a peptide where a list of
        peptides is expected), or a truth is not a peptide (e.g. None).
    ValueError
        On mismatched lengths, an empty candidate list, NaN peaks, a non-positive precursor
        m/z, a charge that is not an integer in [1, `max_charge`], or `unit` / `max_len` out of
        range.
    """

    def __init__(
        self,
        spectra: Sequence[np.ndarray],
        precursors,
        candidates: Sequence[Sequence],
        truths: Sequence | None = None,
        vocab: Vocab | None = None,
        max_len: int = 100,
        unit: float = UNIT,
        max_charge: int = 10,
    ):
        self.vocab = vocab if vocab is not None else Vocab.massivekb()
        max_len = int(check_scalar(max_len, "max_len", kind=int, low=1))
        unit = float(check_scalar(unit, "unit", low=0, inclusive="neither"))
        if not math.isfinite(unit):
            raise ValueError(f"`unit` must be finite, got {unit}")
        max_charge = int(check_scalar(max_charge, "max_charge", kind=int, low=1))
        for name, value in (("candidates", candidates), ("truths", truths)):
            if isinstance(value, str):
                raise TypeError(
                    f"`{name}` must be a list with one entry per spectrum, got the str {value!r}"
                )
        prec = check_array(precursors, "precursors", ndim=2, shape=(None, 2), cast=np.float64)
        if len(spectra) != prec.shape[0] or len(candidates) != prec.shape[0]:
            raise ValueError(
                f"`spectra` ({len(spectra)}), `precursors` ({prec.shape[0]}) and `candidates` "
                f"({len(candidates)}) must have one entry per spectrum"
            )
        if truths is not None and len(truths) != prec.shape[0]:
            raise ValueError(f"`truths` has {len(truths)} entries, expected {prec.shape[0]}")
        z = prec[:, 1]
        bad = (z < 1) | (z > max_charge) | (z != np.round(z))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"`precursors[{i}]`: charge {z[i]:g} must be an integer in [1, "
                f"max_charge={max_charge}]"
            )
        if (prec[:, 0] <= 0).any():
            i = int(np.flatnonzero(prec[:, 0] <= 0)[0])
            raise ValueError(f"`precursors[{i}]`: precursor m/z {prec[i, 0]:g} must be positive")
        self.spectra = [
            check_array(s, f"spectra[{i}]", ndim=2, shape=(None, 2), cast=np.float32)
            for i, s in enumerate(spectra)
        ]
        self.precursors = prec
        self.blocks = []
        for i, c in enumerate(candidates):
            if isinstance(c, str):
                raise TypeError(
                    f"each `candidates[i]` must be a list of peptides, got the str {c!r} at "
                    f"`candidates[{i}]` (write [[{c!r}]] for one spectrum with one candidate)"
                )
            if len(c) == 0:
                raise ValueError(f"`candidates[{i}]` is empty: each spectrum needs a candidate")
            self.blocks.append(encode_candidates(c, self.vocab, max_len))
        self.truths = None
        if truths is not None:
            self.truths = []
            for i, t in enumerate(truths):
                if not isinstance(t, str | Sequence):
                    raise TypeError(
                        f"`truths[{i}]` must be a peptide (str or token list), got "
                        f"{type(t).__name__}"
                    )
                self.truths.append(self.vocab.encode(t))
        self.unit = unit

    def __len__(self) -> int:
        return len(self.spectra)

    def __getitem__(self, i: int) -> dict:
        toks, lens = self.blocks[i]
        mz, z = self.precursors[i]
        item = {
            "spectrum": self.spectra[i],
            "precursor": np.array([(mz - PROTON) * z, z, mz], dtype=np.float64),
            "tokens": toks,
        }
        if self.truths is not None:
            t = self.truths[i]
            r = toks.shape[0]
            t_ids = np.broadcast_to(np.pad(t, (0, max(0, 1 - len(t)))), (r, max(1, len(t))))
            t_len = np.full(r, len(t), dtype=np.int64)
            q_ids = np.ascontiguousarray(toks[:, 1:])
            m = self.vocab.masses
            item["pmd"] = pmd_batch(q_ids, lens, np.ascontiguousarray(t_ids), t_len, m, self.unit)
            rmd = np.zeros(toks.shape, dtype=np.float64)
            rmd[:, 1:] = rmd_batch(q_ids, lens, np.ascontiguousarray(t_ids), t_len, m, self.unit)
            mask = np.zeros(toks.shape, dtype=bool)
            mask[:, 1:] = np.arange(toks.shape[1] - 1)[None, :] < lens[:, None]
            item["rmd"], item["rmd_mask"] = rmd, mask
        return item


def collate(items: Sequence[dict], pad_id: int = 1) -> dict[str, torch.Tensor]:
    """Batch :class:`CandidateSet` items.

    Returns
    -------
    dict
        ``spectra`` float32 (B, P, 2) zero-padded; ``precursors`` float32 (B, 3) [mass (Da),
        charge, m/z]; ``tokens`` int64 (B, R, C) padded with `pad_id`; ``row_mask`` bool (B, R);
        with labels also ``pmd`` float32 (B, R), ``rmd`` float32 (B, R, C), ``rmd_mask`` bool.
    """
    if len(items) == 0:
        raise ValueError("`items` is empty")
    b = len(items)
    n_peaks = max(it["spectrum"].shape[0] for it in items)
    n_rows = max(it["tokens"].shape[0] for it in items)
    n_cols = max(it["tokens"].shape[1] for it in items)
    spectra = torch.zeros(b, n_peaks, 2)
    tokens = torch.full((b, n_rows, n_cols), pad_id, dtype=torch.int64)
    row_mask = torch.zeros(b, n_rows, dtype=torch.bool)
    prec = torch.zeros(b, 3)
    labels = "pmd" in items[0]
    if labels:
        pmd = torch.zeros(b, n_rows)
        rmd = torch.zeros(b, n_rows, n_cols)
        rmd_mask = torch.zeros(b, n_rows, n_cols, dtype=torch.bool)
    for k, it in enumerate(items):
        s, t = it["spectrum"], it["tokens"]
        spectra[k, : s.shape[0]] = torch.from_numpy(np.asarray(s, dtype=np.float32))
        tokens[k, : t.shape[0], : t.shape[1]] = torch.from_numpy(t)
        row_mask[k, : t.shape[0]] = True
        prec[k] = torch.from_numpy(np.asarray(it["precursor"], dtype=np.float32))
        if labels:
            pmd[k, : t.shape[0]] = torch.from_numpy(np.asarray(it["pmd"], dtype=np.float32))
            rmd[k, : t.shape[0], : t.shape[1]] = torch.from_numpy(it["rmd"].astype(np.float32))
            rmd_mask[k, : t.shape[0], : t.shape[1]] = torch.from_numpy(it["rmd_mask"])
    out = {"spectra": spectra, "precursors": prec, "tokens": tokens, "row_mask": row_mask}
    if labels:
        out.update(pmd=pmd, rmd=rmd, rmd_mask=rmd_mask)
    return out
