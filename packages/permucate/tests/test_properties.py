"""Property-based tests of the per-sample risks, the DR pseudo-outcome and the corrected t-test."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from permucate import dr_risk, r_risk, tau_risk
from permucate.inference import corrected_ttest
from permucate.nuisance import dr_pseudo_outcome
from scipy import stats

values = st.floats(-100, 100)
propensities = st.floats(0.01, 0.99)


def vectors(n, elements=values):
    return hnp.arrays(np.float64, n, elements=elements)


@st.composite
def units(draw):
    """n units: (τ̂, y, t, m̂, π̂, μ̂0, μ̂1) as 1-D float64 arrays."""
    n = draw(st.integers(1, 30))
    t = draw(hnp.arrays(np.float64, n, elements=st.sampled_from([0.0, 1.0])))
    return (
        draw(vectors(n)), draw(vectors(n)), t, draw(vectors(n)),
        draw(vectors(n, propensities)), draw(vectors(n)), draw(vectors(n)),
    )  # fmt: skip


@given(units())
def test_risks_are_squares_zero_at_the_target(u):
    """Each per-sample risk is a square (>= 0) and vanishes when τ̂ hits its target: the
    pseudo-outcome for DR (Kennedy 2023, Eq. 2), the residual ratio for R (Nie & Wager 2021,
    Eq. 4), τ itself for the oracle risk."""
    tau_hat, y, t, m_hat, pi_hat, _, _ = u
    assert (dr_risk(tau_hat, y) >= 0).all()
    assert (r_risk(tau_hat, y, t, m_hat, pi_hat) >= 0).all()
    np.testing.assert_array_equal(dr_risk(y, y), 0.0)
    np.testing.assert_array_equal(tau_risk(tau_hat, tau_hat), 0.0)
    exact = (y - m_hat) / (t - pi_hat)  # solves (y − m̂) − (t − π̂) τ = 0
    np.testing.assert_allclose(r_risk(exact, y, t, m_hat, pi_hat), 0.0, atol=1e-12)


def two_arms(mu0, mu1, pi):
    """Per-arm matrices (mu, propensity) of shape (n, 2) from binary-treatment nuisances."""
    return np.column_stack([mu0, mu1]), np.column_stack([1 - pi, pi])


@given(units())
def test_dr_pseudo_outcome_is_the_effect_when_the_outcome_model_is_exact(u):
    """If Y equals the outcome model of its arm, the correction term vanishes and
    φ = μ̂1 − μ̂0 whatever the propensity (double robustness, Kennedy 2023)."""
    _, _, t, _, pi_hat, mu0, mu1 = u
    y = np.where(t == 1, mu1, mu0)
    phi = dr_pseudo_outcome(*two_arms(mu0, mu1, pi_hat), t.astype(int), y)[:, 0]
    np.testing.assert_allclose(phi, mu1 - mu0, rtol=1e-12, atol=1e-12)


@given(units())
def test_dr_pseudo_outcome_averages_to_the_units_effect_over_the_treatment_draw(u):
    """With the true propensity π, averaging φ over T ∈ {0, 1} with weights (1 − π, π), each
    arm seeing its potential outcome, gives y(1) − y(0) exactly, whatever the outcome model
    (the inverse-propensity correction is unbiased; Kennedy 2023, Eq. 2)."""
    _, y1, _, y0, pi, mu0, mu1 = u
    nuisances = two_arms(mu0, mu1, pi)  # any outcome model, right or wrong
    treated = dr_pseudo_outcome(*nuisances, np.ones(len(pi), int), y1)[:, 0]
    control = dr_pseudo_outcome(*nuisances, np.zeros(len(pi), int), y0)[:, 0]
    np.testing.assert_allclose(pi * treated + (1 - pi) * control, y1 - y0, rtol=1e-9, atol=1e-8)


@st.composite
def arms(draw):
    """n units of an A-arm treatment (A in 3..5): potential outcomes y (n, A), outcome model
    μ̂ (n, A), true propensities π (n, A) with rows summing to 1."""
    a, n = draw(st.integers(3, 5)), draw(st.integers(1, 15))
    y, mu = (draw(hnp.arrays(np.float64, (n, a), elements=values)) for _ in range(2))
    weights = draw(hnp.arrays(np.float64, (n, a), elements=st.floats(0.05, 1)))
    return y, mu, weights / weights.sum(axis=1, keepdims=True)


@given(arms())
def test_multiarm_pseudo_outcome_averages_to_each_arms_effect_over_the_treatment_draw(u):
    """With A arms and the true propensities, averaging φ_a over T ~ π (each arm seeing its
    potential outcome) gives y(a) − y(0) for every arm a, whatever the outcome model (the
    multi-arm DR pseudo-outcome is unbiased; Kennedy 2023, Eq. 2, per arm as in econml)."""
    y, mu, pi = u
    n, a = y.shape
    average = sum(pi[:, [t]] * dr_pseudo_outcome(mu, pi, np.full(n, t), y[:, t]) for t in range(a))
    np.testing.assert_allclose(average, y[:, 1:] - y[:, :1], rtol=1e-9, atol=1e-7)


fold_tables = st.tuples(st.integers(1, 5), st.integers(2, 10)).flatmap(
    lambda shape: hnp.arrays(np.float64, shape, elements=st.floats(-10, 10))
)


@given(fold_tables)
def test_corrected_ttest_matches_scipys_t_distribution_and_centres_its_interval(v):
    """p = 1 − F_{K−1}(mean / se) with se² = s² (1/K + 1/(K − 1)) (Nadeau & Bengio 2003), the
    interval is mean ± t_{K−1, 0.975}·se, and p lies in [0, 1]."""
    pvalues, ci, se = corrected_ttest(v)
    k = v.shape[1]
    mean = v.mean(axis=1)
    expected_se = np.sqrt(v.var(axis=1, ddof=1) * (1 / k + 1 / (k - 1)))
    np.testing.assert_allclose(se, expected_se, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ci.mean(axis=1), mean, rtol=1e-9, atol=1e-12)
    half = stats.t.ppf(0.975, k - 1) * expected_se
    np.testing.assert_allclose(ci[:, 1] - ci[:, 0], 2 * half, rtol=1e-9, atol=1e-12)
    assert ((pvalues >= 0) & (pvalues <= 1)).all()
    live = expected_se > 1e-9 * np.maximum(1.0, np.abs(mean))
    expected_p = stats.t.sf(mean[live] / expected_se[live], k - 1)
    np.testing.assert_allclose(pvalues[live], expected_p, rtol=1e-6, atol=1e-12)


@given(fold_tables, st.floats(0.01, 10))
def test_shifting_every_fold_up_never_raises_the_p_value(v, shift):
    """The one-sided test of ψ > 0 is monotone: more importance on every fold gives a smaller
    (or equal) p-value and the same standard error."""
    p_before, _, se_before = corrected_ttest(v)
    p_after, _, se_after = corrected_ttest(v + shift)
    np.testing.assert_allclose(se_after, se_before, rtol=1e-7, atol=1e-9)
    assert (p_after <= p_before + 1e-9).all()
