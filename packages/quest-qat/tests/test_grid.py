"""Spec tests 1-2: the Gaussian grid constants against scipy and a Monte-Carlo estimate."""

import math

import numpy as np
import pytest
import torch
from quest_qat import gaussian_mse, grid_levels, optimal_gaussian_scale, quest_quantize
from scipy import integrate
from scipy.optimize import minimize_scalar
from scipy.stats import chi2, norm

PAPER_MSE = (0.3633802, 0.1188461, 0.0374397, 0.0115429, 0.0034952, 0.0010400, 0.0003044,
             0.0000878)  # fmt: skip


def _argmin(bits):
    res = minimize_scalar(
        lambda s: gaussian_mse(bits, s), bounds=(0.3, 5.0), method="bounded",
        options={"xatol": 1e-10},
    )  # fmt: skip
    return res.x, res.fun


@pytest.mark.parametrize("bits", [1, 2, 3, 4, 5])
def test_alpha_is_scipy_argmin_low_bits(bits):
    x, _ = _argmin(bits)
    assert abs(optimal_gaussian_scale(bits) - x) <= 1e-4


@pytest.mark.parametrize("bits", range(1, 9))
def test_mse_within_0p2_percent_of_minimum(bits):
    _, best = _argmin(bits)
    assert gaussian_mse(bits) <= 1.002 * best
    assert gaussian_mse(bits) == pytest.approx(PAPER_MSE[bits - 1], rel=1e-5, abs=5e-8)


def test_alpha1_is_sqrt_2_over_pi():
    assert abs(optimal_gaussian_scale(1) - math.sqrt(2 / math.pi)) <= 1e-12
    assert gaussian_mse(1) == pytest.approx(1 - 2 / math.pi, abs=1e-12)


@pytest.mark.parametrize(
    ("bits", "grid"), [(1, "int"), (2, "int"), (4, "int"), (8, "int"), (4, "fp4")]
)
def test_closed_form_matches_quad(bits, grid):
    levels = grid_levels(bits, grid=grid)
    edges = np.concatenate([[-np.inf], (levels[1:] + levels[:-1]) / 2, [np.inf]])
    total = 0.0
    for i, c in enumerate(levels):
        val, _ = integrate.quad(lambda x, c=c: (x - c) ** 2 * norm.pdf(x), edges[i], edges[i + 1],
                                epsabs=1e-13, epsrel=1e-12)  # fmt: skip
        total += val
    assert gaussian_mse(bits, grid=grid) == pytest.approx(total, abs=1e-9)


def test_fp4_mse_matches_spec():
    assert gaussian_mse(4, grid="fp4") == pytest.approx(0.0126849, abs=5e-7)


def _row_rms_expected_mse(bits, n, n_s=64, n_x=100_001):
    """E[(x_1 - Q(x_1))²] when Q's scale is α_b times the RMS of a row of n iid N(0, 1).

    The row RMS is σ̂ = sqrt((x_1² + S)/n) with S = Σ_{j>1} x_j² ~ χ²(n-1) independent of x_1,
    so the expectation is the double integral over φ(x_1) and the χ² law of S of the mid-rise
    error (QuEST §3; grid as in spec §2). S: midpoints of n_s equal-probability cells of
    χ²(n-1); x_1: a Riemann sum on [-9, 9] (relative change < 2e-4 against 200 x 400001 points).
    """
    alpha, top = optimal_gaussian_scale(bits), 2 ** (bits - 1)
    s = chi2(n - 1).ppf((np.arange(n_s) + 0.5) / n_s)
    x = np.linspace(-9.0, 9.0, n_x)
    weight = norm.pdf(x) * (x[1] - x[0])
    total = 0.0
    for s_j in s:
        step = 2 * alpha * np.sqrt((x**2 + s_j) / n) / (2 * top - 1)
        q = np.clip(np.floor(x / step), -top, top - 1)
        total += ((x - (q + 0.5) * step) ** 2 * weight).sum()
    return total / n_s


@pytest.mark.parametrize("bits", range(1, 9))
def test_empirical_mse_matches_closed_form(bits, gen):
    # Spec test 2 on N(0, 1), 4096 x 1024, no rotation. The closed form assumes σ = 1 known; the
    # quantizer uses each row's RMS, which lowers the expected MSE by 0.09% (b = 1) to 0.89%
    # (b = 8): rows with tail entries get a wider grid. That expectation is computed exactly
    # above and must lie within 1% below the closed form. The sample mean is checked against it
    # within max(1%, 4 standard errors): at b >= 7 the error is dominated by rare clipped
    # entries and the standard error of the mean over 4M entries reaches 0.65% (b = 7) and 1.4%
    # (b = 8), so a fixed 1% would pass or fail on the seed, not on the maths.
    x = torch.randn(4096, 1024, generator=gen)
    xhat, _, _ = quest_quantize(x, bits, rotate=False)
    per_row = (xhat - x).square().mean(dim=1).double()
    mse = per_row.mean().item()
    stderr = per_row.std().item() / math.sqrt(per_row.numel())
    expected = _row_rms_expected_mse(bits, x.shape[1])
    closed = gaussian_mse(bits)
    assert -0.01 < expected / closed - 1 < 0
    assert abs(mse - expected) <= max(0.01 * expected, 4 * stderr)
    if bits <= 4:  # bias <= 0.35% and SE <= 0.18%: the spec's direct 1% check has margin
        assert mse == pytest.approx(closed, rel=0.01)


@pytest.mark.parametrize("bits", range(1, 9))
def test_official_scales_versus_true_argmin(bits):
    """As documented: the official α_b is the Gaussian-MSE argmin to 1e-4 for b <= 5 and sits
    below it at 6-8 bits (3.2780, 3.6111, 3.9222) with a small relative MSE excess."""
    official = optimal_gaussian_scale(bits)
    best = minimize_scalar(
        lambda a: gaussian_mse(bits, a), bounds=(0.3, 6.0), method="bounded",
        options={"xatol": 1e-9},
    ).x  # fmt: skip
    if bits <= 5:
        assert abs(best - official) < 1e-4
    else:
        assert best == pytest.approx({6: 3.2780, 7: 3.6111, 8: 3.9222}[bits], abs=2e-4)
        excess = gaussian_mse(bits, official) / gaussian_mse(bits, best) - 1
        assert 0 <= excess < 2e-3
