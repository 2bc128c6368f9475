"""``summary(adjust=...)``: multiplicity adjustments, checked against statsmodels."""

import numpy as np
import pytest
from permucate import PermuCATE, datasets
from permucate.inference import adjust_pvalues
from statsmodels.stats.multitest import multipletests


@pytest.fixture(scope="module")
def fitted():
    data = datasets.hines(400, random_state=4)
    tau = data.X.to_numpy() @ np.array([1.0, 2.0, 1.0, 0.0, 0.0, 0.0])
    noisy = tau + np.random.default_rng(0).normal(scale=2.0, size=400)  # a learner with error
    est = PermuCATE(
        lambda x: x @ np.array([1.0, 2.0, 1.0, 0.05, -0.05, 0.02]),
        risk="tau",
        n_permutations=5,
        random_state=0,
    )
    return est.fit(data.X, data.T, data.Y, tau=noisy)


@pytest.mark.parametrize(("adjust", "method"), [("holm", "holm"), ("bh", "fdr_bh")])
def test_adjusted_pvalues_are_statsmodels_multipletests(fitted, adjust, method):
    table = fitted.summary(adjust=adjust)
    reject, corrected, _, _ = multipletests(fitted.pvalues_, alpha=0.05, method=method)
    np.testing.assert_allclose(table.pvalue_adjusted, corrected, rtol=0, atol=0)
    np.testing.assert_array_equal(table.significant, reject)
    np.testing.assert_array_equal(table.pvalue, fitted.pvalues_)  # the raw p-values stay
    assert list(table.columns)[-2:] == ["pvalue_adjusted", "significant"]


def test_no_adjustment_keeps_the_raw_table(fitted):
    table = fitted.summary()
    assert "pvalue_adjusted" not in table
    np.testing.assert_array_equal(table.significant, fitted.pvalues_ < 0.05)


def test_holm_never_rejects_more_than_bh_and_bh_never_more_than_raw():
    p = np.random.default_rng(1).uniform(0, 0.1, size=40)
    holm, bh = adjust_pvalues(p, "holm")[1], adjust_pvalues(p, "bh")[1]
    assert (holm <= bh).all()
    assert (bh <= (p < 0.05)).all()


@pytest.mark.parametrize("adjust", ["bonferroni", "BH", True])
def test_unknown_adjustment_is_refused(fitted, adjust):
    with pytest.raises(ValueError, match="`adjust` must be one of"):
        fitted.summary(adjust=adjust)
