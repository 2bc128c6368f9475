r"""Confidence intervals of LAION-C accuracies.

A cell's accuracy is a binomial proportion, ``correct`` of ``total`` images, and gets the
Wilson score interval [1]_, which keeps its coverage near 0 and 1, where small LAION-C cells
often sit (a normal-approximation interval collapses to a point there). The benchmark's
"Avg. Accuracy" is the unweighted mean of K cell proportions and gets the stratified Wilson
interval [2]_: Wilson's interval with the effective sample size
:math:`n_\mathrm{eff} = \left(\sum_k w_k^2 / n_k\right)^{-1}`, :math:`w_k = 1/K`, i.e. the
score test inverted with the variance :math:`p(1-p) \sum_k w_k^2 / n_k` of a proportion common
to the cells. What holds, against the true variance
:math:`V = \sum_k w_k^2 p_k(1-p_k)/n_k` of the mean:

* equal cell sizes: it is Wilson's interval of the pooled counts, and its variance is at least
  :math:`V` (Jensen: :math:`\bar p(1-\bar p) \ge \frac1K \sum_k p_k(1-p_k)`), so it is
  conservative when the cell accuracies differ;
* cells sharing one accuracy (any sizes): its variance is exactly :math:`V`;
* unequal sizes *and* unequal accuracies: its variance can fall short of :math:`V`, by at most
  the factor :math:`\max_k n_k / \min_k n_k`, and the coverage can drop below nominal. Simulated
  at 95 %: ``n = (3, 300)``, ``p = (0.5, 0)`` covers 75 %; ``n = (10, 1000, 1000)``,
  ``p = (0.5, 0.01, 0.01)`` 89 %; the 9- and 27-trial cells that ``laion-c reproduce`` mixes
  (``n = (9, 27) x 5``, ``p = (0.5, 0.05) x 5`` or ``(0.05, 0.5) x 5``) 95 % and 99 %
  (``tests/test_uncertainty.py`` checks these). Cells of one LAION-C release are near-equal.

Both treat the images of a cell as independent trials, and the mean's interval the cells as
independent samples. Several seeds of one photo (as in ``laion-c reproduce``), or cells built
from the same source photos, are not, so intervals over them are narrower than warranted.

References
----------
.. [1] E. B. Wilson, "Probable inference, the law of succession, and statistical inference",
   Journal of the American Statistical Association 22(158):209-212, 1927.
.. [2] X. Yan and X. G. Su, "Stratified Wilson and Newcombe confidence intervals for multiple
   binomial proportions", Statistics in Biopharmaceutical Research 2(3):329-335, 2010.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from icml25_core import check_array, check_scalar


def _z(confidence) -> float:
    """Two-sided standard normal quantile ``Phi^-1((1 + confidence) / 2)``."""
    confidence = check_scalar(confidence, "confidence", low=0, high=1, inclusive="neither")
    return float(ndtri((1 + float(confidence)) / 2))


def _counts(correct, total) -> tuple[np.ndarray, np.ndarray]:
    correct = check_array(correct, "correct", dtype="numeric", allow_empty=False, cast=np.float64)
    total = check_array(total, "total", dtype="numeric", allow_empty=False, cast=np.float64)
    if correct.shape != total.shape:
        raise ValueError(
            f"`correct` and `total` must have one shape, got {correct.shape} and {total.shape}"
        )
    if (total <= 0).any():
        raise ValueError("`total` must be > 0 in every cell")
    if ((correct < 0) | (correct > total)).any():
        raise ValueError("`correct` must lie in [0, total] in every cell")
    return correct, total


def _wilson(p, n, z):
    """Wilson's score interval of a proportion `p` of `n` trials at normal quantile `z` [1]_:
    ``(p + z^2/2n ± z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)``."""
    z2 = z * z
    denominator = 1 + z2 / n
    center = (p + z2 / (2 * n)) / denominator
    half = z * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # the exact interval always holds p (and is 0 / 1 at p = 0 / 1): keep rounding from moving
    # a bound past it
    return np.clip(center - half, 0.0, p), np.clip(center + half, p, 1.0)


def wilson_interval(correct, total, *, confidence: float = 0.95):
    r"""Wilson score interval of the accuracy ``correct / total`` (per cell).

    $$
    \frac{\hat p + \frac{z^2}{2n} \pm z\sqrt{\frac{\hat p(1-\hat p)}{n} + \frac{z^2}{4n^2}}}
    {1 + \frac{z^2}{n}}, \qquad z = \Phi^{-1}\!\left(\tfrac{1 + \mathrm{confidence}}{2}\right)
    $$

    Source: Wilson (1927), JASA 22:209-212; the same as ``statsmodels``
    ``proportion_confint(method="wilson")``.

    Parameters
    ----------
    correct : int or array_like of int, shape (...)
        Correctly classified images, ``0 <= correct <= total``.
    total : int or array_like of int, shape (...)
        Images scored, ``> 0``; same shape as `correct`.
    confidence : float in (0, 1), default=0.95

    Returns
    -------
    low, high : numpy.ndarray, shape (...), float64
        Bounds in [0, 1] (0-d arrays for scalar input).

    Raises
    ------
    ValueError
        If the shapes differ, ``total <= 0``, ``correct`` is outside ``[0, total]``, a value is
        NaN/inf, or `confidence` is outside (0, 1).
    TypeError
        If `confidence` is not a number.

    Examples
    --------
    >>> low, high = wilson_interval(0, 9)
    >>> round(float(low), 3), round(float(high), 3)
    (0.0, 0.299)
    """
    correct, total = _counts(correct, total)
    return _wilson(correct / total, total, _z(confidence))


def mean_interval(correct, total, *, confidence: float = 0.95):
    r"""Stratified Wilson interval of the unweighted mean of K cell accuracies ("Avg.").

    Wilson's interval (:func:`wilson_interval`) of :math:`\bar p = \frac1K \sum_k c_k / n_k`
    with the effective sample size

    $$
    n_\mathrm{eff} = \Big(\sum_{k=1}^{K} \frac{w_k^2}{n_k}\Big)^{-1}, \qquad w_k = \frac1K .
    $$

    Source: Yan & Su (2010), Statistics in Biopharmaceutical Research 2(3):329-335 (stratified
    Wilson interval); with equal ``n_k`` it equals Wilson's interval of the pooled counts and
    is conservative. With unequal ``n_k`` and unequal accuracies it can under-cover (e.g. 75 %
    for a nominal 95 % at ``n = (3, 300)``, ``p = (0.5, 0)``); see :mod:`laion_c.uncertainty`.

    Parameters
    ----------
    correct, total : array_like of int, shape (K,)
        Per-cell counts as in :func:`wilson_interval`, ``K >= 1``.
    confidence : float in (0, 1), default=0.95

    Returns
    -------
    low, high : float
        Bounds in [0, 1].

    Raises
    ------
    ValueError
        As :func:`wilson_interval`, or if the counts are not 1-D.
    """
    correct, total = _counts(correct, total)
    if correct.ndim != 1:
        raise ValueError(
            f"`correct` and `total` must be 1-D (one entry per cell), got {correct.ndim}-D"
        )
    weights = np.full(len(total), 1.0 / len(total))
    n_eff = 1.0 / np.sum(weights**2 / total)
    low, high = _wilson(np.sum(weights * correct / total), n_eff, _z(confidence))
    return float(low), float(high)
