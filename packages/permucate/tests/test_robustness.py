"""Inputs a new user passes first: pandas objects, odd codings, degenerate columns, bad models."""

import numpy as np
import pandas as pd
import pytest
from permucate import (
    LOCO,
    ConditionalSampler,
    LinearGaussianSampler,
    PermuCATE,
    RiskNuisances,
    datasets,
    dr_learner,
    dr_risk,
    r_risk,
    tau_risk,
)
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression, LogisticRegression

from .conftest import FixedClassifier, FixedRegressor


@pytest.fixture(scope="module")
def frame():
    data = datasets.hines(400, random_state=2)
    X = data.X.set_index(pd.Index(np.arange(400) * 10 + 5, name="patient"))
    return X, pd.Series(data.T, index=X.index), pd.Series(data.Y, index=X.index), data


def test_misaligned_pandas_index_is_refused(frame):
    X, T, Y, _ = frame
    with pytest.raises(ValueError, match="`T` has a different index from `X`"):
        PermuCATE(n_permutations=2).fit(X.sort_values("x1"), T, Y)
    with pytest.raises(ValueError, match="`Y` has a different index"):
        LOCO().fit(X, T, Y.reset_index(drop=True))


def test_aligned_series_and_plain_arrays_give_the_same_result(frame):
    X, T, Y, _ = frame
    learner = lambda x: x[:, 0] + 2 * x[:, 1]  # noqa: E731 - a fixed CATE model
    kwargs = dict(n_permutations=3, random_state=0)
    a = PermuCATE(learner, **kwargs).fit(X, T, Y)
    b = PermuCATE(learner, **kwargs).fit(X.to_numpy(), T.to_numpy(), Y.to_numpy())
    np.testing.assert_array_equal(a.importances_folds_, b.importances_folds_)


def test_non_positive_variance_estimate_gives_nan_normalised_importance(frame):
    """With τ̂ ≡ 0 the one-step estimate is −mean(φ)² <= 0: no silent sign flip."""
    X, T, Y, _ = frame
    with pytest.warns(RuntimeWarning, match="Var\\(τ\\(X\\)\\) is not positive"):
        est = PermuCATE(lambda x: np.zeros(len(x)), n_permutations=2).fit(X, T, Y)
    assert est.variance_tau_ <= 0
    assert np.isnan(est.importances_normalized_).all()


def test_categorical_columns_with_float_codes_are_drawn_in_their_own_values():
    rng = np.random.default_rng(0)
    z = rng.normal(size=600)
    sex = np.where(z + rng.normal(size=600) > 0, 0.0507, -0.0446)  # sklearn diabetes coding
    X = np.column_stack([z, sex, rng.normal(size=600)])
    T = rng.integers(0, 2, 600)
    tau = 20 * sex + X[:, 0]
    est = PermuCATE(lambda x: 20 * x[:, 1] + x[:, 0], risk="tau", n_permutations=5, random_state=0)
    est.fit(X, T, tau, tau=tau)
    draws = est.samplers_[0].sample(X, 1, n_samples=4, random_state=0)
    assert set(np.unique(draws)) == {-0.0446, 0.0507}
    assert est.importances_[1] > 0


def test_a_single_covariate_is_permuted_marginally():
    """d = 1: nothing to condition on, X̃ is a permutation of X: ψ = β² Var(x)."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3000, 1)) * 2
    T = rng.integers(0, 2, 3000)
    tau = 1.5 * x[:, 0]
    est = PermuCATE(lambda v: 1.5 * v[:, 0], risk="tau", n_permutations=10, random_state=0)
    est.fit(x, T, tau, tau=tau)
    assert abs(est.importances_[0] - 1.5**2 * 4) < 3 * est.std_err_[0]


def test_constant_and_rare_binary_columns_do_not_crash(frame):
    X, T, Y, _ = frame
    X = X.assign(const=1.0, rare=np.r_[1.0, np.zeros(399)])
    est = PermuCATE(lambda x: x[:, 0], risk="tau", n_permutations=2, random_state=0)
    est.fit(X, T, Y, tau=X.x1.to_numpy())
    table = est.summary()
    assert table.loc["const", "importance"] == 0.0
    assert np.isfinite(table.importance).all()


def test_mixed_group_is_refused_with_its_column_names(frame):
    X, T, Y, _ = frame
    X = X.assign(smoker=(X.x1 > 0).astype(float))
    with pytest.raises(ValueError, match=r"group 'demo' mixes .*x1 \(continuous\), smoker"):
        PermuCATE(groups={"demo": ["x1", "smoker"]}, n_permutations=2).fit(X, T, Y)


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"groups": {}}, ValueError, "`groups` is empty"),
        ({"learner": lambda x: np.full(len(x), np.nan)}, ValueError, "NaN or infinite effects"),
        ({"sampler": "nan-sampler"}, ValueError, "`sampler.sample` returned NaN"),
    ],
)
def test_permucate_rejects_degenerate_inputs(frame, params, error, match):
    X, T, Y, _ = frame

    class NanSampler:
        def fit(self, X, groups):
            return self

        def sample(self, X, group, n_samples, rng):
            return np.full((n_samples, len(X), 1), np.nan)

    if params.get("sampler") == "nan-sampler":
        params = {"sampler": NanSampler(), "learner": lambda x: x[:, 0]}
    with pytest.raises(error, match=match):
        PermuCATE(**{"n_permutations": 2, **params}).fit(X, T, Y)


def test_loco_final_needs_a_regressor(frame):
    X, T, Y, _ = frame
    with pytest.raises(ValueError, match="must be an sklearn regressor, got LogisticRegression"):
        LOCO(mode="final", final_model=LogisticRegression()).fit(X, T, Y)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"clip": (0.01, 0.99)}, TypeError, "`clip` must be"),
        ({"outcome_model": "ridge"}, TypeError, "`outcome_model` must be an sklearn regressor"),
        ({"outcome_model": LogisticRegression()}, TypeError, "`outcome_model` must be"),
        ({"propensity_model": LinearRegression()}, TypeError, "`propensity_model` must be"),
        ({"final_model": LogisticRegression()}, TypeError, "`final_model` must be"),
        ({"random_state": "x"}, TypeError, "`random_state` must be"),
    ],
)
def test_dr_learner_rejects_wrong_models(kwargs, error, match):
    with pytest.raises(error, match=match):
        dr_learner(**kwargs)


def test_risk_nuisances_reject_a_classifier_as_outcome_model():
    with pytest.raises(TypeError, match="`outcome_model` must be an sklearn regressor"):
        RiskNuisances(LogisticRegression(), FixedClassifier([0.0])).fit(
            np.zeros((4, 1)), [0, 1, 0, 1], np.zeros(4)
        )


def test_conditional_sampler_defaults_and_errors():
    X = np.random.default_rng(0).normal(size=(30, 3))
    sampler = ConditionalSampler(feature_types="continuous")
    with pytest.raises(NotFittedError):
        sampler.sample(X, 0, 2, 0)
    sampler.fit(X)  # groups=None: every column alone
    assert len(sampler.groups_) == 3
    with pytest.raises(ValueError, match="`group` must be an index in \\[0, 3\\)"):
        sampler.sample(X, 3, 2, 0)
    with pytest.raises(ValueError, match="`n_samples`"):
        sampler.sample(X, 0, 0, 0)
    with pytest.raises(ValueError, match="`categorical_max_cardinality`"):
        ConditionalSampler(categorical_max_cardinality=0).fit(X)
    with pytest.raises(TypeError, match="`model_regression` must be an sklearn regressor"):
        ConditionalSampler(model_regression=LogisticRegression()).fit(X)
    with pytest.raises(TypeError, match="`groups` must be a sequence"):
        sampler.fit(X, [["x1"]])
    with pytest.raises(NotFittedError):
        LinearGaussianSampler().residuals(X)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: dr_risk(np.zeros((2, 5)), np.zeros(4)), "`pseudo_outcome` must be 1-D with"),
        (lambda: tau_risk(np.zeros(5), np.zeros((5, 1))), "`tau` must be 1-D"),
        (lambda: r_risk(np.zeros(3), np.zeros(3), [1, 2, 1], np.zeros(3), np.ones(3) / 2), "`t`"),
    ],
)
def test_risks_reject_mismatched_targets(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_plot_rejects_a_non_axes(frame):
    X, T, Y, _ = frame
    est = PermuCATE(lambda x: x[:, 0], risk="tau", n_permutations=2).fit(X, T, Y, tau=Y)
    with pytest.raises(TypeError, match="`ax` must be a matplotlib Axes"):
        est.plot(ax="x")


class NanOutcome(FixedRegressor):
    def predict(self, X):
        return np.full(len(X), np.nan)


class ShortOutcome(FixedRegressor):
    def predict(self, X):
        return np.zeros(len(X) - 1)


class OneColumnPropensity(FixedClassifier):
    def predict_proba(self, X):
        return np.full((len(X), 1), 0.5)


@pytest.mark.parametrize(
    ("models", "match"),
    [
        ({"outcome_model": NanOutcome([0.0] * 6)}, "`outcome_model` returned NaN"),
        ({"outcome_model": ShortOutcome([0.0] * 6)}, "`outcome_model` returned predictions of"),
        ({"propensity_model": OneColumnPropensity([0.0] * 6)}, "`propensity_model` returned"),
    ],
)
def test_broken_nuisance_models_are_named(frame, models, match):
    X, T, Y, _ = frame
    with pytest.raises(ValueError, match=match):
        PermuCATE(lambda x: x[:, 0], n_permutations=2, **models).fit(X, T, Y)


def test_pandas_t_and_y_must_agree_even_with_a_numpy_x(frame):
    X, T, Y, _ = frame
    with pytest.raises(ValueError, match="`Y` has a different index from `T`"):
        PermuCATE(n_permutations=2).fit(X.to_numpy(), T, Y.sort_values())


def test_estimator_class_instead_of_instance_is_refused(frame):
    from econml.dr import DRLearner

    X, T, Y, _ = frame
    with pytest.raises(TypeError, match="instance, got the class DRLearner"):
        PermuCATE(DRLearner).fit(X, T, Y)
    with pytest.raises(TypeError, match="`outcome_model` must be an sklearn regressor"):
        PermuCATE(outcome_model=LinearRegression).fit(X, T, Y)


def test_feature_types_as_a_dict_and_misuses(frame):
    X, T, Y, _ = frame
    X = X.assign(site=np.tile([1.0, 2.0, 3.0, 4.0], 100))
    est = PermuCATE(lambda x: x[:, 0], n_permutations=2, feature_types={"x1": "continuous"})
    est.fit(X, T, Y)
    assert est.feature_types_ == ["continuous"] * 6 + ["categorical"]
    with pytest.raises(ValueError, match="unknown columns \\['age'\\]"):
        PermuCATE(n_permutations=2, feature_types={"age": "continuous"}).fit(X, T, Y)
    with pytest.raises(ValueError, match="configures the default sampler only"):
        PermuCATE(sampler=LinearGaussianSampler(), feature_types="continuous").fit(X, T, Y)
    with pytest.raises(TypeError, match="`groups` must be a dict"):
        PermuCATE(groups="x1").fit(X, T, Y)
    with pytest.raises(ValueError, match='`final_model` is used by mode="final" only'):
        LOCO(final_model=LinearRegression()).fit(X, T, Y)


def test_ignored_tau_and_collinear_columns_are_announced(frame):
    X, T, Y, data = frame
    with pytest.warns(UserWarning, match='`tau` is used by risk="tau" only'):
        PermuCATE(lambda x: x[:, 0], n_permutations=2).fit(X, T, Y, tau=data.tau)
    with pytest.warns(RuntimeWarning, match="collinear columns \\(x1 ~ x1_copy\\)"):
        PermuCATE(lambda x: x[:, 0], n_permutations=2).fit(X.assign(x1_copy=X.x1), T, Y)


def test_rare_categorical_level_error_says_what_to_do():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=60), np.repeat(np.arange(30.0), 2)])  # 2 rows a level
    with pytest.raises(ValueError, match=r"columns \[1\] \(categorical\) failed.*rare levels"):
        ConditionalSampler(feature_types=["continuous", "categorical"]).fit(X)


def test_samplers_check_the_width_of_x():
    X = np.random.default_rng(0).normal(size=(30, 3))
    for sampler in (ConditionalSampler(feature_types="continuous"), LinearGaussianSampler()):
        sampler.fit(X)
        with pytest.raises(ValueError, match="`X` has 2 columns, the sampler was fitted on 3"):
            sampler.sample(X[:, :2], 0, 2, 0)
        assert sampler.sample(pd.DataFrame(X), 0, 2, 0).shape == (2, 30, 1)


def test_risks_reject_non_finite_values_and_invalid_propensities():
    with pytest.raises(ValueError, match="must be finite"):
        dr_risk(np.array([np.nan, 1.0]), np.zeros(2))
    with pytest.raises(ValueError, match="`pi_hat` must lie strictly between 0 and 1"):
        r_risk(np.zeros(3), np.zeros(3), [0, 1, 0], np.zeros(3), [0.0, 1.5, 0.5])
