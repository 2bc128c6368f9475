"""Parity with hidimstat, the well-kept peer implementation of CFI and the Nadeau–Bengio test."""

import numpy as np
import pytest
from hidimstat import CFI, PFI
from hidimstat.statistical_tools import nadeau_bengio_ttest
from permucate import ConditionalSampler, PermuCATE, datasets, dr_learner
from permucate.inference import corrected_ttest
from scipy import stats
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import LogisticRegression, RidgeCV
from sklearn.metrics import mean_squared_error


class FittedCate(RegressorMixin, BaseEstimator):
    """A fitted CATE model seen by hidimstat as an sklearn regressor (predict = effect)."""

    def __init__(self, model=None, n_features=6):
        self.model = model
        self.n_features = n_features

    def fit(self, X, y=None):  # already fitted; hidimstat only checks it exists
        return self

    def __sklearn_is_fitted__(self):
        return True

    @property
    def n_features_in_(self):
        return self.n_features

    def predict(self, X):
        return np.asarray(self.model.effect(np.asarray(X))).reshape(-1)


@pytest.fixture(scope="module")
def fitted():
    data = datasets.hines(2000, random_state=3)
    alphas = np.logspace(-3, 3, 10)
    est = PermuCATE(
        dr_learner(
            RidgeCV(alphas=alphas), LogisticRegression(), RidgeCV(alphas=alphas), random_state=0
        ),
        n_permutations=200,
        outcome_model=RidgeCV(alphas=alphas),
        propensity_model=LogisticRegression(),
        sampler=ConditionalSampler(RidgeCV(alphas=alphas), feature_types="continuous"),
        random_state=0,
    ).fit(data.X, data.T, data.Y)
    return est, data


def test_cfi_on_the_same_cate_model_is_twice_our_fold_value(fitted):
    """Spec test 4: hidimstat CFI(estimator=τ̂, loss=MSE).importance(X_test, φ_test) ≈ 2× ours."""
    est, data = fitted
    X = data.X.to_numpy()
    train, test = est.folds_[0]
    nuisances = est.nuisances_[0]
    phi = nuisances.pseudo_outcome(X[test], data.T[test], data.Y[test])
    cfi = CFI(
        estimator=FittedCate(est.learners_[0]),
        loss=mean_squared_error,
        n_permutations=200,
        imputation_model_continuous=RidgeCV(alphas=np.logspace(-3, 3, 10)),
        feature_types="continuous",
        random_state=1,
    )
    cfi.fit(X[train])
    theirs = cfi.importance(X[test], phi)
    ours = est.importances_folds_[:, 0]
    signal = data.importance > 0
    np.testing.assert_allclose(theirs[signal], 2 * ours[signal], rtol=0.05)
    np.testing.assert_allclose(theirs[~signal], 2 * ours[~signal], atol=0.05)


def test_pfi_on_the_same_cate_model_is_twice_our_marginal_fold_value():
    """hidimstat PFI(estimator=τ̂, loss=MSE).importance(X_test, φ_test) ≈ 2× our method="pfi"
    fold value (ours carries the ½), both permuting each covariate within the test part."""
    data = datasets.hines(2000, random_state=3)
    X = data.X.to_numpy()
    est = PermuCATE(
        dr_learner(RidgeCV(), LogisticRegression(), RidgeCV(), random_state=0),
        method="pfi",
        n_permutations=200,
        outcome_model=RidgeCV(),
        propensity_model=LogisticRegression(),
        random_state=0,
    ).fit(X, data.T, data.Y)
    train, test = est.folds_[0]
    phi = est.nuisances_[0].pseudo_outcome(X[test], data.T[test], data.Y[test])
    pfi = PFI(
        estimator=FittedCate(est.learners_[0]),
        loss=mean_squared_error,
        n_permutations=200,
        random_state=1,
    )
    theirs = pfi.fit(X[train]).importance(X[test], phi)
    ours = est.importances_folds_[:, 0]
    signal = np.abs(theirs) > 0.5
    np.testing.assert_allclose(theirs[signal], 2 * ours[signal], rtol=0.05)
    np.testing.assert_allclose(theirs[~signal], 2 * ours[~signal], atol=0.05)


def test_pvalues_match_hidimstat_and_the_hand_formula(fitted):
    """Spec test 5: NB corrected one-sided t-test, test_frac = 1/(K − 1), to 1e-12."""
    est, _ = fitted
    folds = est.importances_folds_
    k = folds.shape[1]
    peer = nadeau_bengio_ttest(folds, 0.0, 1 / (k - 1), axis=1, alternative="greater").pvalue
    np.testing.assert_allclose(est.pvalues_, peer, rtol=0, atol=1e-12)
    t = folds.mean(axis=1) / np.sqrt(folds.var(axis=1, ddof=1) * (1 / k + 1 / (k - 1)))
    np.testing.assert_allclose(est.pvalues_, stats.t.sf(t, k - 1), rtol=0, atol=1e-12)
    half = stats.t.ppf(0.975, k - 1) * t**-1 * folds.mean(axis=1)
    np.testing.assert_allclose(est.conf_int_[:, 1] - est.conf_int_[:, 0], 2 * half, rtol=1e-10)


def test_corrected_ttest_degenerate_folds_give_no_evidence():
    pvalues, ci, se = corrected_ttest(np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]))
    np.testing.assert_array_equal(pvalues, [1.0, 0.0])
    np.testing.assert_array_equal(se, [0.0, 0.0])
    np.testing.assert_array_equal(ci, [[0.0, 0.0], [1.0, 1.0]])
