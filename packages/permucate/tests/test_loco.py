import numpy as np
import pytest
from permucate import LOCO, PermuCATE, dr_learner
from sklearn.linear_model import LinearRegression, LogisticRegression

from .conftest import equicorrelated


@pytest.fixture(scope="module")
def linear_setting():
    rng = np.random.default_rng(9)
    X, cov = equicorrelated(3000, 3, 0.5, rng)
    beta = np.array([1.0, 0.5, 0.0])
    T = rng.integers(0, 2, 3000)
    tau = X @ beta
    Y = X[:, 2] + T * tau + rng.normal(size=3000)
    truth = beta**2 / np.diag(np.linalg.inv(cov))
    return X, T, Y, tau, truth


def _learner():
    return dr_learner(LinearRegression(), LogisticRegression(), LinearRegression(), random_state=0)


@pytest.mark.parametrize("mode", ["final", "full"])
def test_loco_estimates_the_same_estimand(linear_setting, mode):
    """LOCO's ψ̂ (no ½) targets β_j²(1 − R²_{j|−j}) too (Hines et al. 2022), within 3 s.e."""
    X, T, Y, tau, truth = linear_setting
    est = LOCO(
        _learner(),
        mode=mode,
        risk="tau",
        outcome_model=LinearRegression(),
        propensity_model=LogisticRegression(),
        random_state=0,
    ).fit(X, T, Y, tau=tau)
    np.testing.assert_array_less(np.abs(est.importances_ - truth), 3 * est.std_err_ + 0.02)


def test_loco_and_permucate_share_folds_for_the_same_seed(linear_setting):
    X, T, Y, _tau, _ = linear_setting
    kwargs = dict(outcome_model=LinearRegression(), propensity_model=LogisticRegression())
    cpi = PermuCATE(_learner(), n_permutations=2, random_state=4, **kwargs).fit(X, T, Y)
    loco = LOCO(_learner(), mode="final", random_state=4, **kwargs).fit(X, T, Y)
    for (a, b), (c, d) in zip(cpi.folds_, loco.folds_, strict=True):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"mode": "partial"}, "`mode` must be one of"),
        ({"learner": lambda x: x[:, 0]}, "refits the learner"),
        ({"mode": "final", "learner": lambda x: x[:, 0]}, "needs `final_model`"),
        ({"groups": [[0, 1, 2]]}, "at least one feature left"),
    ],
)
def test_loco_rejects_bad_input(params, match):
    rng = np.random.default_rng(0)
    X, T, Y = rng.normal(size=(40, 3)), np.tile([0, 1], 20), rng.normal(size=40)
    with pytest.raises(ValueError, match=match):
        LOCO(**{"learner": _learner(), **params}).fit(X, T, Y)
