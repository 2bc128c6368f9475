"""Property tests (hypothesis) of the invariants the maths implies."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from riskaverse_np import cvar, cvar_weights, project_capped_simplex_kl, topk_cvar_loss

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
losses = arrays(np.float64, st.integers(1, 40), elements=finite)
alphas = st.floats(0.0, 0.999)
positive = arrays(np.float64, st.integers(1, 40), elements=st.floats(1e-3, 1e3))


@given(losses, alphas)
def test_cvar_lies_between_mean_and_max_and_is_attained_by_its_weights(x, alpha):
    value = cvar(x, alpha)
    scale = 1e-9 * (1 + np.abs(x).max())
    assert x.mean() - scale <= value <= x.max() + scale
    w = cvar_weights(x, alpha)
    cap = min(1.0, 1 / ((1 - alpha) * x.size))
    assert abs(w.sum() - 1) < 1e-12
    assert np.all(w >= 0)
    assert np.all(w <= cap * (1 + 1e-9) + 1e-12)
    assert abs(w @ x - value) <= scale


@given(losses, alphas, alphas)
def test_cvar_grows_with_alpha(x, a1, a2):
    lo, hi = sorted((a1, a2))
    assert cvar(x, lo) <= cvar(x, hi) + 1e-9 * (1 + np.abs(x).max())


@given(losses, alphas, finite, st.floats(0.01, 100))
def test_cvar_is_translation_equivariant_and_positively_homogeneous(x, alpha, c, s):
    tol = 1e-7 * (1 + np.abs(x).max() * s + abs(c))
    assert abs(cvar(s * x + c, alpha) - (s * cvar(x, alpha) + c)) <= tol


@given(losses, alphas)
def test_cvar_ignores_the_order_of_the_tasks(x, alpha):
    perm = np.random.default_rng(0).permutation(x.size)
    assert abs(cvar(x[perm], alpha) - cvar(x, alpha)) <= 1e-9 * (1 + np.abs(x).max())


@given(positive, st.floats(0.0, 1.0), st.floats(0.01, 100))
def test_projection_is_feasible_idempotent_kkt_and_scale_free(q, t, s):
    n = q.size
    cap = 1 / n + t * (1 - 1 / n)  # any cap in [1/N, 1]
    p = project_capped_simplex_kl(q, cap)
    assert abs(p.sum() - 1) < 1e-9
    assert np.all(p <= cap * (1 + 1e-9))
    assert np.all(p > 0)
    np.testing.assert_allclose(project_capped_simplex_kl(p, cap), p, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(project_capped_simplex_kl(s * q, cap), p, rtol=1e-9, atol=1e-12)
    free = p < cap * (1 - 1e-9)
    if free.sum() >= 2:  # uncapped entries keep the ratios of q
        ratio = p[free] / q[free]
        np.testing.assert_allclose(ratio, ratio[0], rtol=1e-9)
    if (~free).any() and free.any():  # capped entries are the largest q
        assert q[~free].min() >= q[free].max() * (1 - 1e-9)


@given(losses, alphas)
def test_topk_batch_cvar_lies_between_mean_and_max(x, alpha):
    value = topk_cvar_loss(x, alpha)
    scale = 1e-9 * (1 + np.abs(x).max())
    assert x.mean() - scale <= value <= x.max() + scale
