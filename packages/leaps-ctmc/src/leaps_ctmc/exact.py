"""Exact references: brute-force enumeration, Kaufman's finite-torus Ising Z, Potts transfer matrix.

Sources: B. Kaufman, "Crystal statistics II", Phys. Rev. 76 (1949) 1232, the closed form of Z on
an m x n torus (also e.g. Beale, PRL 76 (1996) 78); the row transfer matrix, Baxter, "Exactly
Solved Models in Statistical Mechanics" (1982), Ch. 2. Used to check LEAPS' log Z estimates.
:func:`euler_weight_moments` computes what the sampler's weights estimate once time is
discretised: E[e^{A_N}] and E[e^{2 A_N}] of the Euler-stepped process, by dynamic programming over
all states (issue 30), so a discretisation bias can be told from sampling noise.
"""

import itertools
import math
from typing import NamedTuple

import numpy as np
import torch

from icml25_core import check_scalar

from .nets import check_net_fits, corrector, rates
from .paths import check_time
from .sampler import check_uniform_start, time_grid

__all__ = [
    "Enumeration", "WeightMoments", "enumerate_states", "euler_weight_moments",
    "ising_logz_kaufman", "potts_logz_transfer",
]  # fmt: skip

MAX_STATES = 2**24
MAX_DP_STATES = 2**16


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


class WeightMoments(NamedTuple):
    """Exact moments of the Jarzynski weights of the discretised sampler.

    Attributes
    ----------
    log_z : float
        log E[e^{A_N}]: what ``sample(...).log_z`` estimates (Z_1 / Z_0 only as h -> 0).
    ess : float
        Population ESS E[e^A]^2 / E[e^{2A}] in (0, 1]: the limit of ``sample(...).ess`` as the
        number of walkers grows.
    """

    log_z: float
    ess: float


def euler_weight_moments(path, net, n_steps: int, *, grid="uniform") -> WeightMoments:
    """E[e^{A_N}] and E[e^{2 A_N}] of :func:`leaps_ctmc.sample` (scheme "euler", no MCMC, no
    resampling), exactly, by dynamic programming over all q^d states.

    With m_k(x) = E[e^{j A_k} 1{X_k = x}] (j = 1, 2), m_0 = rho_0 and, per step of length h
    at t_k (the sampler's left-point rule: g and the rates from one net pass at (X_k, t_k)),

        m_{k+1}(y) = sum_x m_k(x) e^{j h g_{t_k}(x)} P_k(x, y),
        P_k(x, Swap(x, i, tau)) = min(1, h r(x)) Q_{t_k}(x, Swap(x, i, tau)) / r(x),
        P_k(x, x) = 1 - min(1, h r(x)),   r(x) = sum_{i, tau} Q_{t_k}(x, Swap(x, i, tau)),

    and E[e^{j A_N}] = sum_y m_N(y) (LEAPS, Holderrieth et al. 2025, Algorithm 1 with the Euler
    jump of :func:`leaps_ctmc.sample`). Each m_k is renormalised in float64 with its log-scale
    carried, so stiff processes do not overflow.

    Parameters
    ----------
    path : IsingPath, PottsPath or GraphIsingPath
        At most 2^16 states.
    net : nn.Module
        Locally equivariant rate net of the path.
    n_steps : int >= 1
    grid : {"uniform", "exp"} or callable, default="uniform"

    Returns
    -------
    WeightMoments

    Raises
    ------
    ValueError
        More than 2^16 states, n_steps < 1, a net that does not fit the path, a bad grid, a
        path whose rho_0 is not uniform.
    TypeError
        `net` not an nn.Module.
    """
    check_net_fits(net, path)
    check_uniform_start(path)
    n, q = path.n_sites, path.q
    if n * math.log(q) > math.log(MAX_DP_STATES) + 1e-9:
        raise ValueError(f"`path` has {q}^{n} states; the exact moments refuse more than 2^16")
    times = time_grid(n_steps, grid=grid)
    x = enumerate_states(path, 0.0).x
    count = x.shape[0]
    digits = ((x + 1) / 2).to(torch.int64) if path.spin else x
    digits = digits.reshape(count, n)
    place = q ** torch.arange(n - 1, -1, -1)  # site 0 is the most significant digit
    # destination of each move, in the flat order of the sampler's jump: Ising a flip of site
    # i (digit d -> 1 - d), Potts (tau, site) at tau * n + site
    index = torch.arange(count)[:, None]
    if path.spin:
        dest = index + (1 - 2 * digits) * place
    else:
        tau = torch.arange(q)[:, None].expand(q, n)
        dest = (index[:, :, None] + (tau[None] - digits[:, None, :]) * place).reshape(count, -1)
    param = next(net.parameters(), None)
    dtype = param.dtype if param is not None else torch.float32
    log_m = torch.full((2, count), -math.log(count), dtype=torch.float64)
    with torch.inference_mode():
        for k in range(n_steps):
            t, h = float(times[k]), float(times[k + 1] - times[k])
            tt = torch.full((count,), t, dtype=torch.float64)
            xt = x.to(dtype) if path.spin else x
            G = net(xt, tt.to(dtype)).to(torch.float64)
            g = -path.dU_dt(x, tt) - corrector(G, x, path.neighbor_delta(x, tt))
            out_rate = rates(G, x)[0].reshape(count, -1)
            total = out_rate.sum(1)
            p_move = (h * total).clamp(max=1.0)
            step = torch.where(total[:, None] > 0, out_rate / total[:, None], 0.0)
            moves = p_move[:, None] * step
            new = torch.empty_like(log_m)
            for j in (1, 2):
                log_w = log_m[j - 1] + j * h * g
                shift = log_w.max()
                w = torch.exp(log_w - shift)
                mass = w * (1 - p_move)
                mass = mass.index_add(0, dest.reshape(-1), (w[:, None] * moves).reshape(-1))
                new[j - 1] = torch.log(mass) + shift
            log_m = new
    log_z1, log_z2 = (float(torch.logsumexp(row, 0)) for row in log_m)
    return WeightMoments(log_z1, math.exp(min(0.0, 2 * log_z1 - log_z2)))
