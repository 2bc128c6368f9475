"""Issue 33.2: Wilson intervals per cell and the stratified Wilson interval of the mean, checked
against statsmodels' ``proportion_confint(method="wilson")`` (a peer library) and against the
closed forms of the extreme cells; the mean's interval covers the true mean in simulation."""

from math import comb

import numpy as np
import pytest
from laion_c import Results, mean_interval, wilson_interval
from statsmodels.stats.proportion import proportion_confint

CASES = [(0, 1), (0, 9), (1, 9), (4, 9), (9, 9), (3, 4), (13, 27), (27, 27), (500, 1000)]


@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
def test_wilson_equals_statsmodels(confidence):
    correct, total = np.array(CASES).T
    low, high = wilson_interval(correct, total, confidence=confidence)
    ref_low, ref_high = proportion_confint(correct, total, alpha=1 - confidence, method="wilson")
    np.testing.assert_allclose(low, ref_low, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(high, ref_high, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("n", [1, 9, 27, 5000])
def test_wilson_closed_form_at_zero_and_all_correct(n):
    z2 = 1.959963984540054**2  # Phi^-1(0.975)^2
    low, high = wilson_interval(0, n)
    assert float(low) == 0.0
    assert float(high) == pytest.approx(z2 / (n + z2), rel=1e-12)
    low, high = wilson_interval(n, n)
    assert float(low) == pytest.approx(n / (n + z2), rel=1e-12)
    assert float(high) == pytest.approx(1.0, rel=1e-15)


def test_mean_interval_with_equal_cells_is_wilson_of_the_pooled_counts():
    correct = np.array([0, 3, 9, 5, 1, 7])
    low, high = mean_interval(correct, np.full(6, 9))
    ref = proportion_confint(correct.sum(), 54, alpha=0.05, method="wilson")
    np.testing.assert_allclose((low, high), ref, rtol=1e-12)


def test_mean_interval_with_unequal_cells_uses_the_effective_sample_size():
    correct, total = np.array([1, 20, 3]), np.array([9, 27, 10])
    n_eff = 1 / np.sum((1 / 3) ** 2 / total)  # Yan & Su (2010): (sum w_k^2 / n_k)^-1
    mean = np.mean(correct / total)
    ref = proportion_confint(mean * n_eff, n_eff, alpha=0.1, method="wilson")
    np.testing.assert_allclose(mean_interval(correct, total, confidence=0.9), ref, rtol=1e-12)


def test_mean_interval_covers_the_true_mean():
    """30 cells of 5-40 images with accuracies spread over [0, 1] (as in LAION-C): the 95 %
    interval of the mean covers the true mean in >= 93 % of 4000 simulated benchmarks."""
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 1, 30)
    n = rng.integers(5, 41, 30)
    hits = 0
    for _ in range(4000):
        low, high = mean_interval(rng.binomial(n, p), n)
        hits += low <= p.mean() <= high
    assert hits / 4000 >= 0.93


def test_results_carry_the_intervals_into_the_table():
    results = Results.from_counts({("mosaic", 1): (3, 4), ("mosaic", 2): (0, 2)}, confidence=0.9)
    intervals = results.intervals()
    for cell, (c, t) in results.counts.items():
        np.testing.assert_allclose(
            intervals[cell], proportion_confint(c, t, alpha=0.1, method="wilson"), rtol=1e-12
        )
    n_eff = 1 / (0.25 / 4 + 0.25 / 2)
    np.testing.assert_allclose(
        results.mean_interval(),
        proportion_confint(0.375 * n_eff, n_eff, alpha=0.1, method="wilson"),
        rtol=1e-12,
    )
    assert results.level_intervals()[2] == pytest.approx(intervals[("mosaic", 2)])
    low, high = intervals[("mosaic", 1)]
    assert f"| mosaic | 75.0 [{100 * low:.1f}, {100 * high:.1f}] |" in results.to_markdown()
    assert "90 % interval" in results.to_markdown()


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: wilson_interval(3, 2), ValueError, "correct"),
        (lambda: wilson_interval(-1, 2), ValueError, "correct"),
        (lambda: wilson_interval(0, 0), ValueError, "total"),
        (lambda: wilson_interval([1, 2], [3]), ValueError, "shape"),
        (lambda: wilson_interval(float("nan"), 3), ValueError, "correct"),
        (lambda: wilson_interval(1, 3, confidence=1.0), ValueError, "confidence"),
        (lambda: wilson_interval(1, 3, confidence="high"), TypeError, "confidence"),
        (lambda: mean_interval([], []), ValueError, "correct"),
        (lambda: mean_interval([[1]], [[2]]), ValueError, "1-D"),
        (lambda: Results.from_counts({("a", 1): (1, 2)}, confidence=0), ValueError, "confidence"),
        (lambda: Results.from_counts({("a", 1): (1, 2)}).mean_interval([("b", 1)]), ValueError,
         "cells"),
    ],
)  # fmt: skip
def test_intervals_reject_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def simulated_coverage(n, p, reps=2000, seed=0):
    """Share of `reps` binomial draws whose ``mean_interval`` holds the true mean of `p`."""
    rng = np.random.default_rng(seed)
    n, p = np.array(n), np.array(p, dtype=float)
    hits = 0
    for counts in rng.binomial(n, p, size=(reps, len(n))):
        low, high = mean_interval(counts, n)
        hits += low <= p.mean() <= high
    return hits / reps


@pytest.mark.parametrize(
    ("n", "p"),
    [
        ([9] * 30, [0.13] * 30),  # equal sizes, one accuracy
        ([9] * 30, np.linspace(0, 1, 30)),  # equal sizes, spread accuracies: conservative
        ([50] * 6, [0.01, 0.2, 0.5, 0.8, 0.99, 0.3]),
        ([9, 27] * 5, [0.2] * 10),  # unequal sizes, one accuracy: exact variance
        ([9, 27] * 5, [0.5, 0.05] * 5),  # the 9- / 27-trial mix of `laion-c reproduce`
        ([9, 27] * 5, [0.05, 0.5] * 5),
    ],
)
def test_mean_interval_covers_where_the_docs_say_it_does(n, p):
    """Issue 34.4: simulated coverage of the nominal 95 % interval (2000 draws: the binomial
    standard error of a 95 % share is 0.005, so 0.93 is 4 SE below nominal)."""
    assert simulated_coverage(n, p) >= 0.93


def test_mean_interval_under_covers_with_unequal_sizes_and_accuracies_as_documented():
    """The documented counterexamples. n = (3, 300), p = (0.5, 0): the 300-image cell is always
    0, so the exact coverage is the binomial(3, 0.5) mass of the outcomes c whose interval holds
    0.25 (enumerated, no simulation)."""
    intervals = {c: mean_interval([c, 0], [3, 300]) for c in range(4)}
    exact = sum(comb(3, c) / 8 for c, (low, high) in intervals.items() if low <= 0.25 <= high)
    assert exact == pytest.approx(0.75)  # c = 0 and c = 3 (1/8 each) miss the true 0.25
    assert simulated_coverage([3, 300], [0.5, 0.0]) == pytest.approx(0.75, abs=0.03)
    assert simulated_coverage([10, 1000, 1000], [0.5, 0.01, 0.01]) < 0.92
