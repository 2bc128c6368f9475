"""Exact references: brute-force enumeration, Kaufman's finite-torus Ising Z, Potts transfer matrix.

Sources: B. Kaufman, "Crystal statistics II", Phys. Rev. 76 (1949) 1232, the closed form of Z on
an m x n torus (also e.g. Beale, PRL 76 (1996) 78); the row transfer matrix, Baxter, "Exactly
Solved Models in Statistical Mechanics" (1982), Ch. 2. Used to check LEAPS' log Z estimates.
"""

import itertools
import math
from typing import NamedTuple

import numpy as np
import torch

from icml25_core import check_scalar

from .paths import check_time

__all__ = ["Enumeration", "enumerate_states", "ising_logz_kaufman", "potts_logz_transfer"]

MAX_STATES = 2**24


class Enumeration(NamedTuple):
    """Every state of a path with its energy at one time.

    Attributes
    ----------
    x : Tensor, [q^d, *S]
        All states (Ising float64 spins, Potts int64).
    U : Tensor, float64 [q^d]
        U_t(x).
    log_z : float
        log Z_t = logsumexp(-U).
    """

    x: torch.Tensor
    U: torch.Tensor
    log_z: float

    @property
    def probs(self) -> torch.Tensor:
        """rho_t(x) = e^{-U_t(x)} / Z_t, float64 [q^d]."""
        return torch.exp(-self.U - self.log_z)


def enumerate_states(path, t=1.0) -> Enumeration:
    """All q^d states of `path` with U_t and log Z_t (brute force, float64).

    Parameters
    ----------
    path : IsingPath, PottsPath or GraphIsingPath
    t : float in [0, 1], default=1.0

    Returns
    -------
    Enumeration

    Raises
    ------
    ValueError
        More than 2^24 states, or t outside [0, 1].
    """
    n = path.n_sites
    if n * math.log(path.q) > math.log(MAX_STATES) + 1e-9:
        raise ValueError(f"`path` has {path.q}^{n} states; enumeration refuses more than 2^24")
    check_time(float(t), 1, torch.float64)
    digits = torch.tensor(list(itertools.product(range(path.q), repeat=n)), dtype=torch.int64)
    x = digits.reshape(-1, *path.site_shape)
    if path.spin:
        x = (2 * x - 1).to(torch.float64)
    tt = torch.full((x.shape[0],), float(t), dtype=torch.float64)
    U = path.U(x, tt).to(torch.float64)
    return Enumeration(x, U, float(torch.logsumexp(-U, 0)))


def _log_2cosh(a):
    a = np.abs(a)
    return a + np.log1p(np.exp(-2 * a))


def _log_2sinh(a):
    """(log|2 sinh a|, sign a)."""
    b = np.abs(a)
    with np.errstate(divide="ignore"):
        return b + np.log(-np.expm1(-2 * b)), np.sign(a)


def ising_logz_kaufman(m: int, n: int, K: float) -> float:
    """log Z of the zero-field Ising model on an m x n torus with coupling K = beta J.

    Z = 1/2 (2 sinh 2K)^{mn/2} (Z1 + Z2 + Z3 + Z4) with
    Z1, Z2 = prod_{r=0}^{n-1} 2cosh, 2sinh (m gamma_{2r+1} / 2),
    Z3, Z4 = prod_{r=0}^{n-1} 2cosh, 2sinh (m gamma_{2r} / 2),
    cosh gamma_k = cosh 2K coth 2K - cos(pi k / n) (k >= 1), gamma_0 = 2K + ln tanh K (signed:
    negative below K_c, so Z4 changes sign; summed as a signed log-sum-exp). Kaufman (1949).

    Parameters
    ----------
    m, n : int >= 2
        Torus sides.
    K : float > 0
        Coupling beta * J.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        m or n < 2, K <= 0 or not finite.
    """
    m = int(check_scalar(m, "m", kind=int, low=2))
    n = int(check_scalar(n, "n", kind=int, low=2))
    K = float(check_scalar(K, "K", low=0.0, inclusive="neither"))
    if not math.isfinite(K):
        raise ValueError(f"`K` must be finite, got {K}")
    k = np.arange(2 * n)
    c = math.cosh(2 * K) / math.tanh(2 * K) - np.cos(np.pi * k / n)
    gamma = np.arccosh(np.maximum(c, 1.0))
    gamma[0] = 2 * K + math.log(math.tanh(K))
    odd, even = m * gamma[1::2] / 2, m * gamma[0::2] / 2
    log_terms: list[float] = []
    sign_terms: list[float] = []
    for half in (odd, even):
        log_terms.append(_log_2cosh(half).sum())
        sign_terms.append(1.0)
        ls, sg = _log_2sinh(half)
        log_terms.append(ls.sum())
        sign_terms.append(float(np.prod(sg)))
    logs, signs = np.array(log_terms), np.array(sign_terms)
    top = logs[signs != 0].max()
    total = float((signs * np.exp(logs - top)).sum())
    return -math.log(2) + m * n / 2 * math.log(2 * math.sinh(2 * K)) + top + math.log(total)


def potts_logz_transfer(L: int, q: int, K: float) -> float:
    """log Z of the q-state Potts model H = -sum_<ij> delta(s_i, s_j) on an L x L torus, K = beta J.

    Row transfer matrix T[a, b] = exp(K (h(a) + h(b)) / 2 + K v(a, b)) over the q^L row states,
    h = equal horizontal neighbours within a row (circular), v = equal vertical pairs; T is
    symmetric, so log Z = log tr T^L = log sum_k lambda_k^L (signed, float64).

    Parameters
    ----------
    L : int >= 3
    q : int >= 2
    K : float (finite)

    Returns
    -------
    float

    Raises
    ------
    ValueError
        L < 3, q < 2, q^L > 4096 row states, non-finite K.
    """
    L = int(check_scalar(L, "L", kind=int, low=3))
    q = int(check_scalar(q, "q", kind=int, low=2))
    K = float(check_scalar(K, "K"))
    if not math.isfinite(K):
        raise ValueError(f"`K` must be finite, got {K}")
    if q**L > 4096:
        raise ValueError(f"`q`^`L` = {q**L} row states is too many for a dense transfer matrix")
    rows = np.array(list(itertools.product(range(q), repeat=L)))
    h = (rows == np.roll(rows, 1, axis=1)).sum(1)
    v = (rows[:, None, :] == rows[None, :, :]).sum(2)
    T = np.exp(K * (h[:, None] + h[None, :]) / 2 + K * v)
    lam = np.linalg.eigvalsh(T)
    top = np.abs(lam).max()
    return float(L * math.log(top) + math.log(np.sum((lam / top) ** L)))


enumerate = enumerate_states  # the spec name, exact.enumerate(path, t)
