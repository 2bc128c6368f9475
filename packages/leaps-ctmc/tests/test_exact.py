"""Exact references against brute-force enumeration (spec test 6); Potts q = 2 = Ising (test 8)."""

import math

import pytest
import torch
from leaps_ctmc import IsingPath, PottsPath
from leaps_ctmc.exact import (
    enumerate_states,
    ising_logz_kaufman,
    potts_logz_transfer,
)


@pytest.mark.parametrize("K", [0.2, 0.4407, 0.7])
@pytest.mark.parametrize(("m", "n"), [(3, 3), (4, 4), (3, 5)])
def test_kaufman_equals_enumeration(m, n, K):
    brute = enumerate_states(IsingPath((m, n), beta=K), 1.0).log_z
    assert ising_logz_kaufman(m, n, K) == pytest.approx(brute, abs=1e-10)
    assert ising_logz_kaufman(n, m, K) == pytest.approx(brute, abs=1e-10)


@pytest.mark.parametrize(
    ("L", "expected"), [(4, 15.5222462867), (8, 60.1430415360), (15, 209.8260701363)]
)
def test_kaufman_published_values_at_critical_coupling(L, expected):
    assert ising_logz_kaufman(L, L, 0.4407) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(("q", "L"), [(3, 3), (2, 4), (4, 3)])
@pytest.mark.parametrize("K", [0.3, 1.001])
def test_potts_transfer_matrix_equals_enumeration(q, L, K):
    brute = enumerate_states(PottsPath(L, q, beta=K), 1.0).log_z
    assert potts_logz_transfer(L, q, K) == pytest.approx(brute, abs=1e-10)


def test_potts_transfer_matrix_reference_value():
    # q = 3, L = 4 at the DISCS coupling 1.0010 (spec section 4).
    assert potts_logz_transfer(4, 3, 1.0010) == pytest.approx(34.0619243892, abs=1e-9)


def test_potts_q2_is_ising_with_twice_beta():
    # delta(s_i, s_j) = (1 + s_i s_j) / 2 with s = 2x - 1: beta_P = 2 beta_I gives equal Delta U
    # and log Z_P = log Z_I + beta_I * J * (number of bonds).
    beta_i = 0.4407
    ising, potts = IsingPath(3, beta_i), PottsPath(3, 2, 2 * beta_i)
    xp = potts.sample_base(20, torch.Generator().manual_seed(0))
    xi = (2 * xp - 1).double()
    t = torch.rand(20, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    d_i = ising.neighbor_delta(xi, t)
    d_p = potts.neighbor_delta(xp, t)
    flipped = d_p.gather(1, (1 - xp)[:, None])[:, 0]
    torch.testing.assert_close(flipped, d_i, atol=1e-12, rtol=0)
    z_i = enumerate_states(ising).log_z
    z_p = enumerate_states(potts).log_z
    assert z_p == pytest.approx(z_i + beta_i * ising.n_bonds, abs=1e-10)


def test_enumeration_refuses_too_many_states():
    with pytest.raises(ValueError, match="2\\^24"):
        enumerate_states(IsingPath(5, 0.4))


def test_enumeration_probabilities_sum_to_one():
    enum = enumerate_states(PottsPath(3, 3, 0.9), 0.5)
    assert float(enum.probs.sum()) == pytest.approx(1.0, abs=1e-12)
    assert enumerate_states(IsingPath(3, 0.4), 0.0).log_z == pytest.approx(9 * math.log(2))
