"""Repeated cross-fitting (``n_repeats``): re-drawn splits, one corrected repeated k-fold t-test."""

import warnings

import numpy as np
import pytest
from hidimstat.statistical_tools import nadeau_bengio_ttest
from joblib import Parallel, delayed
from permucate import LOCO, PermuCATE, datasets, dr_learner
from permucate.inference import corrected_ttest
from scipy import stats
from sklearn.linear_model import LinearRegression, LogisticRegression

K = 5


def _fit(data, random_state, n_repeats, features=None, estimator=PermuCATE, **extra):
    """A fast PermuCATE (linear DR-learner, P = 10) or LOCO on a Hines DGP-3 draw."""
    extra = {"n_permutations": 10, **extra} if estimator is PermuCATE else extra
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return estimator(
            dr_learner(
                LinearRegression(), LogisticRegression(), LinearRegression(), random_state=0
            ),
            n_repeats=n_repeats,
            outcome_model=LinearRegression(),
            propensity_model=LogisticRegression(),
            features=features,
            random_state=random_state,
            **extra,
        ).fit(data.X, data.T, data.Y)


@pytest.fixture(scope="module")
def hines():
    return datasets.hines(400, random_state=0)


@pytest.mark.parametrize(("estimator", "extra"), [(PermuCATE, {}), (LOCO, {"mode": "final"})])
def test_the_first_repeat_is_the_single_split_fit(hines, estimator, extra):
    """Repeat 0 takes the seeds of ``n_repeats=1`` (the paper's single split, the default):
    its folds and fold values are exactly those of the single-split fit."""
    single = _fit(hines, 7, 1, ["x1", "x4"], estimator, **extra)
    repeated = _fit(hines, 7, 3, ["x1", "x4"], estimator, **extra)
    assert repeated.importances_folds_.shape == (2, 3 * K)
    np.testing.assert_array_equal(repeated.importances_folds_[:, :K], single.importances_folds_)
    for (a, b), (c, d) in zip(single.folds_, repeated.folds_[:K], strict=True):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
    assert len(repeated.learners_) == len(repeated.nuisances_) == 3 * K


def test_each_repeat_is_a_new_partition_of_the_units(hines):
    est = _fit(hines, 0, 3, ["x1"], n_permutations=2)
    tests = [test for _, test in est.folds_]
    for r in range(3):
        np.testing.assert_array_equal(
            np.sort(np.concatenate(tests[r * K : (r + 1) * K])), np.arange(400)
        )
    assert not np.array_equal(tests[0], tests[K])  # a re-drawn split, not a copy
    # per_sample_ averages each unit's R contributions, one per repeat: its mean is ψ̂.
    np.testing.assert_allclose(est.per_sample_.mean(axis=1), est.importances_, rtol=0.02)


def test_repeated_pvalues_follow_the_corrected_repeated_kfold_test(hines):
    """t = mean / sqrt(s² (1/(R·K) + 1/(K − 1))) over all R·K values (Bouckaert & Frank 2004;
    statistic from hidimstat's Nadeau–Bengio test), referred to t with K − 1 df."""
    est = _fit(hines, 3, 4)
    folds = est.importances_folds_
    j = folds.shape[1]
    t = folds.mean(axis=1) / np.sqrt(folds.var(axis=1, ddof=1) * (1 / j + 1 / (K - 1)))
    peer = nadeau_bengio_ttest(folds, 0.0, 1 / (K - 1), axis=1, alternative="greater").statistic
    np.testing.assert_allclose(t, peer, rtol=1e-12)
    np.testing.assert_allclose(est.pvalues_, stats.t.sf(t, K - 1), rtol=0, atol=1e-12)
    half = stats.t.ppf(0.975, K - 1) * folds.mean(axis=1) / t
    np.testing.assert_allclose(np.diff(est.conf_int_, axis=1)[:, 0], 2 * half, rtol=1e-10)
    np.testing.assert_allclose(est.importances_, folds.mean(axis=1), rtol=1e-12)


def _null_fold_values(seed):
    """Fold values of the null features x4–x6 of one Hines DGP-3 draw, 3 repeats."""
    return _fit(
        datasets.hines(400, random_state=seed), seed, 3, ["x4", "x5", "x6"]
    ).importances_folds_


@pytest.mark.slow
def test_null_features_are_rejected_at_the_nominal_rate_with_and_without_repeats():
    """x4–x6 of Hines DGP 3 (ψ = 0), 60 draws, linear DR-learner: the 5%-level rejection rate
    over the 3·60 tests is <= 5% + 2 s.e., for one split (the first repeat) and for 3 repeats.
    (With the reproduce's RidgeCV learner one split over-rejects: see its calibration claim.)"""
    seeds = 60
    folds = np.array(Parallel(n_jobs=2)(delayed(_null_fold_values)(s) for s in range(seeds)))
    bound = 0.05 + 2 * np.sqrt(0.05 * 0.95 / (3 * seeds))
    single = np.array([corrected_ttest(f[:, :K])[0] for f in folds])
    repeated = np.array([corrected_ttest(f, n_folds=K)[0] for f in folds])
    assert (single < 0.05).mean() <= bound
    assert (repeated < 0.05).mean() <= bound


def test_repeats_make_the_pvalues_depend_less_on_the_split_seed(hines):
    """One dataset, 8 split seeds: the spread (s.d.) across seeds of the p-values of x1 and x3
    (ψ > 0, p around .1 at n = 400) shrinks with 4 repeats (measured: to about 0.45 of the
    one-split spread). One split = the first repeat (see the test above)."""
    fits = [_fit(hines, s, 4, ["x1", "x3"]) for s in range(8)]
    single = np.array([corrected_ttest(f.importances_folds_[:, :K])[0] for f in fits])
    repeated = np.array([f.pvalues_ for f in fits])
    np.testing.assert_array_less(repeated.std(axis=0), 0.7 * single.std(axis=0))


@pytest.mark.parametrize("n_repeats", [0, 1.5, "2"])
def test_bad_n_repeats_is_refused(hines, n_repeats):
    with pytest.raises((ValueError, TypeError), match="`n_repeats`"):
        PermuCATE(n_repeats=n_repeats).fit(hines.X, hines.T, hines.Y)


@pytest.mark.parametrize(("n_folds", "match"), [(1, "`n_folds`"), (4, "`n_folds`")])
def test_corrected_ttest_rejects_a_fold_count_that_does_not_divide(n_folds, match):
    with pytest.raises(ValueError, match=match):
        corrected_ttest(np.zeros((2, 10)), n_folds=n_folds)
