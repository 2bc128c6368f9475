"""risk.py against the Rockafellar-Uryasev primal, scipy's LP (HiGHS), SLSQP and scipy's KDE
(spec Sec. 5, tests 1, 2, 3, 10)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from riskaverse_np import (
    cvar,
    cvar_weights,
    kde_var,
    kde_var_loss,
    project_capped_simplex_kl,
    topk_cvar_loss,
)
from scipy.optimize import brentq, linprog, minimize
from scipy.stats import gaussian_kde

# (N, alpha) with a fractional tail (1 - alpha) N, an integer one, and the two edges
CASES = [(10, 0.75), (37, 0.7), (50, 0.33), (7, 0.5), (100, 0.95), (13, 0.0), (9, 0.9)]


def ru_primal(losses, alpha):
    """min_eta eta + sum (l - eta)_+ / ((1 - alpha) N); the minimum sits at one of the losses
    (piecewise linear, convex), so a scan over them is exact."""
    m = (1 - alpha) * losses.size
    return min(eta + np.maximum(losses - eta, 0).sum() / m for eta in losses)


def dual_lp(losses, alpha):
    """max p.l s.t. sum p = 1, 0 <= p <= 1/((1 - alpha) N), by scipy's HiGHS."""
    n = losses.size
    cap = min(1.0, 1.0 / ((1 - alpha) * n))
    res = linprog(-losses, A_eq=np.ones((1, n)), b_eq=[1.0], bounds=[(0, cap)] * n, method="highs")
    assert res.status == 0
    return -res.fun


@pytest.mark.parametrize(("n", "alpha"), CASES, ids=[f"N{n}-a{a}" for n, a in CASES])
def test_cvar_equals_ru_primal_and_dual_lp(n, alpha):
    losses = np.random.default_rng(n).gamma(2.0, size=n)
    value = cvar(losses, alpha)
    assert value == pytest.approx(ru_primal(losses, alpha), abs=1e-9)
    assert value == pytest.approx(dual_lp(losses, alpha), abs=1e-9)


def test_cvar_alpha_zero_is_the_mean_and_tiny_tail_the_max():
    losses = np.random.default_rng(0).normal(size=23)
    assert cvar(losses, 0.0) == pytest.approx(losses.mean(), abs=1e-12)
    assert cvar(losses, 1 - 1 / 23) == pytest.approx(losses.max(), abs=1e-12)  # m = 1
    assert cvar(losses, 0.99) == losses.max()  # m = 0.23 < 1
    assert cvar(np.array([3.0]), 0.5) == 3.0


def test_cvar_float_error_at_the_boundary():
    # (1 - 0.7) * 10 = 3.0000000000000004 and (1 - 0.9) * 10 = 0.9999999999999998
    losses = np.arange(10.0)
    assert cvar(losses, 0.7) == pytest.approx((9 + 8 + 7) / 3, abs=1e-12)
    assert cvar(losses, 0.9) == pytest.approx(9.0, abs=1e-12)


@pytest.mark.parametrize(("n", "alpha"), CASES, ids=[f"N{n}-a{a}" for n, a in CASES])
def test_cvar_weights_lie_in_p_alpha_and_attain_cvar(n, alpha):
    losses = np.random.default_rng(n + 1).normal(size=n)
    w = cvar_weights(losses, alpha)
    cap = min(1.0, 1 / ((1 - alpha) * n))
    assert w.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(w >= 0)
    assert np.all(w <= cap + 1e-12)
    assert w @ losses == pytest.approx(dual_lp(losses, alpha), abs=1e-9)


def test_jax_in_jax_out_and_gradient_is_the_weights():
    losses = np.random.default_rng(3).normal(size=11)
    value = cvar(jnp.asarray(losses), 0.6)
    assert isinstance(value, jax.Array)
    assert float(value) == pytest.approx(cvar(losses.astype(np.float32), 0.6), abs=1e-5)
    grad = jax.grad(lambda x: cvar(x, 0.6))(jnp.asarray(losses, jnp.float32))
    np.testing.assert_allclose(grad, cvar_weights(losses, 0.6), atol=1e-6)
    assert isinstance(project_capped_simplex_kl(jnp.ones(4), 0.5), jax.Array)
    assert isinstance(topk_cvar_loss(jnp.ones(4), 0.5), jax.Array)
    assert isinstance(cvar(losses, 0.6), float | np.floating)


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch", reason="torch is not a dependency (JAX library)")
    t = torch.tensor([1.0, 4.0, 2.0, 3.0])
    assert isinstance(cvar(t, 0.5), torch.Tensor)
    assert float(cvar(t, 0.5)) == 3.5


def kl(p, q):
    nz = p > 0
    return float(np.sum(p[nz] * np.log(p[nz] / q[nz])))


@pytest.mark.parametrize(("n", "cap"), [(5, 0.3), (12, 0.1), (30, 1 / 9), (8, 1.0), (6, 1 / 6)])
def test_kl_projection_matches_slsqp_and_kkt(n, cap):
    rng = np.random.default_rng(n)
    q = rng.gamma(0.5, size=n) + 1e-3
    p = project_capped_simplex_kl(q, cap)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(p <= cap + 1e-12)
    uncapped = p < cap - 1e-12
    if uncapped.any():  # KKT: p = min(cap, c q) for one c
        c = p[uncapped][0] / q[uncapped][0]
        np.testing.assert_allclose(p, np.minimum(cap, c * q), atol=1e-12)
    res = minimize(
        lambda x: kl(x, q),
        np.full(n, 1.0 / n),
        jac=lambda x: np.log(np.maximum(x, 1e-300) / q) + 1,
        bounds=[(1e-12, min(cap, 1.0))] * n,
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1, "jac": lambda x: np.ones(n)}],
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 2000},
    )
    np.testing.assert_allclose(p, res.x, atol=1e-6)
    assert kl(p, q) <= kl(res.x, q) + 1e-9
    np.testing.assert_allclose(project_capped_simplex_kl(p, cap), p, atol=1e-12)  # idempotent


def test_kl_projection_of_a_hundred_thousand_entries_is_fast():
    import time

    q = np.random.default_rng(0).random(100_000)
    project_capped_simplex_kl(q, 1 / 30_000)
    start = time.perf_counter()
    project_capped_simplex_kl(q, 1 / 30_000)
    assert time.perf_counter() - start < 0.1  # spec: <= 10 ms; loose here (shared 2 cores)


def test_topk_cvar_is_the_mean_of_the_worst_ceil():
    x = np.array([5.0, 1.0, 3.0, 2.0, 4.0])
    assert topk_cvar_loss(x, 0.7) == pytest.approx((5 + 4) / 2)  # ceil(1.5) = 2
    assert topk_cvar_loss(x, 0.0) == pytest.approx(3.0)
    assert topk_cvar_loss(x, 0.99) == 5.0


def test_kde_var_loss_equals_scipy_kde_and_brentq():
    losses = np.array([0.3, 1.2, 0.7, 2.5, 0.9, 1.1, 0.2, 3.1, 0.8, 1.5])
    alpha = 0.7
    kde = gaussian_kde(losses)
    var = brentq(lambda v: kde.integrate_box_1d(-np.inf, v) - alpha, -10, 20, xtol=1e-12)
    assert kde_var(losses, alpha) == pytest.approx(var, abs=1e-9)
    assert kde_var_loss(losses, alpha) == pytest.approx(np.maximum(losses - var, 0).mean(), 1e-9)
    jl = kde_var_loss(jnp.asarray(losses, jnp.float32), alpha)
    assert float(jl) == pytest.approx(np.maximum(losses - var, 0).mean(), abs=1e-5)


BAD = [
    (cvar, ([1.0, 2.0], float("nan")), ValueError, "alpha"),
    (cvar, ([1.0, 2.0], 1.0), ValueError, "alpha"),
    (cvar, ([1.0, 2.0], -0.1), ValueError, "alpha"),
    (cvar, ([1.0, 2.0], True), TypeError, "alpha"),
    (cvar, ([], 0.5), ValueError, "losses"),
    (cvar, ([1.0, np.nan], 0.5), ValueError, "losses"),
    (cvar, ([[1.0, 2.0]], 0.5), ValueError, "losses"),
    (cvar, (["a", "b"], 0.5), TypeError, "losses"),
    (cvar_weights, ([np.inf], 0.5), ValueError, "losses"),
    (project_capped_simplex_kl, ([0.5, 0.5], 0.4), ValueError, "cap"),
    (project_capped_simplex_kl, ([0.5, -0.5], 0.6), ValueError, "q"),
    (project_capped_simplex_kl, ([1.0, 0.0, 0.0], 0.5), ValueError, "q"),
    (project_capped_simplex_kl, ([1.0, 1.0], float("nan")), ValueError, "cap"),
    (project_capped_simplex_kl, ([], 0.5), ValueError, "q"),
    (topk_cvar_loss, ([], 0.5), ValueError, "batch_losses"),
    (kde_var_loss, ([1.0, 2.0], 0.5, float("nan")), ValueError, "var"),
]


@pytest.mark.parametrize(("fn", "args", "error", "match"), BAD, ids=range(len(BAD)))
def test_bad_input_is_refused_naming_the_argument(fn, args, error, match):
    with pytest.raises(error, match=match):
        fn(*(np.asarray(a) if isinstance(a, list) else a for a in args))
