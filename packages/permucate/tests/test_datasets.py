import numpy as np
import pytest
from permucate import datasets


@pytest.mark.parametrize("dgp", [1, 2, 3, 4])
def test_hines_importance_matches_monte_carlo(dgp):
    """Closed-form ψ_j against E[(τ(X) − E[τ(X)|X_−j])²] by simulation (additive τ here:
    τ − E[τ | X_−j] = f_j(x_j) − E f_j(x_j | X_−j), known in closed form per DGP)."""
    data = datasets.hines(400_000, dgp=dgp, random_state=0)
    X = data.X.to_numpy()
    if dgp in (1, 2):
        x1, x2 = X.T
        c = 25 / 9 / (10 if dgp == 2 else 1)
        mc = [np.var(x1**3 + 1.4 * x1**2), np.var(c * x2**2)]
    else:
        rho = 0.5 if dgp == 3 else 0.0
        beta = np.array([1.0, 2.0, 1.0, 0.0, 0.0, 0.0])
        partner = [1, 0, 3, 2, 5, 4]
        mc = [np.mean((beta[j] * (X[:, j] - rho * X[:, partner[j]])) ** 2) for j in range(6)]
    np.testing.assert_allclose(datasets.hines_importance(dgp), mc, rtol=0.02, atol=1e-12)


def test_hines_dgp3_structure():
    data = datasets.hines(1000, random_state=1)
    assert list(data.X.columns) == ["x1", "x2", "x3", "x4", "x5", "x6"]
    np.testing.assert_allclose(data.tau, data.X.x1 + 2 * data.X.x2 + data.X.x3)
    np.testing.assert_allclose(data.mu1 - data.mu0, data.tau)
    np.testing.assert_array_equal(data.support, [True, True, True, False, False, False])
    assert set(np.unique(data.T)) == {0, 1}


def test_ihdp_real_covariates_and_replayed_surface():
    data = datasets.ihdp(0)
    assert data.X.shape == (747, 25)
    assert int(data.T.sum()) == 139
    assert list(data.X.columns[:3]) == ["bw", "b.head", "preterm"]
    binary = data.X.iloc[:, 6:].to_numpy()
    assert all(np.unique(binary[:, j]).size == 2 for j in range(19))
    np.testing.assert_allclose(data.X.iloc[:, :6].mean(), 0, atol=1e-12)  # standardised
    assert data.support.sum() == (data.beta != 0).sum() > 0
    assert data.feature_types.count("continuous") == 6


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: datasets.hines(1), ValueError, "`n`"),
        (lambda: datasets.hines(100, dgp=7), ValueError, "`dgp` must be one of"),
        (lambda: datasets.ihdp(-1), ValueError, "`random_state`"),
        (lambda: datasets.ihdp(None), TypeError, "`random_state`"),
    ],
)
def test_datasets_reject_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
