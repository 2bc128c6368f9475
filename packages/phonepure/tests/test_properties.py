"""Invariants of the library's maths (hypothesis; `ci` profile under CI)."""

import math

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from phonepure import (
    OUVESDE,
    DDPMSchedule,
    PhoneAlignment,
    average_smoothing,
    compress,
    decompress,
    median_smoothing,
    quantize,
)

SETTINGS = settings(deadline=None, max_examples=50)


@SETTINGS
@given(st.integers(1, 200))
def test_schedule_monotone_and_posterior_variance_below_beta(t):
    s = DDPMSchedule()
    assert 0 < s.alpha_bar[t - 1] < 1
    if t > 1:
        assert s.alpha_bar[t - 1] < s.alpha_bar[t - 2]
    assert 0 <= s.beta_tilde[t - 1] <= s.beta[t - 1] + 1e-15


@SETTINGS
@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_ouve_std_increasing(t1, t2):
    sde = OUVESDE()
    lo, hi = sorted((t1, t2))
    assert sde.std(lo) <= sde.std(hi) + 1e-12


@SETTINGS
@given(st.floats(0.0, 1.0))
def test_ouve_mean_interpolates(t):
    sde = OUVESDE()
    x0, y = torch.tensor([1.0]), torch.tensor([-1.0])
    m = float(sde.mean(x0, y, t))
    assert -1.0 - 1e-6 <= m <= 1.0 + 1e-6
    assert math.isclose(m, math.exp(-1.5 * t) - (1 - math.exp(-1.5 * t)), abs_tol=1e-6)


@SETTINGS
@given(st.lists(st.floats(-1, 1), min_size=3, max_size=60))
def test_smoothers_stay_within_signal_range(xs):
    x = torch.tensor(xs, dtype=torch.float64)
    for f in (average_smoothing, median_smoothing):
        out = f(x)
        assert out.shape == x.shape
        assert float(out.min()) >= float(x.min()) - 1e-12
        assert float(out.max()) <= float(x.max()) + 1e-12


@SETTINGS
@given(st.lists(st.floats(-1, 1), min_size=1, max_size=60))
def test_quantize_idempotent_and_bounded_error(xs):
    x = torch.tensor(xs, dtype=torch.float64)
    q = quantize(x)
    torch.testing.assert_close(quantize(q), q)
    assert float((q - x).abs().max()) <= 64 / 32768 + 1e-12


@SETTINGS
@given(st.integers(0, 2**31 - 1))
def test_compress_round_trip(seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(8, 5, dtype=torch.complex128, generator=g)
    torch.testing.assert_close(decompress(compress(X)), X, atol=1e-9, rtol=1e-9)


@SETTINGS
@given(
    st.integers(300, 40000),
    st.lists(
        st.tuples(st.sampled_from(["AH", "T", "sp", "", "sil"]), st.floats(0, 0.3)), max_size=12
    ),
)
def test_alignment_durations_cover_stft(n, pieces):
    t, iv = 0.0, []
    for lab, d in pieces:
        iv.append((lab, t, t + d))
        t += d
    al = PhoneAlignment.from_intervals(iv, n)
    assert al.n_frames == 1 + n // 128
    assert min(al.durations) >= 1
    assert not {"sp", ""} & set(al.phones)
    assert np.all(np.array(al.durations) > 0)
