"""Multi-valued discrete treatments: one importance per (arm against the base arm, feature)."""

import numpy as np
import pandas as pd
import pytest
from permucate import LOCO, PerArmRegressor, PermuCATE, RiskNuisances, dr_learner
from permucate.cli import main as cli
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LinearRegression, LogisticRegression

from .conftest import FixedRegressor, equicorrelated

# Arms 0 (base), 1, 2; τ_a = X β_a against arm 0; d = 4 equicorrelated covariates (ρ = .5).
BETA = np.array([[1.0, 0.0, 0.5, 0.0], [0.0, 1.5, 0.0, 0.0]])
GAMMA = np.array([[0.0, 0.0, 0.0, 0.0], [0.4, 0.0, 0.0, 0.3], [-0.3, 0.3, 0.0, 0.0]])


def three_arms(n, seed):
    """Multinomial-logit propensities softmax(Xγ), μ_0 = .5x0 + x3, Y = μ_0 + τ_T + N(0, 1)."""
    rng = np.random.default_rng(seed)
    X, cov = equicorrelated(n, 4, 0.5, rng)
    propensity = softmax(X @ GAMMA.T, axis=1)
    T = (rng.uniform(size=n)[:, None] > propensity.cumsum(axis=1)).sum(axis=1)
    tau = X @ BETA.T  # (n, 2): arm 1 and arm 2 against arm 0
    effect = np.column_stack([np.zeros(n), tau])[np.arange(n), T]
    Y = 0.5 * X[:, 0] + X[:, 3] + effect + rng.normal(size=n)
    truth = BETA**2 / np.diag(np.linalg.inv(cov))  # ψ_{a,j} = β_{a,j}² Var(x_j | x_−j)
    return X, T, Y, tau, propensity, truth.ravel()


def linear_learner(**kwargs):
    return dr_learner(LinearRegression(), LogisticRegression(), LinearRegression(), **kwargs)


@pytest.fixture(scope="module")
def data():
    return three_arms(3000, 0)


def test_oracle_importance_of_each_arm_matches_the_closed_form(data):
    """τ̂ = τ per arm, oracle risk: ψ_{a,j} = β_{a,j}² (1 − R²_{j|−j}) within 3 s.e."""
    X, T, Y, tau, _, truth = data
    est = PermuCATE(lambda x: x @ BETA.T, risk="tau", n_permutations=20, random_state=0)
    est.fit(X, T, Y, tau=tau)
    np.testing.assert_array_less(np.abs(est.importances_ - truth), 3 * est.std_err_ + 1e-12)
    table = est.summary()
    assert table.index.names == ["contrast", "feature"]
    assert list(table.index) == [(c, f"x{j}") for c in ("1 vs 0", "2 vs 0") for j in range(4)]
    assert list(est.arms_) == [0, 1, 2]
    ticks = [t.get_text() for t in est.plot().get_yticklabels()]
    assert ticks[0] == "x0 (1 vs 0)"
    per_fold = [tau[test].var(axis=0) for _, test in est.folds_]  # Var(τ_a) on each test part
    np.testing.assert_allclose(est.variance_tau_, np.mean(per_fold, axis=0), rtol=1e-12)


def test_dr_learner_with_per_arm_models_recovers_each_arms_coefficients():
    """econml's multi-arm DRLearner through PerArmRegressor(n_arms=3), linear models:
    effect(X, T0=0, T1=a) regressed on X gives β_a (mean of 3 draws at n = 4000, within .15)."""
    coefs = []
    for seed in range(3):
        X, T, Y, *_ = three_arms(4000, 10 + seed)
        est = linear_learner(n_arms=3, random_state=0).fit(Y, T, X=X)
        coefs.append([LinearRegression().fit(X, est.effect(X, T0=0, T1=a)).coef_ for a in (1, 2)])
    np.testing.assert_allclose(np.mean(coefs, axis=0), BETA, atol=0.15)


def test_permucate_with_the_fitted_learner_finds_each_arms_drivers(data):
    """Default DR risk, a fitted multi-arm DR-learner (n_arms set from T when learner=None is
    replaced by its linear version here): ψ̂ near the closed form (|error| < .35, about 3 s.d.
    of ψ̂ across draws at this n) and, after Holm's adjustment over all 8 rows, exactly the
    non-zero ψ_{a,j} are significant."""
    X, T, Y, _, _, truth = data
    est = PermuCATE(
        linear_learner(n_arms=3, random_state=0),
        n_permutations=20,
        outcome_model=LinearRegression(),
        propensity_model=LogisticRegression(),
        random_state=0,
    ).fit(X, T, Y)
    np.testing.assert_allclose(est.importances_, truth, atol=0.35)
    table = est.summary(adjust="holm")
    np.testing.assert_array_equal(table.significant.to_numpy(), truth > 0)


def test_loco_final_refits_one_final_model_per_arm(data):
    X, T, Y, tau, _, truth = data
    est = LOCO(
        linear_learner(n_arms=3, random_state=0),
        mode="final",
        risk="tau",
        outcome_model=LinearRegression(),
        propensity_model=LogisticRegression(),
        random_state=0,
    ).fit(X, T, Y, tau=tau)
    np.testing.assert_array_less(np.abs(est.importances_ - truth), 3 * est.std_err_ + 0.05)


def test_per_arm_regressor_routes_three_arms_by_their_indicators():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 1))
    arm = np.repeat([0, 1, 2], 100)
    y = np.choose(arm, [-x[:, 0], 3 * x[:, 0], 5 * x[:, 0]])
    onehot = np.column_stack([arm == 1, arm == 2]).astype(float)
    model = PerArmRegressor(LinearRegression(), n_arms=3).fit(np.column_stack([x, onehot]), y)
    for a, slope in enumerate([-1.0, 3.0, 5.0]):
        np.testing.assert_allclose(model.estimators_[a].coef_, [slope])
    probe = np.array([[1.0, 0, 0], [1.0, 1, 0], [1.0, 0, 1]])
    np.testing.assert_allclose(model.predict(probe), [-1.0, 3.0, 5.0])
    with pytest.raises(ValueError, match="one-hot treatment"):
        model.predict(np.array([[1.0, 1, 1]]))


class FixedMultinomial(ClassifierMixin, BaseEstimator):
    """An oracle propensity softmax(x @ coef.T) over classes 0..A−1; ``fit`` is a no-op."""

    def __init__(self, coef=None):
        self.coef = coef

    def fit(self, X, y):
        self.classes_ = np.arange(len(self.coef))
        return self

    def predict_proba(self, X):
        return softmax(np.asarray(X) @ np.asarray(self.coef).T, axis=1)


def test_pseudo_outcome_of_each_arm_matches_the_hand_formula(data):
    """φ_a = μ_a − μ_0 + 1{T = a}(Y − μ_a)/π_a − 1{T = 0}(Y − μ_0)/π_0 (Kennedy 2023, Eq. 2, per
    arm as in econml's DRLearner), with oracle propensities and one fixed outcome model."""
    X, T, Y, _, propensity, _ = data
    g = np.array([0.5, 0.0, 0.0, 1.0])
    nuisances = RiskNuisances(FixedRegressor(g), FixedMultinomial(GAMMA)).fit(X, T, Y)
    mu = X @ g  # the same fixed model for every arm
    pi = np.clip(propensity, 0.01, 0.99)
    received = T[:, None] == np.arange(3)
    expected = np.column_stack(
        [
            received[:, a] * (Y - mu) / pi[:, a] - received[:, 0] * (Y - mu) / pi[:, 0]
            for a in (1, 2)
        ]
    )
    np.testing.assert_allclose(nuisances.pseudo_outcome(X, T, Y), expected, rtol=1e-12)
    predicted = nuisances.predict(X)
    np.testing.assert_allclose(predicted["m"], (pi * mu[:, None]).sum(axis=1), rtol=1e-12)
    with pytest.raises(ValueError, match="labels \\[7\\] not seen in fit"):
        nuisances.pseudo_outcome(X[:3], [0, 7, 1], Y[:3])


def test_labels_other_than_0_1_2_keep_the_lowest_as_base(data):
    """Arms coded 10/20/30: the same numbers as 0/1/2, contrasts named by the labels."""
    X, T, Y, tau, _, _ = data
    kwargs = dict(risk="tau", n_permutations=5, random_state=0)
    coded = PermuCATE(lambda x: x @ BETA.T, **kwargs).fit(X, 10 * T + 10, Y, tau=tau)
    plain = PermuCATE(lambda x: x @ BETA.T, **kwargs).fit(X, T, Y, tau=tau)
    np.testing.assert_array_equal(coded.importances_folds_, plain.importances_folds_)
    assert list(coded.contrasts_) == ["20 vs 10", "30 vs 10"]


class CausalMLStyle:
    """causalml's multi-treatment convention: control_name, predict -> (n, arms − 1)."""

    def __init__(self, control_name=0):
        self.control_name = control_name

    def fit(self, X, treatment, y):
        return self

    def predict(self, X):
        return np.asarray(X) @ BETA.T


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize(
    ("params", "fit_override", "match"),
    [
        ({"risk": "r"}, {}, '`risk`="r" .* needs two arms'),
        ({"risk": "tau"}, {"tau": np.zeros(3000)}, "`tau` must be 2-D"),
        ({"risk": "tau"}, {"tau": np.zeros((3000, 3))}, "`tau` must have shape \\(n, 2\\)"),
        ({"learner": lambda x: x[:, 0]}, {}, "returned 1 effects per row, but `T` has 3 arms"),
        ({"learner": linear_learner()}, {}, "dr_learner\\(..., n_arms=3\\)"),
        ({"learner": CausalMLStyle(control_name=1)}, {}, "control_name=1"),
    ],
)
def test_multiarm_misuses_are_named(data, params, fit_override, match):
    X, T, Y, *_ = data
    args = {"X": X, "T": T, "Y": Y, "tau": None, **fit_override}
    est = PermuCATE(**{"n_permutations": 2, **params})
    with pytest.raises(ValueError, match=match):
        est.fit(**args)


def test_huge_float_labels_are_refused_not_wrapped(data):
    # trial of issue 32: 1e20 cast to int64 wrapped to -2^63 and silently became the base arm
    X, T, Y, *_ = data
    with pytest.raises(ValueError, match=r"`T` labels must lie within \+-2\^53"):
        PermuCATE(n_permutations=2).fit(X, np.where(T == 2, 1e20, T).astype(float), Y)


def test_causalml_multi_treatment_learner_is_scored_per_arm(data):
    X, T, Y, *_ = data
    est = PermuCATE(
        CausalMLStyle(),
        n_permutations=2,
        outcome_model=LinearRegression(),
        propensity_model=LogisticRegression(),
        random_state=0,
    ).fit(X, T, Y)
    assert est.importances_.shape == (8,)


def test_cli_writes_one_row_per_arm_and_covariate(tmp_path, data):
    X, T, Y, *_ = data
    csv = tmp_path / "arms.csv"
    pd.DataFrame(X[:300], columns=list("abcd")).assign(arm=T[:300], y=Y[:300]).to_csv(csv)
    out = tmp_path / "imp.json"
    cli(["run", str(csv), "--treatment", "arm", "--outcome", "y", "--covariates", *"abcd",
         "--n-permutations", "2", "--cv", "3", "--out", str(out)])  # fmt: skip
    table = pd.read_json(out, orient="records")
    assert list(zip(table.contrast, table.feature, strict=True)) == [
        (c, f) for c in ("1 vs 0", "2 vs 0") for f in "abcd"
    ]
