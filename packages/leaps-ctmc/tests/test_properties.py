"""Property-based tests of the importance-sampling estimators, exact log Z, local equivariance."""

import math

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from leaps_ctmc import (
    IsingPath,
    LocallyEquivariantMLP,
    ess,
    log_mean_exp,
    snis,
    systematic_resample,
)
from leaps_ctmc.exact import enumerate_states, ising_logz_kaufman

log_weights = st.integers(1, 40).flatmap(
    lambda m: hnp.arrays(np.float64, m, elements=st.floats(-30, 30))
)
shifts = st.floats(-1e3, 1e3)


@given(log_weights, shifts)
def test_ess_lies_in_0_1_is_1_for_equal_weights_and_ignores_a_common_shift(log_w, c):
    """ESS = (Σw)² / (M Σw²) ∈ (0, 1] (Cauchy-Schwarz), 1 exactly for equal weights, and
    unchanged by log w -> log w + c (the weights' scale does not matter)."""
    w = torch.from_numpy(log_w)
    value = ess(w)
    assert 0 < value <= 1
    assert math.isclose(ess(w + c), value, rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(ess(torch.full_like(w, c)), 1.0, rel_tol=1e-12)


@given(log_weights, shifts)
def test_log_mean_exp_is_log_of_the_mean_weight_and_shifts_with_c(log_w, c):
    """log_mean_exp(log w) = log((1/M) Σ exp(log w_m)) (checked in extended precision via
    numpy's logaddexp), and adding c to every log-weight adds c."""
    w = torch.from_numpy(log_w)
    expected = float(np.logaddexp.reduce(log_w) - math.log(log_w.size))
    assert math.isclose(log_mean_exp(w), expected, rel_tol=1e-12, abs_tol=1e-9)
    assert math.isclose(log_mean_exp(w + c), expected + c, rel_tol=1e-12, abs_tol=1e-9)


@given(log_weights, st.data())
def test_snis_mean_is_a_convex_combination_invariant_to_weight_scale(log_w, data):
    """The SNIS mean Σ w̄_m h_m lies between min h and max h, equals the softmax-weighted
    average, and a common shift of the log-weights changes nothing (self-normalisation)."""
    h = data.draw(hnp.arrays(np.float64, log_w.size, elements=st.floats(-100, 100)))
    w, values = torch.from_numpy(log_w), torch.from_numpy(h)
    mean, se = snis(w, values)
    wbar = np.exp(log_w - log_w.max())
    wbar /= wbar.sum()
    assert h.min() - 1e-9 <= float(mean) <= h.max() + 1e-9
    assert math.isclose(float(mean), float(wbar @ h), rel_tol=1e-9, abs_tol=1e-9)
    assert float(se) >= 0
    shifted, _ = snis(w + 123.0, values)
    assert math.isclose(float(shifted), float(mean), rel_tol=1e-9, abs_tol=1e-9)


@given(log_weights, st.integers(0, 2**31 - 1))
def test_systematic_resampling_keeps_each_count_within_one_of_its_share(log_w, seed):
    """Systematic resampling draws M indices in [0, M) and index m appears M w̄_m ± 1 times
    (Douc & Cappé 2005)."""
    w = torch.from_numpy(log_w)
    idx = systematic_resample(w, torch.Generator().manual_seed(seed))
    m = log_w.size
    assert idx.shape == (m,)
    assert int(idx.min()) >= 0
    assert int(idx.max()) < m
    counts = np.bincount(idx.numpy(), minlength=m)
    share = m * torch.softmax(w, 0).numpy()
    assert (np.abs(counts - share) <= 1 + 1e-9).all()


@given(st.sampled_from([(3, 3), (3, 4)]), st.floats(0.05, 1.5))
@settings(max_examples=20)
def test_kaufmans_log_z_equals_brute_force_enumeration_on_small_tori(shape, beta):
    """Kaufman's (1949) closed form of the periodic Ising partition function equals the sum
    over all 2^(mn) states of exp(β Σ_<ij> s_i s_j) (``enumerate_states``)."""
    exact = enumerate_states(IsingPath(shape, beta), t=1.0).log_z
    assert math.isclose(ising_logz_kaufman(*shape, beta), exact, rel_tol=1e-10, abs_tol=1e-10)


@given(st.integers(0, 2**31 - 1), st.floats(0.0, 1.0), st.integers(0, 8))
@settings(max_examples=25)
def test_mlp_rate_field_is_locally_equivariant_for_any_state_time_and_site(seed, t, site):
    """Flipping spin i negates the net's output at i: G(flip_i x)_i = -G(x)_i (paper Prop. 5.1),
    the property that makes the rates of the learned CTMC balanced; for any state, time and
    site of a 3 x 3 Ising lattice and any weights."""
    gen = torch.Generator().manual_seed(seed)
    net = LocallyEquivariantMLP(9, 2, hidden=(8, 8)).double()
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.3)
    x = IsingPath(3, 0.4).sample_base(1, gen, dtype=torch.float64)
    flipped = x.clone().reshape(1, -1)
    flipped[0, site] = -flipped[0, site]
    tt = torch.tensor([t], dtype=torch.float64)
    g = net(x, tt).reshape(-1)[site]
    g_flipped = net(flipped.reshape(x.shape), tt).reshape(-1)[site]
    torch.testing.assert_close(g_flipped, -g, rtol=0, atol=1e-12)
