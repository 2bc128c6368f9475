import math

import numpy as np
import pytest
import torch
from phonepure import OUVESDE, ald_step_size, pc_sample
from scipy.integrate import quad


@pytest.mark.parametrize("t", [0.03, 0.1, 0.5, 1.0])
def test_std_matches_quad(t):
    sde = OUVESDE()
    val, _ = quad(
        lambda s: math.exp(-2 * sde.theta * (t - s)) * sde.sigma(s) ** 2,
        0,
        t,
        epsabs=1e-13,
        epsrel=1e-12,
    )
    assert sde.std(t) ** 2 == pytest.approx(val, abs=1e-8)


def test_std_at_one_and_ald_step():
    sde = OUVESDE()
    assert sde.std(1.0) == pytest.approx(0.388983, abs=1e-6)
    assert ald_step_size(sde, 1.0, 0.4) == pytest.approx(0.048418, abs=2e-6)


def test_euler_maruyama_matches_marginal():
    sde = OUVESDE()
    rng = np.random.default_rng(0)
    n, steps, x0, y = 20000, 2000, 1.0, 0.2
    x = np.full(n, x0)
    dt = 1.0 / steps
    for i in range(steps):
        t = i * dt
        x = x + sde.theta * (y - x) * dt + sde.sigma(t) * math.sqrt(dt) * rng.standard_normal(n)
    m = math.exp(-sde.theta) * x0 + (1 - math.exp(-sde.theta)) * y
    assert x.mean() == pytest.approx(m, rel=0.02)
    assert x.std() == pytest.approx(sde.std(1.0), rel=0.02)


def test_pc_sampler_with_exact_score_recovers_gaussian():
    sde = OUVESDE()
    mu, v, yv = 1.0 + 0.5j, 0.3, 0.2 - 0.1j
    n = 20000
    y = torch.full((n, 1), yv, dtype=torch.complex128)

    def marg(t):
        w = torch.exp(-sde.theta * t)[:, None]
        return w * mu + (1 - w) * y, w**2 * v + sde.std(t)[:, None] ** 2

    def score(x, t):
        m, var = marg(t.double())
        return -(x - m) / var

    out = pc_sample(score, y, sde, N=500, generator=torch.Generator().manual_seed(0))
    m, var = marg(torch.tensor([0.03], dtype=torch.float64))
    m = complex(m[0, 0])
    assert abs(complex(out.mean()) - m) <= 0.02 * abs(m)
    emp_var = float((out - out.mean()).abs().pow(2).mean())
    assert emp_var == pytest.approx(float(var[0, 0]), rel=0.05)


def test_bad_inputs():
    sde = OUVESDE()
    y = torch.zeros(2, 3, dtype=torch.complex64)
    with pytest.raises(ValueError, match="N"):
        pc_sample(lambda x, t: x, y, sde, N=0)
    with pytest.raises(ValueError, match="snr"):
        pc_sample(lambda x, t: x, y, sde, snr=0.0)
    with pytest.raises(ValueError, match="eps"):
        pc_sample(lambda x, t: x, y, sde, eps=1.5)
    with pytest.raises(ValueError, match="y"):
        pc_sample(lambda x, t: x, torch.zeros(2, 3), sde)
    with pytest.raises(ValueError, match="sigma_min"):
        OUVESDE(sigma_min=0.6)
    with pytest.raises(ValueError, match="theta"):
        OUVESDE(theta=float("nan"))
