"""Learning-rate schedules of FedSWA: the server's round schedule and the client's cyclic one.

Axis letters: ``t`` communication round (0..T-1), ``k`` local step inside a round (0..K-1).
"""

from __future__ import annotations

import math

from icml25_core import check_choice, check_scalar

__all__ = ["cyclic_lr", "round_lr"]


def cyclic_lr(k: int, K: int, eta: float, rho: float = 0.0) -> float:
    """Cyclic local learning rate of one SWA cycle per round.

    ``eta_k = (1 - k/K) * eta + (k/K) * rho * eta`` for ``k = 0..K-1``: it starts at the peak
    ``eta`` and falls linearly towards ``rho * eta``. ``rho = 1`` is a constant rate (FedAvg,
    SCAFFOLD, FedSAM).

    Parameters
    ----------
    k : int
        Local step, ``0 <= k < K``.
    K : int
        Local steps in the round, ``K >= 1``.
    eta : float
        Peak learning rate, ``> 0``.
    rho : float, default=0.0
        Ratio of the final to the peak rate, in ``[0, 1]``. Default 0: the official HEAD code
        hard-codes it (``main_FedSWA.py``).

    Returns
    -------
    float
        ``eta_k``.

    Raises
    ------
    ValueError
        If ``K < 1``, `k` is outside ``[0, K)``, ``eta <= 0`` or `rho` is outside ``[0, 1]``.
    TypeError
        If `k` or `K` is not an integer.

    Notes
    -----
    Source: official code ``junkangLiu0/FedSWA`` (HEAD f725be9, ``main_FedSWA.py``), the SWA
    cycle of Izmailov et al. (2018) with one cycle per round. Sum over a round:
    ``sum_k eta_k = K*eta*(1+rho)/2 + eta*(1-rho)/2``.

    Examples
    --------
    >>> cyclic_lr(0, 4, 0.1), cyclic_lr(2, 4, 0.1, rho=0.5)
    (0.1, 0.075)
    """
    K = check_scalar(K, "K", kind=int, low=1)
    k = check_scalar(k, "k", kind=int, low=0, high=K, inclusive="left")
    eta = check_scalar(eta, "eta", low=0.0, high=math.inf, inclusive="neither")
    rho = check_scalar(rho, "rho", low=0.0, high=1.0)
    return _cyclic_lr(k, K, eta, rho)


def _cyclic_lr(k: int, K: int, eta: float, rho: float) -> float:
    """:func:`cyclic_lr` without argument checks (the local loop checks them once)."""
    frac = k / K
    return (1.0 - frac) * eta + frac * rho * eta


def round_lr(t: int, T: int, eta0: float, kind: str = "cosine") -> float:
    """Server-side learning-rate schedule over the rounds: the peak rate of round `t`.

    ``"cosine"``: ``eta_t = eta0 * (1 + cos(pi * t / T)) / 2``; ``"exp"``: ``eta0 * 0.998**t``;
    ``"constant"``: ``eta0``.

    Parameters
    ----------
    t : int
        Round, ``0 <= t <= T``.
    T : int
        Number of rounds, ``T >= 1``.
    eta0 : float
        Rate of round 0, ``> 0``.
    kind : {"cosine", "exp", "constant"}, default="cosine"
        ``"cosine"`` follows the official HEAD code (``main_FedSWA.py``); ``"exp"`` the May 2025
        upload (``main.py``, decay 0.998 per round); ``"constant"`` (chosen here) is for fixed-point
        analyses such as the quadratic drift test.

    Returns
    -------
    float
        ``eta_t``.

    Raises
    ------
    ValueError
        If `t` is outside ``[0, T]``, ``T < 1``, ``eta0 <= 0`` or `kind` is unknown.

    Examples
    --------
    >>> round_lr(0, 10, 0.05), round_lr(10, 10, 0.05)
    (0.05, 0.0)
    """
    T = check_scalar(T, "T", kind=int, low=1)
    t = check_scalar(t, "t", kind=int, low=0, high=T)
    eta0 = check_scalar(eta0, "eta0", low=0.0, high=math.inf, inclusive="neither")
    check_choice(kind, "kind", ("cosine", "exp", "constant"))
    if kind == "constant":
        return float(eta0)
    if kind == "cosine":
        return 0.5 * eta0 * (1.0 + math.cos(math.pi * t / T))
    return eta0 * 0.998**t
