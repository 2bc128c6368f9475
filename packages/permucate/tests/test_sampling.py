import numpy as np
import pytest
from permucate import ConditionalSampler, LinearGaussianSampler
from sklearn.linear_model import LogisticRegression, Ridge

from .conftest import equicorrelated


@pytest.mark.parametrize("alpha", [1e-3, 1.0, 100.0])
@pytest.mark.parametrize("d", [2, 7, 30])
def test_linear_gaussian_residuals_equal_per_feature_ridge(alpha, d):
    """Spec test 1: one inverse gives every per-feature sklearn Ridge(alpha) residual (1e-8)."""
    rng = np.random.default_rng(d)
    X_train, _ = equicorrelated(200, d, 0.4, rng)
    X_train += rng.normal(size=d)  # non-zero means: the intercept must be unpenalised
    X_test, _ = equicorrelated(50, d, 0.4, rng)
    sampler = LinearGaussianSampler(alpha).fit(X_train)
    ours = sampler.residuals(X_test)
    for j in range(d):
        rest = np.delete(np.arange(d), j)
        ridge = Ridge(alpha=alpha).fit(X_train[:, rest], X_train[:, j])
        expected = X_test[:, j] - ridge.predict(X_test[:, rest])
        np.testing.assert_allclose(ours[:, j], expected, rtol=0, atol=1e-8)


def test_linear_gaussian_group_residuals_equal_multioutput_ridge():
    rng = np.random.default_rng(5)
    X, _ = equicorrelated(300, 6, 0.5, rng)
    group = [1, 4]
    sampler = LinearGaussianSampler(2.0).fit(X, groups=[[0], group])
    rest = [0, 2, 3, 5]
    ridge = Ridge(alpha=2.0).fit(X[:, rest], X[:, group])
    expected = X[:, group] - ridge.predict(X[:, rest])
    np.testing.assert_allclose(sampler.residuals(X, group=1), expected, rtol=0, atol=1e-8)


def test_linear_gaussian_draws_permute_residuals_around_the_fit():
    rng = np.random.default_rng(6)
    X, _ = equicorrelated(100, 3, 0.5, rng)
    sampler = LinearGaussianSampler(1.0).fit(X)
    draws = sampler.sample(X, 0, n_samples=4, random_state=0)
    assert draws.shape == (4, 100, 1)
    resid = sampler.residuals(X)[:, 0]
    fitted = X[:, 0] - resid
    for p in range(4):
        np.testing.assert_allclose(np.sort(draws[p, :, 0] - fitted), np.sort(resid), atol=1e-12)


def test_conditional_sampler_matches_hidimstat_continuous_rule():
    """X̃_j = ν̂_j(X_−j) + perm(residual): residuals are a permutation of the true ones."""
    rng = np.random.default_rng(7)
    X, _ = equicorrelated(200, 3, 0.5, rng)
    sampler = ConditionalSampler(model_regression=Ridge(alpha=1.0), feature_types="continuous")
    sampler.fit(X, [[0], [1], [2]])
    draws = sampler.sample(X, 1, n_samples=3, random_state=np.random.default_rng(0))
    ridge = Ridge(alpha=1.0).fit(X[:, [0, 2]], X[:, 1])
    fitted = ridge.predict(X[:, [0, 2]])
    for p in range(3):
        np.testing.assert_allclose(
            np.sort(draws[p, :, 0] - fitted), np.sort(X[:, 1] - fitted), atol=1e-10
        )


def test_binary_group_draws_stay_binary():
    """Spec test 7 (second half): categorical draws come from predict_proba, in {0, 1}."""
    rng = np.random.default_rng(8)
    z = rng.normal(size=500)
    X = np.column_stack([z, (z + rng.normal(size=500) > 0), (z > 0.5), rng.normal(size=500)])
    sampler = ConditionalSampler(
        model_categorical=LogisticRegression(),
        feature_types=["continuous", "categorical", "categorical", "continuous"],
    ).fit(X.astype(float), [[0], [1, 2], [3]])
    draws = sampler.sample(X.astype(float), 1, n_samples=5, random_state=1)
    assert draws.shape == (5, 500, 2)
    assert set(np.unique(draws)) <= {0.0, 1.0}
    # The draws follow X_−g: the share of ones tracks z.
    high, low = z > 1, z < -1
    assert draws[:, high, 0].mean() > draws[:, low, 0].mean() + 0.3


@pytest.mark.parametrize(
    ("make", "fit_args", "error", "match"),
    [
        (lambda: LinearGaussianSampler(alpha=0), ([[0]],), ValueError, "`alpha` must be"),
        (lambda: LinearGaussianSampler(), ([[3]],), ValueError, "`groups` entries"),
        (lambda: ConditionalSampler(), ([[]],), ValueError, "`groups` entries"),
        (
            lambda: ConditionalSampler(feature_types="ordinal"),
            ([[0]],),
            ValueError,
            "feature_types",
        ),
        (
            lambda: ConditionalSampler(feature_types=["continuous"]),
            ([[0]],),
            ValueError,
            "3 entries",
        ),
        (
            lambda: ConditionalSampler(feature_types=["continuous", "categorical", "continuous"]),
            ([[0, 1]],),
            ValueError,
            "mixes continuous and categorical",
        ),
    ],
)
def test_samplers_reject_bad_input(make, fit_args, error, match):
    X = np.random.default_rng(0).normal(size=(20, 3))
    X[:, 1] = X[:, 1] > 0
    with pytest.raises(error, match=match):
        make().fit(X, *fit_args)


def test_samplers_reject_nan():
    X = np.ones((5, 2))
    X[1, 1] = np.nan
    with pytest.raises(ValueError, match="`X` contains NaN"):
        LinearGaussianSampler().fit(X)
