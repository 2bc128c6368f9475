"""Shared test doubles: fixed-function (oracle) models and call recorders; the README's data."""

import numpy as np
import pytest
from permucate import datasets
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin


class CallLog(list):
    """A list of recorded inputs that survives sklearn's ``clone`` (which deep-copies params)."""

    def __deepcopy__(self, memo):
        return self


class FixedRegressor(RegressorMixin, BaseEstimator):
    """An oracle ``x -> x @ coef``; ``fit`` is a no-op. Records every ``predict`` input."""

    def __init__(self, coef=None, calls=None):
        self.coef = coef
        self.calls = calls

    def fit(self, X, y):
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def predict(self, X):
        X = np.asarray(X, dtype=float)
        if self.calls is not None:
            self.calls.append(X.copy())
        return X @ np.asarray(self.coef, dtype=float)


class FixedClassifier(ClassifierMixin, BaseEstimator):
    """An oracle propensity ``expit(x @ coef)``; ``fit`` is a no-op. Records inputs."""

    def __init__(self, coef=None, calls=None):
        self.coef = coef
        self.calls = calls

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, X):
        X = np.asarray(X, dtype=float)
        if self.calls is not None:
            self.calls.append(X.copy())
        p = expit(X @ np.asarray(self.coef, dtype=float))
        return np.column_stack([1 - p, p])


class RecordingCate:
    """A fixed ``τ̂(X) = X @ beta`` callable that records the shape and rows of every call."""

    def __init__(self, beta):
        self.beta = np.asarray(beta, dtype=float)
        self.calls = []

    def __call__(self, X):
        self.calls.append(np.asarray(X).copy())
        return np.asarray(X) @ self.beta


def equicorrelated(n, d, rho, rng):
    cov = np.full((d, d), rho) + (1 - rho) * np.eye(d)
    return rng.multivariate_normal(np.zeros(d), cov, size=n), cov


@pytest.fixture
def linear_data():
    """n = 600, d = 4 equicorrelated (ρ = .5) covariates, τ = Xβ, confounded treatment."""
    rng = np.random.default_rng(0)
    X, _ = equicorrelated(600, 4, 0.5, rng)
    beta = np.array([1.0, 0.5, 0.0, 0.0])
    pi = expit(0.3 * X[:, 0])
    T = (rng.uniform(size=600) < pi).astype(int)
    tau = X @ beta
    Y = X[:, 1] + T * tau + rng.normal(size=600)
    return X, T, Y, tau, beta


@pytest.fixture(scope="session")
def readme_folder(readme_folder):
    """The README's ``trial.csv``: the paper's Hines DGP 3 with n = 600."""
    data = datasets.hines(600, random_state=0)
    data.X.assign(treated=data.T, outcome=data.Y).to_csv(readme_folder / "trial.csv", index=False)
    return readme_folder
