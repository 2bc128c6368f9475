"""ESS, log-mean-exp, SNIS and systematic resampling (spec tests 10, 11)."""

import math

import pytest
import torch
from leaps_ctmc import ess, log_mean_exp, snis, systematic_resample


@pytest.mark.parametrize("scale", [1e4, -1e4])
def test_no_nan_for_huge_log_weights(scale):
    log_w = torch.tensor([scale, scale - 1.0, scale - 2.0], dtype=torch.float64)
    w = torch.tensor([1.0, math.exp(-1), math.exp(-2)], dtype=torch.float64)
    assert log_mean_exp(log_w) == pytest.approx(scale + math.log(float(w.mean())), abs=1e-9)
    assert ess(log_w) == pytest.approx(float(w.sum() ** 2 / (3 * (w**2).sum())), rel=1e-12)


def test_single_finite_weight():
    log_w = torch.tensor([-math.inf, 3.0, -math.inf, -math.inf])
    assert ess(log_w) == pytest.approx(0.25)
    assert log_mean_exp(log_w) == pytest.approx(3.0 - math.log(4))
    mean, se = snis(log_w, torch.tensor([5.0, 7.0, 9.0, 1.0]))
    assert float(mean) == 7.0
    assert float(se) == 0.0


def test_all_minus_inf_raises():
    with pytest.raises(ValueError, match="log_w"):
        ess(torch.full((5,), -math.inf))
    with pytest.raises(ValueError, match="log_w"):
        log_mean_exp(torch.full((5,), -math.inf))


def test_equal_weights_give_ess_one_and_plain_mean():
    log_w = torch.full((10,), 2.5)
    values = torch.arange(10.0)
    assert ess(log_w) == pytest.approx(1.0)
    mean, _ = snis(log_w, values)
    assert float(mean) == pytest.approx(4.5)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("M", [7, 100, 1000])
def test_systematic_resampling_counts_and_range_float32(M, seed):
    gen = torch.Generator().manual_seed(seed)
    log_w = (torch.randn(M, generator=gen) * 3).to(torch.float32)
    idx = systematic_resample(log_w, generator=gen)
    assert idx.dtype == torch.int64
    assert idx.shape == (M,)
    assert int(idx.min()) >= 0
    assert int(idx.max()) < M
    counts = torch.bincount(idx, minlength=M).double()
    expected = M * torch.softmax(log_w.double(), 0)
    assert torch.all((counts - expected).abs() <= 1.0 + 1e-9)


def test_systematic_resampling_never_runs_past_the_end():
    # Weights whose float32 cumulative sum stays below 1: the official while-loop overruns.
    log_w = torch.log(torch.full((1000,), 0.999e-3, dtype=torch.float32))
    for seed in range(20):
        idx = systematic_resample(log_w, generator=torch.Generator().manual_seed(seed))
        assert int(idx.max()) < 1000
