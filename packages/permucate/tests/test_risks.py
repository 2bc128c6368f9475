import numpy as np
import pytest
from permucate import RiskNuisances, dr_risk, r_risk, tau_risk

from .conftest import FixedClassifier, FixedRegressor


def test_risks_match_their_formulas_and_broadcast_over_permutations():
    rng = np.random.default_rng(1)
    n = 7
    tau_hat = rng.normal(size=(3, n))  # P = 3 perturbed predictions
    y, m, tau, phi = rng.normal(size=(4, n))
    t = rng.integers(0, 2, n)
    pi = rng.uniform(0.1, 0.9, n)
    for p in range(3):
        np.testing.assert_allclose(dr_risk(tau_hat, phi)[p], (phi - tau_hat[p]) ** 2)
        np.testing.assert_allclose(
            r_risk(tau_hat, y, t, m, pi)[p], ((y - m) - (t - pi) * tau_hat[p]) ** 2
        )
        np.testing.assert_allclose(tau_risk(tau_hat, tau)[p], (tau - tau_hat[p]) ** 2)
    assert dr_risk(tau_hat, phi).dtype == np.float64


def test_pseudo_outcome_matches_hand_formula_with_oracle_nuisances():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 2))
    T = np.r_[np.zeros(25), np.ones(25)].astype(int)
    Y = rng.normal(size=50)
    # The same fixed outcome model serves both arms: μ0 = μ1 = X @ g.
    g, e = np.array([0.5, -1.0]), np.array([0.2, 0.4])
    nuis = RiskNuisances(FixedRegressor(g), FixedClassifier(e)).fit(X, T, Y)
    mu = X @ g
    pi = np.clip(1 / (1 + np.exp(-(X @ e))), 0.01, 0.99)
    expected = (Y - mu) * (T - pi) / (pi * (1 - pi))
    np.testing.assert_allclose(nuis.pseudo_outcome(X, T, Y), expected, rtol=1e-12)
    pred = nuis.predict(X)
    np.testing.assert_allclose(pred["m"], pi * mu + (1 - pi) * mu)


def test_nuisances_warn_when_many_propensities_hit_the_clip():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 1)) * 10
    T = (X[:, 0] > 0).astype(int)
    with pytest.warns(RuntimeWarning, match="clipping bound"):
        RiskNuisances(FixedRegressor([0.0]), FixedClassifier([5.0])).fit(X, T, np.zeros(100))


def test_per_arm_outcome_models_are_fitted_on_their_own_arm():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    T = np.array([0, 0, 1, 1])
    Y = np.array([0.0, 1.0, 20.0, 30.0])  # slope 1 in control, 10 in treated
    from sklearn.linear_model import LinearRegression

    nuis = RiskNuisances(LinearRegression(), FixedClassifier([0.0])).fit(X, T, Y)
    np.testing.assert_allclose(nuis.outcome_models_[0].coef_, [1.0])
    np.testing.assert_allclose(nuis.outcome_models_[1].coef_, [10.0])


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"T": np.array([0, 0.5, 1, 0])}, ValueError, "`T` must be a discrete treatment"),
        ({"T": np.array([0, 0, 0, 0])}, ValueError, "`T` must have at least two arms"),
        ({"T": np.array([0, 2, 1, 0])}, ValueError, "`propensity_model` has classes_"),
        ({"Y": np.array([0.0, np.nan, 1.0, 2.0])}, ValueError, "`Y` contains NaN"),
        ({"Y": np.zeros(3)}, ValueError, "`Y` has 3 rows but `X` has 4"),
        ({"X": np.zeros((0, 2))}, ValueError, "`X`"),
        ({"clip": (0.5, 0.2)}, ValueError, "`clip` must be a pair"),
    ],
)
def test_nuisances_reject_bad_input(kwargs, error, match):
    args = {"X": np.arange(8.0).reshape(4, 2), "T": np.array([0, 1, 0, 1]), "Y": np.zeros(4)}
    clip = kwargs.pop("clip", (0.01, 0.99))
    args.update(kwargs)
    with pytest.raises(error, match=match):
        RiskNuisances(FixedRegressor([0.0, 0.0]), FixedClassifier([0.0, 0.0]), clip=clip).fit(
            **args
        )
