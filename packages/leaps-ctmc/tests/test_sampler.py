"""Jarzynski weights (spec test 4), AIS with Q = 0 (test 5), SNIS on 4 x 4 (test 9), grids (12)."""

import math

import pytest
import torch
from leaps_ctmc import (
    IsingPath,
    LocallyEquivariantConv,
    LocallyEquivariantMLP,
    PottsPath,
    ais,
    corrector,
    rates,
    sample,
    snis,
    time_grid,
)
from leaps_ctmc.exact import enumerate_states


def generator_parts(net, path, x, t):
    """Out-rates [512, 9] of a 3 x 3 Ising net over all 512 states, and g_t = -d_t U - K."""
    tt = torch.full((x.shape[0],), t, dtype=torch.float64)
    G = net(x, tt)
    out_rate = rates(G, x)[0].reshape(x.shape[0], 9)
    g = -path.dU_dt(x, tt) - corrector(G, x, path.neighbor_delta(x, tt))
    return out_rate, g


def test_jarzynski_identity_by_rk4_on_all_states(randomize):
    # d/dt f = Q_t^T f + g_t * f, f_0 = rho_0, must give f_1 = exp(-U_1) / Z_0 for ANY Q:
    # the weights are exact without training (paper Sec. 4, discrete Jarzynski).
    # (Q^T f)(x) = sum_i Q(flip_i x, x) f(flip_i x) - (sum_i Q(x, flip_i x)) f(x), brute force.
    path = IsingPath(3, 0.4407)
    net = randomize(LocallyEquivariantConv(2, kernel_sizes=(3, 3), channels=3), std=0.15, seed=9)
    x = enumerate_states(path, 0.0).x
    flip = torch.arange(512)[:, None] ^ (1 << (8 - torch.arange(9)))[None, :]  # [512, 9]
    rate_scale = float(generator_parts(net, path, x, 0.5)[0].max())
    assert 0.5 < rate_scale < 50  # a non-trivial, non-stiff Q

    cache = {}

    def rhs(t, f):
        if t not in cache:  # k2, k3 share t + h/2 and k4 is the next step's k1
            if len(cache) > 4:
                cache.clear()
            cache[t] = generator_parts(net, path, x, t)
        out_rate, g = cache[t]
        inflow = (out_rate[flip, torch.arange(9)] * f[flip]).sum(1)
        return inflow - out_rate.sum(1) * f + g * f

    f = torch.full((512,), 1 / 512, dtype=torch.float64)
    n = 250
    h = 1.0 / n
    with torch.no_grad():
        for k in range(n):
            t = k * h
            k1 = rhs(t, f)
            k2 = rhs(t + h / 2, f + h / 2 * k1)
            k3 = rhs(t + h / 2, f + h / 2 * k2)
            k4 = rhs(t + h, f + h * k3)
            f = f + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    target = torch.exp(-path.U(x, torch.ones(512, dtype=torch.float64))) / 512
    torch.testing.assert_close(f, target, rtol=1e-6, atol=0)


def test_ais_without_mcmc_is_unbiased_for_z_ratio():
    # Q = 0: E[e^A] = Z_1 / Z_0 exactly; compare within 3 standard errors (3 x 3 Ising).
    path = IsingPath(3, 0.4407)
    exact = enumerate_states(path).log_z - path.log_z0
    res = ais(path, 20000, 10, generator=torch.Generator().manual_seed(0))
    assert abs(res.log_z - exact) < 3 * res.log_z_se
    assert res.meta["net_evals"] == 0
    assert res.meta["n_steps"] == 10


def test_ais_with_mcmc_and_resampling_is_consistent_potts():
    path = PottsPath(3, 3, 1.001)
    exact = enumerate_states(path).log_z - path.log_z0
    res = ais(path, 4000, 20, mcmc_sweeps=1, resample_threshold=0.5,
              generator=torch.Generator().manual_seed(1))  # fmt: skip
    assert res.meta["n_resamples"] >= 1
    assert abs(res.log_z - exact) < 4 * res.log_z_se + 0.05


@pytest.mark.parametrize("scheme", ["euler", "tau_leap"])
def test_snis_observables_match_enumeration_4x4(scheme):
    # <|M|>, energy and G(r) = <s_0 s_r> on 4 x 4 with a random-init LEC (default init) and
    # LEAPS weights: within 3 standard errors of the exact values from 65 536 states. One
    # Metropolis sweep per step keeps the ESS high enough for the delta-method s.e. to hold.
    path = IsingPath(4, 0.4407)
    torch.manual_seed(0)
    net = LocallyEquivariantConv(2, kernel_sizes=(3, 5), channels=4)
    res = sample(path, net, 2500, 40, scheme=scheme, mcmc_sweeps=1,
                 generator=torch.Generator().manual_seed(2))  # fmt: skip
    assert res.ess > 0.2
    enum = enumerate_states(path)

    def observables(x):
        xd = x.to(torch.float64)
        corr = [(xd * xd.roll(r, -1)).mean((-1, -2)) for r in (1, 2)]
        return torch.stack(
            [xd.mean((-1, -2)).abs(), path.U(xd, torch.ones(len(xd), dtype=torch.float64)), *corr],
            1,
        )

    mean, se = snis(res.log_w, observables(res.x))
    exact = (enum.probs[:, None] * observables(enum.x)).sum(0)
    assert torch.all((mean - exact).abs() < 3 * se), (mean, exact, se)


def test_trained_free_net_moves_walkers_and_weights_stay_finite():
    path = PottsPath(3, 3, 1.001)
    net = LocallyEquivariantMLP(9, 3, hidden=(8,))
    res = sample(path, net, 50, 10, scheme="tau_leap", resample_threshold=0.9,
                 generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert torch.isfinite(res.log_w).all()
    assert 0 < res.ess <= 1
    assert res.x.dtype == torch.int64
    assert res.x.shape == (50, 3, 3)


@pytest.mark.parametrize(
    ("kwargs", "n"),
    [
        ({"n_steps": 50}, 50),
        ({"n_steps": 7}, 7),
        ({"dt": 0.03}, 34),
        ({"dt": 0.008}, 125),
        ({"n_steps": 300, "grid": "exp"}, 300),
        ({"n_steps": 9, "grid": lambda s: s**2}, 9),
    ],
)
def test_time_grid_ends_exactly_at_one(kwargs, n):
    t = time_grid(**kwargs)
    assert t.dtype == torch.float64
    assert len(t) == n + 1
    assert float(t[0]) == 0.0
    assert float(t[-1]) == 1.0
    assert torch.all(t[1:] > t[:-1])


def test_exp_grid_is_the_official_potts_schedule():
    t = time_grid(4, grid="exp")
    s = 0.5
    assert float(t[2]) == pytest.approx(((1 - math.exp(-5 * s)) / (1 - math.exp(-5))) ** 3)
