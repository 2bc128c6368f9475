r"""Evaluation metrics: cosine similarity, SV accept rate, SNR, optional PESQ/STOI.

$\mathrm{SNR} = 10\log_{10}\frac{\sum x^2}{\sum (x-\hat x)^2}$ dB against the reference $x$.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["cosine", "sv_accuracy", "snr_db", "pesq", "stoi"]


def cosine(a, b) -> float:
    """Cosine similarity of two vectors (any shape, flattened, same size).

    Raises
    ------
    ValueError
        On different sizes, empty or non-finite input.
    """
    x = torch.as_tensor(a).detach().double().reshape(-1)
    y = torch.as_tensor(b).detach().double().reshape(-1)
    if x.numel() == 0 or x.shape != y.shape:
        raise ValueError(
            f"`a` and `b` must be non-empty and the same size, got {x.shape}, {y.shape}"
        )
    if not (torch.isfinite(x).all() and torch.isfinite(y).all()):
        raise ValueError("`a` or `b` contains NaN or inf")
    den = float(x.norm() * y.norm())
    return float(x @ y) / den if den > 0 else 0.0


def sv_accuracy(scores, threshold: float) -> float:
    """Fraction of trials accepted (``score >= threshold``).

    Parameters
    ----------
    scores : array-like of shape (n,), float
        Cosines to the enrolment.
    threshold : float
        EER threshold.

    Returns
    -------
    float in [0, 1].

    Raises
    ------
    ValueError
        If `scores` is empty or not finite.
    """
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if s.size == 0 or not np.isfinite(s).all():
        raise ValueError("`scores` must be non-empty and finite")
    return float(np.mean(s >= float(threshold)))


def snr_db(reference, estimate) -> float:
    r"""SNR of `estimate` against `reference` in dB (cropped to the shorter length).

    Raises
    ------
    ValueError
        On empty or non-finite input.
    """
    r = torch.as_tensor(reference).detach().double().reshape(-1)
    e = torch.as_tensor(estimate).detach().double().reshape(-1)
    n = min(r.numel(), e.numel())
    if n == 0:
        raise ValueError("`reference` and `estimate` must be non-empty")
    r, e = r[:n], e[:n]
    if not (torch.isfinite(r).all() and torch.isfinite(e).all()):
        raise ValueError("`reference` or `estimate` contains NaN or inf")
    err = float(((r - e) ** 2).sum())
    sig = float((r**2).sum())
    return float("inf") if err == 0 else 10 * np.log10(max(sig, 1e-20) / err)


def pesq(reference, estimate, sr: int = 16000) -> float:
    """Wide-band PESQ (``pesq`` package, extra ``[quality]``)."""
    from pesq import pesq as _pesq

    r = np.asarray(torch.as_tensor(reference).reshape(-1), dtype=np.float64)
    e = np.asarray(torch.as_tensor(estimate).reshape(-1), dtype=np.float64)
    n = min(len(r), len(e))
    return float(_pesq(sr, r[:n], e[:n], "wb"))


def stoi(reference, estimate, sr: int = 16000) -> float:
    """STOI (``pystoi`` package, extra ``[quality]``)."""
    from pystoi import stoi as _stoi

    r = np.asarray(torch.as_tensor(reference).reshape(-1), dtype=np.float64)
    e = np.asarray(torch.as_tensor(estimate).reshape(-1), dtype=np.float64)
    n = min(len(r), len(e))
    return float(_stoi(r[:n], e[:n], sr))
