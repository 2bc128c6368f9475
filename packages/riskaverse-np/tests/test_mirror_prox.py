"""Mirror prox against closed forms and SLSQP; unbiasedness of the estimators by averaging many
draws; alpha = 0 against a hand-written extragradient (spec Sec. 5, tests 4-7)."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _linear import Linear, least_squares_tasks, loss_fn_for, losses_np
from riskaverse_np import (
    CNP,
    MirrorProxCVaR,
    cvar,
    entropic_step,
    gp_pool,
    mirror_prox_matrix_game,
    per_task_gradients,
)
from scipy.optimize import minimize

# 2x2 zero-sum games without a pure saddle point: value (ad - bc)/(a + d - b - c),
# row strategy x1 = (d - c)/(a + d - b - c), column strategy y1 = (d - b)/(a + d - b - c).
GAMES = [[[3.0, -1.0], [-2.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]], [[2.0, -3.0], [-1.0, 4.0]]]


@pytest.mark.parametrize("payoff", GAMES, ids=["g1", "matching-pennies", "g3"])
def test_matrix_game_gap_below_1e2_at_2000_and_decays_like_1_over_t(payoff):
    (a, b), (c, d) = payoff
    den = a + d - b - c
    value, x1, y1 = (a * d - b * c) / den, (d - c) / den, (d - b) / den
    res = mirror_prox_matrix_game(payoff, steps=2000)
    assert 0 <= res["gap"] < 1e-2
    assert res["value"] == pytest.approx(value, abs=1e-2)
    assert res["x"][0] == pytest.approx(x1, abs=2e-2)
    assert res["y"][0] == pytest.approx(y1, abs=2e-2)
    gaps = [mirror_prox_matrix_game(payoff, steps=t)["gap"] for t in (250, 500, 1000)]
    gaps.append(res["gap"])
    # O(1/T): doubling T at least ~halves the gap (ratio 0.5; allow 0.65), T * gap bounded
    assert all(g2 <= 0.65 * g1 + 1e-12 for g1, g2 in itertools.pairwise(gaps))
    assert gaps[-1] * 2000 <= 1.5 * gaps[0] * 250 + 1e-9


def test_convex_cvar_regression_reaches_the_slsqp_optimum_of_the_ru_form():
    a, y = least_squares_tasks(n_tasks=50, d=3)
    n, alpha = 50, 0.7
    m = (1 - alpha) * n

    def ru(z):  # z = (theta [3], eta, s [N]); s >= l(theta) - eta, s >= 0
        return z[3] + z[4:].sum() / m

    cons = [
        {"type": "ineq", "fun": lambda z: z[4:] - losses_np(a, y, z[:3]) + z[3]},
        {"type": "ineq", "fun": lambda z: z[4:]},
    ]
    z0 = np.concatenate([np.zeros(4), losses_np(a, y, np.zeros(3))])
    ref = minimize(
        ru, z0, constraints=cons, method="SLSQP", options={"ftol": 1e-12, "maxiter": 500}
    )
    assert ref.success
    opt = MirrorProxCVaR(
        Linear(3), n, alpha, lr=0.02, eta_p=0.5, step_rule="constant", tasks_per_step=None,
        average_start=0.0,
    )  # fmt: skip
    loss_fn = loss_fn_for(a, y)
    for _ in range(2000):
        opt.step(loss_fn)
    theta = np.asarray(opt.averaged_model().w[...], np.float64)
    assert cvar(losses_np(a, y, theta), alpha) == pytest.approx(ref.fun, abs=1e-3)
    assert cvar(losses_np(a, y, theta), alpha) >= ref.fun - 1e-6  # SLSQP's is the minimum


def test_adagrad_norm_step_shrinks_with_the_gradients():
    a, y = least_squares_tasks(n_tasks=20, d=3)
    opt = MirrorProxCVaR(
        Linear(3), 20, 0.5, lr=0.1, step_rule="adagrad_norm", tasks_per_step=None,
        aggregate="none",
    )  # fmt: skip
    loss_fn = loss_fn_for(a, y)
    g0 = opt.step(loss_fn)["gamma"]
    s1 = opt.grad_sq_sum  # |g_theta|^2 of the first update
    g1 = opt.step(loss_fn)["gamma"]
    assert g0 == pytest.approx(0.1)
    assert s1 > 0
    assert g1 == pytest.approx(0.1 / np.sqrt(1 + s1), rel=1e-12)  # gamma_0 / sqrt(1 + sum |g|^2)


def _estimator_setup(theta_vr, p_vr=True, near=False, seed=0):
    a, y = least_squares_tasks(n_tasks=20, d=3, seed=seed)
    n, alpha = 20, 0.6
    loss_fn = loss_fn_for(a, y)
    snap_theta = np.array([0.3, -0.2, 0.5])
    theta = snap_theta + (0.01 if near else 0.8) * np.array([1.0, -1.0, 0.5])
    opt = MirrorProxCVaR(
        Linear(3, snap_theta), n, alpha, tasks_per_step=100, theta_vr=theta_vr, p_vr=p_vr,
        step_rule="constant", aggregate="none",
    )  # fmt: skip
    rng = np.random.default_rng(1)
    opt.p = entropic_step(np.full(n, 1 / n), rng.normal(size=n), 1.0, opt.cap)  # a p in P_alpha
    opt.snapshot(loss_fn)  # theta~ = snap_theta, p~ = that p
    # and a p at theta: far from the snapshot's, or (near) a small step away from it
    p = entropic_step(opt.p, rng.normal(size=n), 0.01 if near else 1.0, opt.cap)
    params = jax.tree_util.tree_map(lambda _: jnp.asarray(theta, jnp.float32), opt.params)
    exact_loss = losses_np(a, y, theta)
    # exact gradient: sum_tau p_tau grad l_tau(theta), from the closed form 2 A^T (A theta - y)/n
    resid = np.einsum("tnd,d->tn", a, theta) - y
    per_task = 2 * np.einsum("tnd,tn->td", a, resid) / a.shape[1]
    exact_grad = p @ per_task
    return opt, loss_fn, params, p, exact_loss, exact_grad, per_task


@pytest.mark.parametrize("theta_vr", [False, True], ids=["plain-theta", "vr-theta"])
def test_estimators_average_to_the_exact_gradients(theta_vr):
    opt, loss_fn, params, p, exact_loss, exact_grad, _ = _estimator_setup(theta_vr)
    # 100 estimates of b = 100 tasks each: 10 000 task draws in all
    gts, gps = [], []
    for r in range(100):
        opt.step_count = r
        g_theta, g_p = opt.estimate(loss_fn, params, p, phase=0)
        gts.append(np.asarray(g_theta["w"][...], np.float64))
        gps.append(g_p)
    gts, gps = np.array(gts), np.array(gps)
    for est, exact in ((gts, exact_grad), (gps, exact_loss)):
        se = est.std(axis=0, ddof=1) / np.sqrt(len(est))
        assert np.all(np.abs(est.mean(axis=0) - exact) <= 3 * se + 1e-5)


def test_per_task_gradients_by_vmap_match_the_closed_form():
    _opt, loss_fn, _params, _p, _, _, _ = _estimator_setup(False)
    a, y = least_squares_tasks(n_tasks=20, d=3)
    theta = np.array([0.3, -0.2, 0.5])
    resid = np.einsum("tnd,d->tn", a, theta) - y
    closed = 2 * np.einsum("tnd,tn->td", a, resid) / a.shape[1]
    grads = per_task_gradients(Linear(3, theta), loss_fn, np.arange(20))
    np.testing.assert_allclose(np.asarray(grads["w"][...]), closed, rtol=1e-4, atol=1e-4)


def test_variance_reduction_lowers_the_variance_near_the_snapshot():
    def spread(theta_vr, p_vr):
        opt, loss_fn, params, p, _, _, _ = _estimator_setup(theta_vr, p_vr, near=True)
        gts, gps = [], []
        for r in range(30):
            opt.step_count = r
            g_theta, g_p = opt.estimate(loss_fn, params, p, phase=0)
            gts.append(np.asarray(g_theta["w"][...], np.float64))
            gps.append(g_p)
        return np.var(gts, axis=0).sum(), np.var(gps, axis=0).sum()

    plain_theta, plain_p = spread(False, False)
    vr_theta, vr_p = spread(True, True)
    assert vr_theta < 0.1 * plain_theta
    assert vr_p < 0.1 * plain_p


def test_alpha_zero_keeps_p_uniform_and_is_plain_extragradient():
    a, y = least_squares_tasks(n_tasks=16, d=3)
    n, b, lr, seed = 16, 4, 0.05, 3
    loss_fn = loss_fn_for(a, y)
    opt = MirrorProxCVaR(
        Linear(3), n, 0.0, lr=lr, step_rule="constant", tasks_per_step=b, aggregate="none",
        seed=seed, eta_p=1.0,
    )  # fmt: skip
    theta = np.zeros(3)

    def grad(th, idx):  # mean over the batch of the closed-form per-task gradients
        resid = np.einsum("tnd,d->tn", a[idx], th) - y[idx]
        return (2 * np.einsum("tnd,tn->td", a[idx], resid) / a.shape[1]).mean(axis=0)

    for t in range(25):
        opt.step(loss_fn)
        np.testing.assert_allclose(opt.p, np.full(n, 1 / n), atol=1e-12, rtol=0)
        uniform = np.full(n, 1 / n)
        i0 = np.random.default_rng((seed, t, 0)).choice(n, b, replace=True, p=uniform)
        i1 = np.random.default_rng((seed, t, 1)).choice(n, b, replace=True, p=uniform)
        theta_ext = theta - lr * grad(theta, i0)
        theta = theta - lr * grad(theta_ext, i1)
    np.testing.assert_allclose(np.asarray(opt.params["w"][...]), theta, rtol=1e-4, atol=1e-5)


def test_budget_counts_every_per_task_evaluation():
    pool = gp_pool(32, seed=0)
    opt = MirrorProxCVaR(
        CNP(1, 1, hidden=8), 32, 0.7, tasks_per_step=4, inner_steps=2, total_steps=4
    )
    for _ in range(4):
        opt.step(pool.loss_fn())
    # 2 snapshots of 32; per step 2 backward passes of 4 and 2 snapshot evaluations of 4
    assert opt.grad_evals == 2 * 32 + 4 * (2 * 4 + 2 * 4)


BAD = [
    ({"alpha": 1.0}, ValueError, "alpha"),
    ({"alpha": float("nan")}, ValueError, "alpha"),
    ({"n_tasks": 0}, ValueError, "n_tasks"),
    ({"lr": 0.0}, ValueError, "lr"),
    ({"step_rule": "sgd"}, ValueError, "step_rule"),
    ({"aggregate": "mean"}, ValueError, "aggregate"),
    ({"tasks_per_step": 0}, ValueError, "tasks_per_step"),
    ({"mix_uniform": 0.0}, ValueError, "mix_uniform"),
    ({"average_start": 0.5, "total_steps": None}, ValueError, "total_steps"),
    ({"theta_vr": 1}, TypeError, "theta_vr"),
]


@pytest.mark.parametrize(("kwargs", "error", "match"), BAD, ids=range(len(BAD)))
def test_bad_arguments_are_refused_naming_them(kwargs, error, match):
    args = {"n_tasks": 8, "alpha": 0.5, "total_steps": 10, **kwargs}
    with pytest.raises(error, match=match):
        MirrorProxCVaR(Linear(3), **args)


def test_batchnorm_and_non_modules_are_refused():
    from flax import nnx

    class WithBN(nnx.Module):
        def __init__(self):
            self.bn = nnx.BatchNorm(3, rngs=nnx.Rngs(0))

    with pytest.raises(ValueError, match="BatchNorm"):
        MirrorProxCVaR(WithBN(), 8, 0.5, total_steps=10)
    with pytest.raises(TypeError, match="model"):
        MirrorProxCVaR(object(), 8, 0.5, total_steps=10)
