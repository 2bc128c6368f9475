"""Invariants of ReFrame's maths under hypothesis (profiles from icml25_core.testing)."""

import math

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from reframe_cache import Delta, EveryN, ReFrame, UNet, amdahl_bound, sequence_psnr, smape

# zero or a magnitude in [2^-10, 2^10]: no subnormals, whose products underflow to 0 in float32
floats = st.one_of(
    st.just(0.0),
    st.floats(0.0009765625, 1024.0, width=32),
    st.floats(-1024.0, -0.0009765625, width=32),
)
pairs = st.integers(1, 40).flatmap(
    lambda n: st.tuples(
        arrays(np.float32, n, elements=floats), arrays(np.float32, n, elements=floats)
    )
)


@given(pairs, st.floats(0.01, 100))
def test_smape_is_symmetric_bounded_and_scale_invariant(ab, c):
    a, b = (torch.from_numpy(x) for x in ab)
    s = float(smape(a, b))
    assert 0.0 <= s <= 2.0 + 1e-6
    assert s == float(smape(b, a))
    assert math.isclose(float(smape(a * c, b * c)), s, rel_tol=1e-4, abs_tol=1e-6)
    if torch.equal(a, b):
        assert s == 0.0
    else:
        assert s > 0.0


@given(st.integers(1, 12), st.integers(1, 60))
def test_every_n_skip_count_is_t_minus_ceil_t_over_k(k, T):
    p = EveryN(k)
    refresh = [True] + [p.decide(t, None, None) for t in range(1, T)]
    assert T - sum(refresh) == T - math.ceil(T / k)


@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_amdahl_bound_is_at_least_one_and_grows_with_skipping(s1, s2, e):
    lo, hi = sorted((s1, s2))
    assert 1.0 <= amdahl_bound(lo, e) <= amdahl_bound(hi, e)


@given(st.lists(st.floats(1e-8, 1.0), min_size=1, max_size=20))
def test_sequence_psnr_is_at_most_the_mean_per_frame_psnr(mses):
    # Jensen: -log is convex, so 10 log10(1 / mean MSE) <= mean 10 log10(1 / MSE)
    per_frame = sum(10 * math.log10(1 / m) for m in mses) / len(mses)
    assert sequence_psnr(mses) <= per_frame + 1e-9


_NET = UNet(3, 3, widths=(2, 2, 2, 2)).eval()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=10), st.floats(0, 0.5))
def test_delta_wrapper_counts_and_exactness(pattern, tau):
    torch.manual_seed(0)
    bank = torch.rand(4, 1, 3, 8, 8)
    w = ReFrame(_NET, "up1", policy=Delta(tau))
    with torch.inference_mode():
        for _i, idx in enumerate(pattern):
            out = w(bank[idx])
            if w.history[-1]:
                assert torch.equal(out, _NET(bank[idx]))
    assert w.history[0]
    assert w.frames == len(pattern)
    assert w.skipped == len(pattern) - sum(w.history)
    assert 0 <= w.skip_rate < 1
    # a frame equal to the last refresh's frame never refreshes (s = 0 is not > tau)
    last = None
    for idx, refreshed in zip(pattern, w.history, strict=True):
        if last is not None and idx == last:
            assert not refreshed
        if refreshed:
            last = idx
