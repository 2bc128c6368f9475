import numpy as np
import pytest
from permucate import CateModel, PerArmRegressor, as_cate, datasets, dr_learner
from sklearn.linear_model import LinearRegression, LogisticRegression


def test_dr_learner_recovers_dgp3_coefficients():
    """Spec test 8: linear outcome models recover τ = x1 + 2x2 + x3 within 0.15 at n = 4000.

    One draw's coefficients have a standard error of ~0.11 (noise sd 3 divided by π(1 − π) in
    the pseudo-outcome), so the spec's 0.15 is checked on the mean over 5 independent draws
    (s.e. ~0.05, i.e. a 3-s.e. tolerance).
    """
    coefs = []
    for seed in range(5):
        data = datasets.hines(4000, dgp=3, random_state=seed)
        X = data.X.to_numpy()
        est = dr_learner(
            LinearRegression(), LogisticRegression(), LinearRegression(), random_state=0
        )
        est.fit(data.Y, data.T, X=X)
        tau_hat = np.asarray(est.effect(X)).reshape(-1)
        coefs.append(LinearRegression().fit(X, tau_hat).coef_)  # exact: the final stage is linear
    np.testing.assert_allclose(np.mean(coefs, axis=0), [1, 2, 1, 0, 0, 0], atol=0.15)


def test_per_arm_regressor_routes_rows_by_the_treatment_column():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 1))
    arm = np.r_[np.zeros(100), np.ones(100)]
    y = np.where(arm == 1, 3 * x[:, 0], -x[:, 0])
    model = PerArmRegressor(LinearRegression()).fit(np.column_stack([x, arm]), y)
    np.testing.assert_allclose(model.estimators_[0].coef_, [-1.0])
    np.testing.assert_allclose(model.estimators_[1].coef_, [3.0])
    probe = np.array([[1.0, 0.0], [1.0, 1.0]])
    np.testing.assert_allclose(model.predict(probe), [-1.0, 3.0])


@pytest.mark.parametrize(
    ("X", "match"),
    [
        (np.zeros((4, 1)), ">= 2 columns"),
        (np.column_stack([np.zeros(4), [0, 1, 2, 1]]), "last column"),
        (np.column_stack([np.zeros(4), [1, 1, 1, 1]]), "no unit in arm 0"),
    ],
)
def test_per_arm_regressor_rejects_bad_input(X, match):
    with pytest.raises(ValueError, match=match):
        PerArmRegressor(LinearRegression()).fit(X, np.zeros(len(X)))


@pytest.mark.parametrize(
    ("n_arms", "X", "match"),
    [
        (1, np.zeros((4, 2)), "`n_arms` must be"),
        (3, np.zeros((4, 2)), ">= 3 columns"),
        (3, np.column_stack([np.zeros(4), [1, 1, 0, 0], [1, 0, 0, 1]]), "one-hot"),
    ],
)
def test_per_arm_regressor_rejects_a_bad_arm_layout(n_arms, X, match):
    with pytest.raises(ValueError, match=match):
        PerArmRegressor(LinearRegression(), n_arms=n_arms).fit(X, np.zeros(len(X)))


class CausalMLStyle:
    """The causalml meta-learner convention: fit(X, treatment, y), predict -> (n, 1)."""

    def fit(self, X, treatment, y):
        self.coef_ = LinearRegression().fit(X[treatment == 1], y[treatment == 1]).coef_
        return self

    def predict(self, X):
        return (X @ self.coef_)[:, None]


class NativeStyle:
    def fit(self, X, T, Y):
        self.shift_ = Y[T == 1].mean() - Y[T == 0].mean()
        return self

    def effect(self, X):
        return np.full(len(X), self.shift_)


def test_as_cate_dispatches_each_convention():
    rng = np.random.default_rng(1)
    X, T, Y = rng.normal(size=(40, 2)), np.tile([0, 1], 20), rng.normal(size=40)
    econml = as_cate(dr_learner(LinearRegression(), LogisticRegression(), LinearRegression(), cv=2))
    causalml, native, fixed = as_cate(CausalMLStyle()), as_cate(NativeStyle()), as_cate(np.sum)
    assert (econml.kind, causalml.kind, native.kind, fixed.kind) == (
        "econml",
        "causalml",
        "native",
        "fixed",
    )
    for model in (econml, causalml, native):
        assert model.clone().fit(X, T, Y).effect(X).shape == (40,)
    assert as_cate(econml) is econml
    assert fixed.clone() is fixed


def test_as_cate_rejects_objects_without_an_effect():
    with pytest.raises(TypeError, match="`learner` must be"):
        as_cate(LinearRegression())  # fit(X, y) but no effect


def test_cate_model_rejects_a_wrong_number_of_effects():
    model = CateModel(lambda X: np.zeros(len(X) + 1), "fixed")
    with pytest.raises(ValueError, match="returned 4 effects for 3 rows"):
        model.effect(np.zeros((3, 2)))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"cv": 1}, "`cv` must be"), ({"clip": 0.6}, "`clip` must be"), ({"n_arms": 1}, "`n_arms`")],
)
def test_dr_learner_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        dr_learner(**kwargs)
