"""Task pools against their definitions: GP samples against the kernel, digits against
scikit-learn's images, the exact GP predictive against a dense solve."""

import numpy as np
import pytest
from riskaverse_np import digits_pool, gp_pool, gp_predictive_nll
from sklearn.datasets import load_digits


def test_gp_pool_sample_covariance_matches_the_kernel():
    # one fixed grid would need n x n draws; instead check E[y_i y_j] against k(x_i, x_j) + s
    # on the pairs (x_i, x_j) of many tasks, binned by distance (lengthscale 1 only)
    pool = gp_pool(
        3000, lengthscales=(1.0,), mix=(1.0,), n_points=6, noise=0.05, context=(1, 3), seed=0
    )
    x = np.asarray(pool.tasks.xt[..., 0], np.float64)
    y = np.asarray(pool.tasks.yt[..., 0], np.float64)
    prod = y[:, 0] * y[:, 1]
    d = np.abs(x[:, 0] - x[:, 1])
    for lo, hi in ((0.0, 0.3), (0.8, 1.2), (2.0, 3.0)):
        sel = (d >= lo) & (d < hi)
        expected = np.exp(-0.5 * d[sel] ** 2).mean()
        se = prod[sel].std() / np.sqrt(sel.sum())
        assert abs(prod[sel].mean() - expected) < 4 * se
    assert np.var(y) == pytest.approx(1.05, rel=0.05)  # signal 1 + noise 0.05


def test_gp_pool_mixture_and_context_sizes():
    pool = gp_pool(2000, seed=1)
    assert pool.tasks.xt.shape == (2000, 40, 1)
    assert np.mean(pool.groups == 1) == pytest.approx(0.2, abs=0.03)
    sizes = np.asarray(pool.tasks.mask_c).sum(1)
    assert sizes.min() == 3
    assert sizes.max() == 14
    xc, xt = np.asarray(pool.tasks.xc), np.asarray(pool.tasks.xt)
    mc = np.asarray(pool.tasks.mask_c)
    for t in range(5):  # context points are among the task's points
        assert set(xc[t][mc[t]].ravel()) <= set(xt[t].ravel())


def test_gp_predictive_matches_a_dense_solve():
    pool = gp_pool(3, lengthscales=(0.5,), mix=(1.0,), seed=2)
    t = pool.tasks
    i = 1
    mc = np.asarray(t.mask_c[i])
    xc = np.asarray(t.xc[i, :, 0], np.float64)[mc]
    yc = np.asarray(t.yc[i, :, 0], np.float64)[mc]
    xt, yt = np.asarray(t.xt[i, :, 0], np.float64), np.asarray(t.yt[i, :, 0], np.float64)
    k = lambda a, b: np.exp(-0.5 * ((a[:, None] - b[None]) / 0.5) ** 2)  # noqa: E731
    kinv = np.linalg.inv(k(xc, xc) + 1e-2 * np.eye(xc.size))
    mu = k(xt, xc) @ kinv @ yc
    var = 1 + 1e-2 - np.einsum("ij,jk,ik->i", k(xt, xc), kinv, k(xt, xc))
    nll = np.mean(0.5 * np.log(2 * np.pi * var) + 0.5 * (yt - mu) ** 2 / var)
    assert gp_predictive_nll(pool)[i] == pytest.approx(nll, rel=1e-8)


def test_digits_pool_is_scikit_learns_images():
    digits = load_digits()
    pool = digits_pool("train", seed=0)
    assert pool.n_tasks == 512
    rare = np.isin(pool.groups, (0, 8)).mean()
    assert rare == pytest.approx(0.1, abs=0.002)
    i = 7
    img = digits.images[pool.image_index[i]] / 16.0
    np.testing.assert_allclose(np.asarray(pool.tasks.yt[i, :, 0]), img.ravel(), atol=1e-7)
    assert pool.groups[i] == digits.target[pool.image_index[i]]
    xt = np.asarray(pool.tasks.xt[i])
    assert xt.min() == -1
    assert xt.max() == 1
    assert xt.shape == (64, 2)
    # pixel (r, c) of the image sits at coordinates (-1 + 2r/7, -1 + 2c/7)
    np.testing.assert_allclose(xt[3 * 8 + 5], [-1 + 6 / 7, -1 + 10 / 7], atol=1e-6)
    sizes = np.asarray(pool.tasks.mask_c).sum(1)
    assert sizes.min() >= 3
    assert sizes.max() <= 32


def test_digits_test_split_is_balanced_and_disjoint_from_train():
    test = digits_pool("test", seed=0)
    assert test.n_tasks == 500
    assert np.all(np.bincount(test.groups) == 50)
    for seed in (0, 1):
        train = digits_pool("train", seed=seed)
        assert not set(train.image_index) & set(test.image_index)


BAD = [
    (lambda: gp_pool(0), "n_tasks"),
    (lambda: gp_pool(4, lengthscales=(1.0, -1.0)), "lengthscales"),
    (lambda: gp_pool(4, mix=(0.5, 0.6)), "mix"),
    (lambda: gp_pool(4, noise=0.0), "noise"),
    (lambda: gp_pool(4, kernel="rbf"), "kernel"),
    (lambda: gp_pool(4, context=(0, 3)), "context"),
    (lambda: gp_pool(4, context=(3, 50)), "context"),
    (lambda: gp_pool(4, x_range=(2, -2)), "x_range"),
    (lambda: digits_pool("val"), "split"),
    (lambda: digits_pool(rare_classes=(0, 10)), "rare_classes"),
    (lambda: digits_pool(rare_fraction=1.0), "rare_fraction"),
    (lambda: digits_pool(n_tasks=5000), "n_tasks"),
    (lambda: digits_pool(context=(0, 5)), "context"),
]


@pytest.mark.parametrize(("build", "match"), BAD, ids=[m for _, m in BAD])
def test_bad_arguments_are_refused_naming_them(build, match):
    with pytest.raises(ValueError, match=match):
        build()
