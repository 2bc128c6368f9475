"""Marginal permutation (PFI, ``method="pfi"``) beside the conditional one (CPI)."""

import numpy as np
import pytest
from permucate import LinearGaussianSampler, MarginalSampler, PermuCATE, dr_learner
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge

RHO = 0.8  # correlation of the relevant x_a and the null x_n
BETA = 2.0  # τ = β x_a


@pytest.fixture(scope="module")
def correlated():
    """x_a, x_n ~ N(0, [[1, ρ], [ρ, 1]]), x_o ~ N(0, 1) independent; τ = β x_a (x_n is null)."""
    rng = np.random.default_rng(5)
    n = 4000
    pair = rng.multivariate_normal([0, 0], [[1, RHO], [RHO, 1]], size=n)
    X = np.column_stack([pair, rng.normal(size=n)])
    T = rng.integers(0, 2, n)
    tau = BETA * X[:, 0]
    Y = X[:, 2] + T * tau + rng.normal(size=n)
    return X, T, Y, tau


def test_pfi_and_cpi_of_a_model_leaning_on_a_correlated_null_match_their_closed_forms(correlated):
    """τ̂ = b_a x_a + b_n x_n with b_a = b_n = 1 (weight spread over the correlated pair), oracle
    risk. With an independent copy (PFI) or a conditional one (CPI) of a feature, ½ E[Δ risk]:

    - PFI: x_a -> b_a (β − b_n ρ) = 1.2, x_n -> −(b_a − β) b_n ρ = 0.8 (inflated null);
    - CPI: x_a -> b_a β (1 − ρ²) = 0.72, x_n -> 0 ((x_a, x̃_n) ~ (x_a, x_n) and τ ignores x_n).
    """
    X, T, Y, tau = correlated
    b = np.array([1.0, 1.0, 0.0])
    kwargs = dict(risk="tau", n_permutations=20, random_state=0)
    pfi = PermuCATE(lambda x: x @ b, method="pfi", **kwargs).fit(X, T, Y, tau=tau)
    cpi = PermuCATE(lambda x: x @ b, sampler=LinearGaussianSampler(1e-6), **kwargs).fit(
        X, T, Y, tau=tau
    )
    pfi_truth = np.array([b[0] * (BETA - b[1] * RHO), -(b[0] - BETA) * b[1] * RHO, 0.0])
    cpi_truth = np.array([b[0] * BETA * (1 - RHO**2), 0.0, 0.0])
    np.testing.assert_array_less(np.abs(pfi.importances_ - pfi_truth), 3 * pfi.std_err_ + 1e-12)
    np.testing.assert_array_less(np.abs(cpi.importances_ - cpi_truth), 3 * cpi.std_err_ + 1e-12)
    assert pfi.pvalues_[1] < 1e-3
    assert cpi.pvalues_[1] > 0.05


def test_pfi_inflates_a_correlated_null_from_the_same_fitted_learner(correlated):
    """A heavily penalised ridge final model spreads β over the correlated pair: both methods
    score the *same* fitted learners (same folds, same fits); PFI gives the null x_n a clearly
    positive importance, CPI's stays within noise of 0 and is not significant."""
    X, T, Y, _ = correlated

    def fit(method):
        learner = dr_learner(
            LinearRegression(), LogisticRegression(), Ridge(alpha=4000.0), random_state=0
        )
        return PermuCATE(
            learner,
            method=method,
            n_permutations=20,
            outcome_model=LinearRegression(),
            propensity_model=LogisticRegression(),
            random_state=1,
        ).fit(X, T, Y)

    pfi, cpi = fit("pfi"), fit("cpi")
    for a, b in zip(pfi.learners_, cpi.learners_, strict=True):  # the same fitted τ̂ per fold
        np.testing.assert_array_equal(a.model_cate().coef_, b.model_cate().coef_)
    coef = np.mean([m.model_cate().coef_ for m in pfi.learners_], axis=0)
    assert coef[1] > 0.3
    assert coef[0] < BETA - 0.3
    assert pfi.importances_[1] > 0.2
    assert pfi.pvalues_[1] < 1e-3
    assert abs(cpi.importances_[1]) < 3 * cpi.std_err_[1]
    assert cpi.pvalues_[1] > 0.05
    assert "PFI" in pfi.plot().get_title()


def test_marginal_sampler_draws_row_permutations_shared_by_a_group():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4))
    X[:, 3] = rng.integers(0, 3, 50)  # any column type keeps its own values
    sampler = MarginalSampler().fit(X, groups=[[0, 1], [3]])
    draws = sampler.sample(X, 0, n_samples=6, random_state=1)
    assert draws.shape == (6, 50, 2)
    for draw in draws:
        order = np.argsort(X[:, 0])[np.argsort(np.argsort(draw[:, 0]))]  # rows each value came from
        np.testing.assert_array_equal(draw, X[order][:, [0, 1]])  # one permutation, both columns
    assert not np.array_equal(draws[0], draws[1])
    np.testing.assert_array_equal(np.sort(sampler.sample(X, 1, 2, 0)[1, :, 0]), np.sort(X[:, 3]))


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"method": "loco"}, ValueError, "`method` must be one of"),
        ({"method": "pfi", "sampler": LinearGaussianSampler()}, ValueError, "`sampler` is used"),
        ({"method": "pfi", "feature_types": "continuous"}, ValueError, 'method="pfi" does not'),
    ],
)
def test_pfi_rejects_options_it_does_not_use(correlated, params, error, match):
    X, T, Y, _ = correlated
    with pytest.raises(error, match=match):
        PermuCATE(lambda x: x[:, 0], n_permutations=2, **params).fit(X[:100], T[:100], Y[:100])


def test_marginal_sampler_rejects_bad_input():
    X = np.random.default_rng(0).normal(size=(20, 3))
    sampler = MarginalSampler().fit(X)
    with pytest.raises(ValueError, match="`group` must be an index"):
        sampler.sample(X, 3, 2, 0)
    with pytest.raises(ValueError, match="`n_samples`"):
        sampler.sample(X, 0, 0, 0)
    with pytest.raises(ValueError, match="`X` has 2 columns"):
        sampler.sample(X[:, :2], 0, 2, 0)
    with pytest.raises(ValueError, match="`X` contains NaN"):
        MarginalSampler().fit(np.full((4, 2), np.nan))
