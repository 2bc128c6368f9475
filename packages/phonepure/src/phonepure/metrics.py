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
        If `scores` is empty or not finite, or `threshold` is NaN.
    """
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if s.size == 0 or not np.isfinite(s).all():
        raise ValueError("`scores` must be non-empty and finite")
    if np.isnan(float(threshold)):
        raise ValueError("`threshold` is NaN")
    return float(np.mean(s >= float(threshold)))


def snr_db(reference, estimate) -> float:
    r"""SNR of `estimate` against `reference` in dB: $10\log_{10}(\|r\|^2/\|r-e\|^2)$.

    Note the order: the clean reference comes first (torchmetrics puts ``preds`` first).
    Both are cropped to the shorter length along the last (time) axis; the other axes must
    agree once size-1 axes are dropped (``(T,)`` and ``(1, T)`` match, ``(2, T)`` and
    ``(1, T)`` do not).

    Raises
    ------
    ValueError
        On empty or non-finite input, incompatible shapes, or an all-zero `reference`.
    """
    r = torch.as_tensor(reference).detach().double()
    e = torch.as_tensor(estimate).detach().double()
    lead_r = tuple(d for d in r.shape[:-1] if d != 1)
    lead_e = tuple(d for d in e.shape[:-1] if d != 1)
    if lead_r != lead_e:
        raise ValueError(
            f"`reference` {tuple(r.shape)} and `estimate` {tuple(e.shape)} have incompatible "
            "shapes (only the last, time axis may differ)"
        )
    n = min(r.shape[-1], e.shape[-1]) if r.ndim and e.ndim else 0
    if n == 0:
        raise ValueError("`reference` and `estimate` must be non-empty")
    r, e = r[..., :n].reshape(-1), e[..., :n].reshape(-1)
    if not (torch.isfinite(r).all() and torch.isfinite(e).all()):
        raise ValueError("`reference` or `estimate` contains NaN or inf")
    err = float(((r - e) ** 2).sum())
    sig = float((r**2).sum())
    if sig == 0:
        raise ValueError("`reference` is all zeros: the SNR is undefined")
    return float("inf") if err == 0 else 10 * np.log10(sig / err)


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
