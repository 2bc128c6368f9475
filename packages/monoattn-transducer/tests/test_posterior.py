"""Alignment posterior P(tau_u = t): brute force, autograd, the alpha/beta formula (spec test 4)."""

import pytest
import torch
from brute import brute_force_nll, brute_force_posterior
from monoattn_transducer import emission_posterior, rnnt_lattice

B, T, U, V = 3, 5, 3, 6
T_LEN = torch.tensor([5, 3, 4])
U_LEN = torch.tensor([3, 2, 0])


def _data(seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, T, U + 1, V, generator=g, dtype=dtype)
    y = torch.randint(1, V, (B, U), generator=g)
    return x, y


def _edges(x, y):
    lp = x.log_softmax(-1)
    return lp[..., 0], lp[:, :, :U].gather(3, y[:, None, :, None].expand(B, T, U, 1)).squeeze(3)


@pytest.mark.parametrize("backend", ["torch", "triton"])
def test_posterior_matches_brute_force_and_rows_sum_to_one(backend):
    if backend == "triton":
        pytest.importorskip("triton")
    x, y = _data()
    p = emission_posterior(x, y, T_LEN, U_LEN, backend=backend)
    for b in range(B):
        tb, ub = int(T_LEN[b]), int(U_LEN[b])
        ref = brute_force_posterior(x[b].log_softmax(-1), y[b], tb, ub, 0)
        torch.testing.assert_close(p[b, :tb, :ub], ref, atol=1e-6, rtol=1e-6)
        sums = p[b, :, :ub].sum(0)
        torch.testing.assert_close(sums, torch.ones_like(sums), atol=1e-6, rtol=0)
        # exactly 0 outside the valid region
        assert (p[b, tb:] == 0).all()
        assert (p[b, :, ub:] == 0).all()


def test_posterior_equals_autograd_dlogz_dy():
    # d log Z / d y(t, u-1) by autograd through the brute-force path sum
    x, y = _data(1)
    p = emission_posterior(x, y, T_LEN, U_LEN)
    for b in range(B):
        tb, ub = int(T_LEN[b]), int(U_LEN[b])
        delta = torch.zeros(tb, max(ub, 1), dtype=x.dtype, requires_grad=True)
        lp = x[b, :tb, : ub + 1].log_softmax(-1)
        bump = torch.zeros_like(lp)
        for u in range(ub):
            bump[:, u, int(y[b, u])] = 1.0
        lp = lp + bump * torch.nn.functional.pad(delta[:, :ub], (0, 1))[:, :, None]
        log_z = -brute_force_nll(lp, y[b], tb, ub, 0)
        (g,) = torch.autograd.grad(log_z, delta, allow_unused=True)
        if ub:
            torch.testing.assert_close(p[b, :tb, :ub], g[:, :ub], atol=1e-10, rtol=1e-10)


def test_posterior_equals_alpha_beta_formula():
    x, y = _data(2)
    blank_lp, emit_lp = _edges(x, y)
    lat = rnnt_lattice(blank_lp, emit_lp, T_LEN, U_LEN)
    p = emission_posterior(x, y, T_LEN, U_LEN)
    for b in range(B):
        for t in range(int(T_LEN[b])):
            for u in range(1, int(U_LEN[b]) + 1):
                want = torch.exp(
                    lat.alpha[b, t, u - 1] + emit_lp[b, t, u - 1] + lat.beta[b, t, u] - lat.log_z[b]
                )
                assert abs(float(p[b, t, u - 1] - want)) < 1e-12
        # beta(0, 0) = log Z
        assert abs(float(lat.beta[b, 0, 0] - lat.log_z[b])) < 1e-10


def test_lattice_triton_matches_torch(triton_ok):
    x, y = _data(4)
    blank_lp, emit_lp = _edges(x, y)
    a = rnnt_lattice(blank_lp, emit_lp, T_LEN, U_LEN, backend="torch")
    b = rnnt_lattice(blank_lp, emit_lp, T_LEN, U_LEN, backend="triton")
    for f in ("log_z", "alpha", "beta"):
        torch.testing.assert_close(getattr(a, f), getattr(b, f), atol=1e-10, rtol=1e-10)
