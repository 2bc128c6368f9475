import numpy as np
import pandas as pd
import pytest
from permucate import ConditionalSampler, LinearGaussianSampler, PermuCATE, dr_learner
from scipy.special import expit
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression, LogisticRegression, RidgeCV

from .conftest import CallLog, FixedClassifier, FixedRegressor, RecordingCate, equicorrelated


def closed_form_importance(beta, cov):
    """ψ_j = β_j² Var(x_j | x_−j) = β_j² / Θ_jj for a linear τ and Gaussian X (Θ = Σ⁻¹)."""
    return beta**2 / np.diag(np.linalg.inv(cov))


def assert_within_3_se(est, truth):
    """|ψ̂_j − ψ_j| <= 3 s.e. (the corrected fold-based standard error the estimator reports).

    The per-sample contributions are not independent (a permutation reuses every row twice), so
    their naive standard error understates the spread; the fold-based one does not.
    """
    np.testing.assert_array_less(np.abs(est.importances_ - truth), 3 * est.std_err_ + 1e-12)


class ArmOracle(RegressorMixin, BaseEstimator):
    """Oracle outcome model: learns nothing, recognises its arm from the training rows."""

    def __init__(self, treated_rows=frozenset(), coef0=None, coef1=None):
        self.treated_rows = treated_rows
        self.coef0 = coef0
        self.coef1 = coef1

    def fit(self, X, y):
        arms = {row.tobytes() in self.treated_rows for row in np.asarray(X, dtype=float)}
        assert len(arms) == 1, "an outcome model must see one arm only"
        self.treated_ = arms.pop()
        return self

    def predict(self, X):
        return np.asarray(X, dtype=float) @ (self.coef1 if self.treated_ else self.coef0)


@pytest.fixture(scope="module")
def oracle_setting():
    """Spec test 2 data: n = 5000, d = 5 equicorrelated ρ = .5, τ = Xβ, known nuisances."""
    rng = np.random.default_rng(42)
    X, cov = equicorrelated(5000, 5, 0.5, rng)
    beta = np.array([1.0, -0.5, 0.8, 0.0, 0.0])
    gamma = np.array([0.5, 0.0, 0.0, 1.0, -1.0])  # μ0 = Xγ
    delta = np.array([0.3, 0.0, 0.0, 0.0, 0.2])  # π = expit(Xδ)
    T = (rng.uniform(size=5000) < expit(X @ delta)).astype(int)
    tau = X @ beta
    Y = X @ gamma + T * tau + rng.normal(size=5000)
    return X, T, Y, tau, beta, gamma, delta, closed_form_importance(beta, cov)


def test_oracle_tau_risk_recovers_closed_form_importance(oracle_setting):
    """Spec test 2: callable τ̂ = τ, tau risk -> β_j²(1 − R²_{j|−j}) within 3 s.e."""
    X, T, Y, tau, beta, *_, truth = oracle_setting
    est = PermuCATE(lambda x: x @ beta, risk="tau", n_permutations=20, random_state=0)
    est.fit(X, T, Y, tau=tau)
    assert_within_3_se(est, truth)
    np.testing.assert_allclose(
        est.importances_normalized_, est.importances_ / np.var(tau), rtol=0.02
    )


def test_oracle_dr_risk_with_oracle_nuisances_recovers_closed_form(oracle_setting):
    """Spec test 2, second half: dr risk with the true μ0, μ1, π."""
    X, T, Y, _tau, beta, gamma, delta, truth = oracle_setting
    treated = frozenset(row.tobytes() for row in X[T == 1])
    est = PermuCATE(
        lambda x: x @ beta,
        risk="dr",
        n_permutations=20,
        outcome_model=ArmOracle(treated, gamma, gamma + beta),
        propensity_model=FixedClassifier(delta),
        random_state=0,
    ).fit(X, T, Y)
    assert_within_3_se(est, truth)


def test_each_nuisance_and_learner_call_sees_the_right_rows(linear_data):
    """Spec test 3: nuisances predicted once per fold on unperturbed X; τ̂ once on X_test and
    once per feature on the (P·n_test, d) perturbed design."""
    X, T, Y, _tau, beta = linear_data
    cate = RecordingCate(beta)
    outcome_calls, propensity_calls = CallLog(), CallLog()
    est = PermuCATE(
        cate,
        n_permutations=7,
        cv=3,
        outcome_model=FixedRegressor(np.zeros(4), outcome_calls),
        propensity_model=FixedClassifier(np.zeros(4), propensity_calls),
        random_state=0,
    ).fit(X, T, Y)
    original_rows = {row.tobytes() for row in X}
    tests = [test for _, test in est.folds_]
    # Outcome models: one predict per arm per fold, on that fold's test rows exactly.
    assert len(outcome_calls) == 2 * 3
    for k, test in enumerate(tests):
        for call in outcome_calls[2 * k : 2 * k + 2]:
            np.testing.assert_array_equal(call, X[test])
    # Propensity: the training rows (clip diagnostics) then the test rows, never perturbed.
    assert len(propensity_calls) == 2 * 3
    assert all(row.tobytes() in original_rows for call in propensity_calls for row in call)
    # τ̂: once per fold on X_test (fold stage), then once per (fold, feature) on P·n_test rows.
    assert len(cate.calls) == 3 + 3 * 4
    for k, test in enumerate(tests):
        np.testing.assert_array_equal(cate.calls[k], X[test])
        for j in range(4):
            call = cate.calls[3 + 4 * k + j]
            assert call.shape == (7 * len(test), 4)
            others = np.delete(np.arange(4), j)
            np.testing.assert_array_equal(call[:, others], np.tile(X[test][:, others], (7, 1)))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:the estimate of Var")  # Var(τ) = 0 here: expected
def test_null_features_are_rejected_at_the_nominal_rate():
    """Spec test 6: τ constant, 100 reps, K = 5 -> rejection <= .05 + 2 s.e. per feature."""
    rejections = []
    for rep in range(100):
        rng = np.random.default_rng(rep)
        X = rng.normal(size=(300, 3))
        T = (rng.uniform(size=300) < expit(0.3 * X[:, 1])).astype(int)
        Y = X[:, 0] + T * 1.0 + rng.normal(size=300)
        est = PermuCATE(
            dr_learner(
                LinearRegression(), LogisticRegression(), LinearRegression(), random_state=rep
            ),
            n_permutations=20,
            outcome_model=LinearRegression(),
            propensity_model=LogisticRegression(),
            random_state=rep,
        ).fit(X, T, Y)
        rejections.append(est.pvalues_ < 0.05)
    rate = np.mean(rejections, axis=0)
    np.testing.assert_array_less(rate, 0.05 + 2 * np.sqrt(0.05 * 0.95 / 100))


def test_group_importance_is_the_sum_for_independent_features():
    """Spec test 7: linear τ, independent features: ψ_{a,b} = ψ_a + ψ_b within 3 s.e."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4000, 3))
    beta = np.array([1.0, 0.7, 0.4])
    T = rng.integers(0, 2, 4000)
    tau = X @ beta
    kwargs = dict(risk="tau", n_permutations=10, sampler=LinearGaussianSampler(1e-6))
    group = PermuCATE(lambda x: x @ beta, groups={"ab": [0, 1], "c": [2]}, random_state=1, **kwargs)
    group.fit(X, T, tau, tau=tau)
    single = PermuCATE(lambda x: x @ beta, random_state=1, **kwargs).fit(X, T, tau, tau=tau)
    assert list(group.summary().index) == ["ab", "c"]
    assert_within_3_se(group, np.array([beta[0] ** 2 + beta[1] ** 2, beta[2] ** 2]))
    se = np.sqrt(group.std_err_[0] ** 2 + (single.std_err_[:2] ** 2).sum())
    assert abs(group.importances_[0] - single.importances_[:2].sum()) < 3 * se


def test_results_do_not_depend_on_n_jobs_and_names_reach_summary(linear_data):
    """Spec test 9: same random_state -> identical results for n_jobs 1 and 2."""
    X, T, Y, _tau, _ = linear_data
    frame = pd.DataFrame(X, columns=["age", "dose", "bmi", "site"], index=np.arange(600) * 3 + 7)

    def fit(n_jobs):
        learner = dr_learner(LinearRegression(), LogisticRegression(), RidgeCV(), random_state=0)
        return PermuCATE(
            learner,
            n_permutations=5,
            outcome_model=LinearRegression(),
            propensity_model=LogisticRegression(),
            n_jobs=n_jobs,
            random_state=11,
        ).fit(frame, T, Y)

    one, two = fit(1), fit(2)
    np.testing.assert_array_equal(one.importances_folds_, two.importances_folds_)
    np.testing.assert_array_equal(one.pvalues_, two.pvalues_)
    np.testing.assert_array_equal(one.per_sample_, two.per_sample_)
    assert list(one.summary().index) == ["age", "dose", "bmi", "site"]
    assert list(one.feature_names_in_) == ["age", "dose", "bmi", "site"]


def test_features_subset_scores_only_those(linear_data):
    X, T, Y, tau, beta = linear_data
    est = PermuCATE(lambda x: x @ beta, risk="tau", n_permutations=3, features=[2, "x0"])
    est.fit(X, T, Y, tau=tau)
    assert list(est.summary().index) == ["x2", "x0"]
    assert est.importances_[0] == 0.0  # β_2 = 0 and τ̂ = τ: no change at all
    assert est.pvalues_[0] == 1.0


def test_summary_and_plot(linear_data):
    X, T, Y, tau, beta = linear_data
    est = PermuCATE(lambda x: x @ beta, risk="tau", n_permutations=3, random_state=0)
    est.fit(X, T, Y, tau=tau)
    table = est.summary()
    assert list(table.columns) == [
        "importance",
        "importance_normalized",
        "std_err",
        "ci_low",
        "ci_high",
        "pvalue",
        "significant",
    ]
    assert (table.ci_low <= table.importance).all()
    assert (table.importance <= table.ci_high).all()
    ax = est.plot()
    assert len(ax.patches) == 4


def test_summary_before_fit_raises():
    with pytest.raises(NotFittedError):
        PermuCATE().summary()


def _fit_args(**override):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    T = np.tile([0, 1], 20)
    args = {"X": X, "T": T, "Y": rng.normal(size=40), "tau": None}
    args.update(override)
    return args


class NoEffect:
    def fit(self, X, T, Y):
        return self


class WrongShapeSampler:
    def fit(self, X, groups):
        return self

    def sample(self, X, group, n_samples, rng):
        return np.zeros((n_samples, len(X)))  # missing the group axis


@pytest.mark.parametrize(
    ("params", "fit_override", "error", "match"),
    [
        ({}, {"T": np.tile([0, 0.5], 20)}, ValueError, "`T` must be a discrete treatment"),
        ({}, {"Y": np.zeros(39)}, ValueError, "`Y` has 39 rows but `X` has 40"),
        ({}, {"T": np.tile([0, 1], 19)}, ValueError, "`T` has 38 rows"),
        ({}, {"Y": np.r_[np.nan, np.zeros(39)]}, ValueError, "`Y` contains NaN"),
        ({}, {"X": np.full((40, 3), np.inf)}, ValueError, "`X` contains NaN or infinity"),
        ({}, {"X": np.zeros((0, 3)), "T": [], "Y": []}, ValueError, "`X`"),
        ({}, {"T": np.r_[np.ones(37), np.zeros(3)]}, ValueError, "`T` needs at least 5 units"),
        ({"cv": 1}, {}, ValueError, "`cv`"),
        ({"n_permutations": 0}, {}, ValueError, "`n_permutations`"),
        ({"risk": "mse"}, {}, ValueError, "`risk` must be one of"),
        ({"risk": "tau"}, {}, ValueError, "`tau` is required"),
        ({"features": ["age"]}, {}, ValueError, "`features` names an unknown feature"),
        ({"groups": [[0, 1], [1, 2]]}, {}, ValueError, "`groups` overlap"),
        ({"groups": [[0], [0, 5]]}, {}, ValueError, "`groups` names an unknown feature"),
        ({"alpha": 1.5}, {}, ValueError, "`alpha`"),
        ({"learner": NoEffect()}, {}, TypeError, "`learner` must be"),
        ({"learner": 3.0}, {}, TypeError, "`learner` must be"),
        ({"sampler": object()}, {}, TypeError, "`sampler` must have"),
        ({"sampler": WrongShapeSampler()}, {}, ValueError, "`sampler.sample` returned shape"),
    ],
)
def test_fit_rejects_bad_input(params, fit_override, error, match):
    params = {"learner": lambda x: x[:, 0], "n_permutations": 2, **params}
    with pytest.raises(error, match=match):
        PermuCATE(**params).fit(**_fit_args(**fit_override))


def test_default_sampler_uses_declared_feature_types(linear_data):
    X, T, Y, tau, beta = linear_data
    Xb = X.copy()
    Xb[:, 3] = Xb[:, 3] > 0
    est = PermuCATE(
        lambda x: x @ beta,
        risk="tau",
        n_permutations=2,
        feature_types=["continuous", "continuous", "continuous", "categorical"],
    ).fit(Xb, T, Y, tau=tau)
    assert all(isinstance(s, ConditionalSampler) for s in est.samplers_)
    assert est.samplers_[0].samplers_[3].data_type == "categorical"
