"""Per-sample CATE risks used inside the cross-fitted importance.

Every function returns the per-sample loss ``ℓ_i(τ̂)`` as float64 and broadcasts over any leading
axes of ``tau_hat`` (the importance stage passes ``tau_hat`` of shape ``(P, n)`` — one row per
conditional permutation — against length-``n`` targets).

Sources
-------
- ``dr``: pseudo-outcome (DR-learner) risk, Kennedy (2023) Eq. (2); the risk of the paper's
  simulation configs (official ``scoring.compute_pseudo_outcome_risk``).
- ``r``: R-risk of Nie & Wager (2021) Eq. (4); the official library default
  (``scoring.compute_r_risk``). With ``τ̂ = τ`` it targets a ``π(1−π)``-weighted importance, fine for
  ranking but not for magnitudes.
- ``tau``: oracle risk ``(τ − τ̂)²`` for simulations where the true effect is known.
"""

from __future__ import annotations

import numpy as np

__all__ = ["RISKS", "dr_risk", "r_risk", "tau_risk"]


def _as_float(tau_hat, **targets):
    """float64 arrays; every target 1-D with the length of ``tau_hat``'s last axis."""
    tau_hat = np.asarray(tau_hat, dtype=np.float64)
    out = []
    for name, value in targets.items():
        value = np.asarray(value, dtype=np.float64)
        if value.ndim != 1 or tau_hat.ndim == 0 or value.shape[0] != tau_hat.shape[-1]:
            raise ValueError(
                f"`{name}` has shape {value.shape} but `tau_hat` has shape {tau_hat.shape}: "
                f"`{name}` must be 1-D with one entry per column of `tau_hat`'s last axis"
            )
        out.append(value)
    if not all(np.isfinite(a).all() for a in (tau_hat, *out)):
        raise ValueError("`tau_hat` and the risk targets must be finite (no NaN or infinity)")
    return tau_hat, *out


def dr_risk(tau_hat, pseudo_outcome):
    """DR (pseudo-outcome) risk ``(φ_i − τ̂(X_i))²``.

    Parameters
    ----------
    tau_hat : ndarray of shape (..., n), float
        CATE predictions.
    pseudo_outcome : ndarray of shape (n,), float
        Doubly robust pseudo-outcomes ``φ_i`` (see :meth:`RiskNuisances.pseudo_outcome`).

    Returns
    -------
    ndarray of shape (..., n), float64

    Raises
    ------
    ValueError
        If ``pseudo_outcome`` is not 1-D with the length of ``tau_hat``'s last axis.

    Notes
    -----
    Source: Kennedy (2023), "Towards optimal doubly robust estimation of heterogeneous causal
    effects", Eq. (2); Paillard et al. (2025) Sec. 3, the ``pseudo_outcome_risk`` of the official
    code.
    """
    tau_hat, pseudo_outcome = _as_float(tau_hat, pseudo_outcome=pseudo_outcome)
    return (pseudo_outcome - tau_hat) ** 2


def r_risk(tau_hat, y, t, m_hat, pi_hat):
    """R-risk ``((Y_i − m̂(X_i)) − (T_i − π̂(X_i)) τ̂(X_i))²``.

    Parameters
    ----------
    tau_hat : ndarray of shape (..., n), float
        CATE predictions.
    y : ndarray of shape (n,), float
        Outcomes.
    t : ndarray of shape (n,), {0, 1}
        Treatment indicators.
    m_hat : ndarray of shape (n,), float
        Outcome regression ``m̂(x) = E[Y | X = x]``.
    pi_hat : ndarray of shape (n,), float in (0, 1)
        Propensity ``π̂(x) = P(T = 1 | X = x)``.

    Returns
    -------
    ndarray of shape (..., n), float64

    Raises
    ------
    ValueError
        Targets that are not 1-D with the length of ``tau_hat``'s last axis, or ``t`` not in
        {0, 1}.

    Notes
    -----
    Source: Nie & Wager (2021), "Quasi-oracle estimation of heterogeneous treatment effects",
    Eq. (4); official ``scoring.compute_r_risk``.
    """
    tau_hat, y, t, m_hat, pi_hat = _as_float(tau_hat, y=y, t=t, m_hat=m_hat, pi_hat=pi_hat)
    if not np.isin(t, (0.0, 1.0)).all():
        raise ValueError("`t` must be binary in {0, 1}")
    if not ((pi_hat > 0) & (pi_hat < 1)).all():
        raise ValueError("`pi_hat` must lie strictly between 0 and 1")
    return ((y - m_hat) - (t - pi_hat) * tau_hat) ** 2


def tau_risk(tau_hat, tau):
    """Oracle risk ``(τ(X_i) − τ̂(X_i))²`` (simulations and semi-synthetic data only).

    Parameters
    ----------
    tau_hat : ndarray of shape (..., n), float
        CATE predictions.
    tau : ndarray of shape (n,), float
        True conditional average treatment effects.

    Returns
    -------
    ndarray of shape (..., n), float64

    Raises
    ------
    ValueError
        If ``tau`` is not 1-D with the length of ``tau_hat``'s last axis.

    Notes
    -----
    Source: official ``scoring.compute_tau_risk`` (the paper's IHDP experiment).
    """
    tau_hat, tau = _as_float(tau_hat, tau=tau)
    return (tau - tau_hat) ** 2


#: Risk names accepted by :class:`~permucate.PermuCATE` and :class:`~permucate.LOCO`.
RISKS = ("dr", "r", "tau")
