"""Inference on cross-fitted importances: Nadeau–Bengio corrected t-test and intervals."""

from __future__ import annotations

import numpy as np
from hidimstat.statistical_tools import nadeau_bengio_ttest
from scipy import stats

__all__ = ["corrected_ttest"]


def corrected_ttest(fold_values, alpha=0.05):
    """One-sided Nadeau–Bengio corrected t-test of ``ψ_j > 0`` over ``K`` fold values.

    ``t = mean / sqrt(s² (1/K + n_test/n_train))`` with ``s²`` the ddof=1 variance across folds,
    ``n_test/n_train = 1/(K − 1)`` for K-fold cross-fitting, and ``K − 1`` degrees of freedom; the
    two-sided ``1 − alpha`` interval is ``mean ± t_{K−1, 1−alpha/2} · se``.

    Parameters
    ----------
    fold_values : ndarray of shape (G, K), float
        Importance of each of ``G`` features / groups on each of ``K >= 2`` folds.
    alpha : float in (0, 1), default=0.05

    Returns
    -------
    pvalues : ndarray of shape (G,)
        One-sided p-values. Where every fold agrees exactly (``se = 0``): 1 if the mean is
        ``<= 0`` (no evidence), 0 otherwise.
    conf_int : ndarray of shape (G, 2)
    std_err : ndarray of shape (G,)

    Notes
    -----
    Source: Nadeau & Bengio (2003) corrected resampled t-test; official
    ``utils.compute_corrected_ttest`` (right-tailed, ``test_frac = n_test/n_train``); the statistic
    comes from ``hidimstat.statistical_tools.nadeau_bengio_ttest``.
    """
    fold_values = np.asarray(fold_values, dtype=np.float64)
    k = fold_values.shape[1]
    test_frac = 1.0 / (k - 1)
    mean = fold_values.mean(axis=1)
    std_err = np.sqrt(fold_values.var(axis=1, ddof=1) * (1.0 / k + test_frac))
    degenerate = std_err == 0
    pvalues = np.where(mean > 0, 0.0, 1.0)
    if (~degenerate).any():
        pvalues[~degenerate] = nadeau_bengio_ttest(
            fold_values[~degenerate], 0.0, test_frac, axis=1, alternative="greater"
        ).pvalue
    half = stats.t.ppf(1 - alpha / 2, k - 1) * std_err
    return pvalues, np.column_stack([mean - half, mean + half]), std_err
