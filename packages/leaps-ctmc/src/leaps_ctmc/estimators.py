"""Importance-sampling estimators on log-weights: log-mean-exp, ESS, SNIS, systematic resampling.

Source: LEAPS (Holderrieth, Albergo, Jaakkola, ICML 2025), Sec. 4 and Algorithm 1: self-
normalised importance sampling (SNIS) with the Jarzynski weights e^{A}, log Z estimate
log mean e^{A}, ESS = (mean e^A)^2 / mean e^{2A} in (0, 1], resampling when ESS <= delta.
All reductions run in float64 on max-shifted weights, so log-weights of +-1e4 do not overflow.
Diagnostics of the weights (issue 30): Pareto k̂ of their right tail (PSIS, Vehtari, Simpson,
Gelman, Yao & Gabry, JMLR 25 (2024) 72, through arviz-stats) and a bootstrap interval of log Z.
Axis letter: M walkers.
"""

import math
import warnings

import numpy as np
import torch
from arviz_stats.base import array_stats

from icml25_core import check_scalar, check_tensor

from .paths import check_generator

__all__ = [
    "bootstrap_log_z", "ess", "log_mean_exp", "pareto_khat", "snis", "systematic_resample",
]  # fmt: skip


def _check_log_w(log_w) -> torch.Tensor:
    check_tensor(log_w, "log_w", ndim=1, finite=False)
    if not log_w.is_floating_point():
        raise TypeError(f"`log_w` must be a floating tensor, got dtype {log_w.dtype}")
    log_w = log_w.to(torch.float64)
    if bool(torch.isnan(log_w).any()) or bool((log_w == math.inf).any()):
        raise ValueError("`log_w` contains NaN or +inf")
    if bool((log_w == -math.inf).all()):
        raise ValueError("`log_w` is -inf everywhere: every weight is zero")
    return log_w


def log_mean_exp(log_w) -> float:
    """log (1/M sum_m e^{log_w_m}), the log Z_1/Z_0 estimate (float64).

    Parameters
    ----------
    log_w : Tensor, float [M]
        Log-weights; -inf entries are zero weights.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Empty, NaN or +inf entries, or all -inf.
    """
    log_w = _check_log_w(log_w)
    return float(torch.logsumexp(log_w, 0) - math.log(log_w.numel()))


def ess(log_w) -> float:
    """Normalised effective sample size (sum w)^2 / (M sum w^2) in (0, 1] (float64).

    Parameters
    ----------
    log_w : Tensor, float [M]

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Empty, NaN or +inf entries, or all -inf.
    """
    log_w = _check_log_w(log_w)
    log_w = log_w - log_w.max()  # shift first: no cancellation between two large numbers
    value = 2 * torch.logsumexp(log_w, 0) - torch.logsumexp(2 * log_w, 0)
    return float(torch.exp(value - math.log(log_w.numel())).clamp(max=1.0))


def snis(log_w, values):
    """Self-normalised importance-sampling mean sum_m softmax(log_w)_m h(X_m) and its s.e.

    The standard error is the delta-method one, sqrt(sum_m wbar_m^2 (h_m - mean)^2).

    Parameters
    ----------
    log_w : Tensor, float [M]
    values : Tensor, float [M] or [M, ...]
        h(X_m).

    Returns
    -------
    (mean, se) : two float64 Tensors of shape values.shape[1:].

    Raises
    ------
    ValueError
        Bad `log_w` (see :func:`ess`), `values` 0-d, with another length or NaN.
    """
    log_w = _check_log_w(log_w)
    check_tensor(values, "values")
    if values.ndim == 0:
        raise ValueError("`values` must have one row per walker, shape [M, ...], got a 0-d tensor")
    if values.shape[0] != log_w.shape[0]:
        raise ValueError(f"`values` must have {log_w.shape[0]} rows, got {values.shape[0]}")
    w = torch.softmax(log_w, 0).reshape(-1, *([1] * (values.ndim - 1)))
    v = values.to(torch.float64)
    mean = (w * v).sum(0)
    se = torch.sqrt((w**2 * (v - mean) ** 2).sum(0))
    return mean, se


def systematic_resample(log_w, generator=None) -> torch.Tensor:
    """Systematic resampling: M indices with counts within M * wbar_m +- 1.

    Positions (u + k) / M, u ~ U[0, 1), looked up with ``torch.searchsorted`` in the float64
    cumulative weights whose last entry is set to exactly 1, so no index runs past the end (the
    official code's float32 while-loop can).

    Parameters
    ----------
    log_w : Tensor, float [M]
    generator : torch.Generator, optional

    Returns
    -------
    Tensor, int64 [M], indices in [0, M).

    Raises
    ------
    ValueError
        Bad `log_w` (see :func:`ess`).
    TypeError
        `generator` that is not a torch.Generator.
    """
    log_w = _check_log_w(log_w)
    check_generator(generator)
    M = log_w.numel()
    cdf = torch.softmax(log_w, 0).cumsum(0)
    cdf[-1] = 1.0
    u = torch.rand((), generator=generator, dtype=torch.float64, device=log_w.device)
    positions = (u + torch.arange(M, dtype=torch.float64, device=log_w.device)) / M
    return torch.searchsorted(cdf, positions, right=True).clamp(max=M - 1)


def pareto_khat(log_w) -> float:
    """Pareto k̂ of the importance weights' right tail (PSIS diagnostic).

    A generalised Pareto distribution is fitted to the largest M_tail = min(M / 5, 3 sqrt(M))
    weights (Zhang & Stephens 2009, with the weakly informative prior of Vehtari et al. 2024,
    Sec. 3); k̂ estimates the tail index: the weights have finite variance only for k < 1/2.
    Read (Vehtari et al. 2024, Sec. 3.2): k̂ <= 0.5 the ESS and standard errors are reliable;
    0.5 < k̂ <= 0.7 usable, convergence slower; k̂ > 0.7 the estimate may be far off and the
    ESS says nothing (M would have to grow beyond practical sizes).

    Parameters
    ----------
    log_w : Tensor, float [M]
        Log-weights.

    Returns
    -------
    float
        k̂; NaN when fewer than 10 weights are finite or the tail's weights are all equal
        (no tail to fit; arviz raises there). With many tied weights in the tail (plain AIS
        on a lattice) the fit can come out small although the weights are degenerate: read
        k̂ with the ESS (``SampleResult.problems`` does).

    Raises
    ------
    ValueError
        Empty, NaN or +inf entries, or all -inf.

    Notes
    -----
    Computed by ``arviz_stats.base.array_stats.psislw`` (r_eff = 1: independent walkers);
    tested against weights drawn from generalised Pareto laws of known k.
    """
    log_w = _check_log_w(log_w)
    if log_w.numel() < 10:
        return math.nan
    values = log_w.detach().cpu().numpy()
    finite = values[np.isfinite(values)]
    if finite.size < 10:
        return math.nan
    try:
        # arviz-stats' psislw takes log-likelihoods and negates them (PSIS-LOO's log weights
        # are -log_lik), so the log weights go in negated
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy's, on tied tail weights
            _, khat = array_stats.psislw(finite.max() - finite)
    except ValueError:  # arviz: "All tail values are the same" (no tail to fit)
        return math.nan
    return float(khat)


def bootstrap_log_z(log_w, n_boot=1000, level=0.95, generator=None) -> tuple[float, float]:
    """Percentile bootstrap interval of log (1/M sum_m e^{log_w_m}) (Efron & Tibshirani 1993,
    Ch. 13): resample the M walkers with replacement `n_boot` times.

    With heavy-tailed weights (Pareto k̂ > 0.7) the bootstrap misses the tail it never saw and
    the interval is too narrow, like the delta-method standard error.

    Parameters
    ----------
    log_w : Tensor, float [M]
    n_boot : int >= 1, default=1000
    level : float in (0, 1), default=0.95
    generator : torch.Generator, optional

    Returns
    -------
    (low, high) : two floats

    Raises
    ------
    ValueError
        Bad `log_w` (see :func:`ess`), `n_boot` < 1, `level` outside (0, 1).
    TypeError
        `generator` that is not a torch.Generator.
    """
    log_w = _check_log_w(log_w)
    check_scalar(n_boot, "n_boot", kind=int, low=1)
    check_scalar(level, "level", low=0.0, high=1.0, inclusive="neither")
    check_generator(generator)
    M = log_w.numel()
    estimates = torch.empty(n_boot, dtype=torch.float64)
    for start in range(0, n_boot, 64):  # chunks keep memory at 64 x M indices
        n = min(64, n_boot - start)
        idx = torch.randint(M, (n, M), generator=generator, device=log_w.device)
        estimates[start : start + n] = torch.logsumexp(log_w[idx], 1).cpu() - math.log(M)
    tail = (1 - level) / 2
    low, high = torch.quantile(estimates, torch.tensor([tail, 1 - tail], dtype=torch.float64))
    return float(low), float(high)
