"""Property tests of the lattice, the posterior, expected attention and chunk sync (hypothesis)."""

import math

import torch
from hypothesis import given
from hypothesis import strategies as st
from monoattn_transducer import (
    alignment_prior,
    chunk_synchronize,
    emission_posterior,
    expected_monotonic_attention,
    rnnt_loss,
)

lattices = st.tuples(
    st.integers(1, 5), st.integers(0, 4), st.integers(2, 5), st.integers(0, 2**31 - 1)
)


def _lattice(T, U, V, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, T, U + 1, V, generator=g, dtype=torch.float64) * 2
    y = torch.randint(1, V, (1, U), generator=g)
    return x, y, torch.tensor([T]), torch.tensor([U])


@given(lattices)
def test_loss_is_positive_and_below_all_zero_bound_shift(args):
    # 0 < -log p(y|x): p is one of several path-sums of probabilities < 1
    x, y, tl, ul = _lattice(*args)
    loss = float(rnnt_loss(x, y, tl, ul, reduction="sum"))
    assert loss > 0
    assert math.isfinite(loss)


@given(lattices, st.floats(-5, 5))
def test_loss_invariant_to_per_cell_logit_shift(args, c):
    # log-softmax over V: adding a constant to every logit of a cell changes nothing
    x, y, tl, ul = _lattice(*args)
    a = rnnt_loss(x, y, tl, ul, reduction="sum")
    b = rnnt_loss(x + c, y, tl, ul, reduction="sum")
    assert abs(float(a - b)) < 1e-9


@given(lattices)
def test_gradient_sums_to_zero_over_vocab(args):
    # d/dlogits of a log-softmax loss sums to 0 over V in every cell
    x, y, tl, ul = _lattice(*args)
    x.requires_grad_()
    (g,) = torch.autograd.grad(rnnt_loss(x, y, tl, ul, reduction="sum"), x)
    assert float(g.sum(-1).abs().max()) < 1e-10


@given(lattices)
def test_posterior_columns_sum_to_one_and_expected_frames_increase(args):
    x, y, tl, ul = _lattice(*args)
    p = emission_posterior(x, y, tl, ul)[0]
    U = int(ul)
    if U:
        assert torch.allclose(p.sum(0), torch.ones(U, dtype=p.dtype), atol=1e-9)
        # monotonic alignment: E[tau_u] is non-decreasing in u
        e = (p * torch.arange(p.shape[0], dtype=p.dtype)[:, None]).sum(0)
        assert bool((e[1:] - e[:-1] >= -1e-9).all())


@given(st.integers(1, 4), st.integers(1, 9), st.integers(0, 2**31 - 1))
def test_expected_attention_rows_sum_to_alignment_mass(R, T, seed):
    g = torch.Generator().manual_seed(seed)
    p = torch.rand(2, R, T, generator=g, dtype=torch.float64)
    e = torch.randn(2, R, T, generator=g, dtype=torch.float64) * 3
    w = expected_monotonic_attention(p, e)
    assert (w >= 0).all()
    assert torch.allclose(w.sum(-1), p.sum(-1), atol=1e-9)


@given(st.integers(1, 30), st.integers(0, 5), st.sampled_from([2, 4, 8]), st.integers(0, 99))
def test_chunk_sync_preserves_mass_on_chunk_final_frames(T_enc, U, cf, seed):
    ds = 2
    g = torch.Generator().manual_seed(seed)
    T_dec = -(-T_enc // ds)
    post = torch.rand(1, T_dec, max(U, 1), generator=g)[:, :, :U]
    out = chunk_synchronize(post, torch.tensor([T_enc]), torch.tensor([U]), chunk_frames=cf,
                            downsample=ds)  # fmt: skip
    assert torch.allclose(out[0, 1:].sum(-1), post[0].sum(0), atol=1e-5)
    ends = {min(k + cf - 1, T_enc - 1) for k in range(0, T_enc, cf)}
    support = set(torch.nonzero(out[0].sum(0)).flatten().tolist())
    assert support <= ends


@given(st.integers(1, 30), st.integers(0, 6), st.sampled_from([1, 3, 4]),
       st.sampled_from(["chunk_diagonal", "diagonal", "uniform"]))  # fmt: skip
def test_priors_are_distributions(T_enc, U, cf, kind):
    p = alignment_prior(kind, torch.tensor([T_enc]), torch.tensor([U]), chunk_frames=cf)
    assert torch.allclose(p[0].sum(-1), torch.ones(U + 1), atol=1e-5)
    assert (p >= 0).all()
