"""Property-based tests of FPT's fixed point against the exact LIF, and of its matrices."""

import numpy as np
import torch
from fpt_snn import decay_from_tau, fpt_lif, lambda_matrix, lif_sequential, reset_matrix
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

taus = st.floats(1.05, 10.0)
conventions = st.sampled_from(["spikingjelly", "snntorch"])


@st.composite
def currents(draw, max_t=12, max_n=4):
    """Input currents x [T, N] float64 in [-1, 3] (thresholds crossed often)."""
    shape = (draw(st.integers(1, max_t)), draw(st.integers(1, max_n)))
    return draw(hnp.arrays(np.float64, shape, elements=st.floats(-1.0, 3.0)))


def lif_membranes(x, tau, theta, convention):
    """The LIF recurrence written out (u before the spike decision), for tie detection."""
    lam = 1.0 - 1.0 / tau
    u_prev, s_prev, out = np.zeros(x.shape[1]), np.zeros(x.shape[1]), []
    for x_t in x:
        if convention == "spikingjelly":
            u = lam * (u_prev - theta * s_prev) + x_t
            s = (u >= theta).astype(float)
        else:
            u = lam * u_prev + x_t - theta * s_prev
            s = (u > theta).astype(float)
        out.append(u)
        u_prev, s_prev = u, s
    return np.array(out)


@given(currents(), taus, st.floats(0.5, 2.0), conventions, st.integers(0, 4))
def test_heaviside_fpt_with_k_at_least_t_is_the_exact_lif(x, tau, theta, convention, extra):
    """With Heaviside spikes and K >= T evaluations the fixed-point iteration has converged to
    the sequential LIF's spikes exactly (paper Sec. 3: the K-th iterate is exact on the first
    K steps), for both reset conventions; more evaluations change nothing."""
    u = lif_membranes(x, tau, theta, convention)
    assume(np.abs(u - theta).min() > 1e-9)  # no membrane within rounding of the threshold
    xt = torch.from_numpy(x)
    exact = lif_sequential(xt, tau=tau, v_threshold=theta, convention=convention)
    spikes = fpt_lif(
        xt, tau=tau, v_threshold=theta, K=x.shape[0] + extra, spike_fn="heaviside",
        sample="threshold", convention=convention, method="dense",
    )  # fmt: skip
    assert torch.equal(spikes, exact)


@given(currents(max_t=80, max_n=3), taus, st.integers(1, 4))
def test_chunked_and_dense_kernels_agree(x, tau, K):
    """The 64-step blocks with carried state compute the same sigmoid iterates as the full
    T x T matmuls (no sampling, so the probabilities themselves are compared)."""
    xt = torch.from_numpy(x)
    kwargs = {"tau": tau, "K": K, "sample": "none"}
    torch.testing.assert_close(
        fpt_lif(xt, method="chunked", **kwargs), fpt_lif(xt, method="dense", **kwargs),
        rtol=1e-9, atol=1e-12,
    )  # fmt: skip


@given(st.integers(1, 20), taus)
def test_lambda_matrix_is_the_leaky_integral_without_reset(T, tau):
    """Λ[t, j] = λ^(t−j) (j <= t): Λx is the recurrence u_t = λ u_{t−1} + x_t from u_0 = 0,
    for any x (checked on the basis vectors, i.e. column by column)."""
    lam = decay_from_tau(tau)
    L = lambda_matrix(T, tau, dtype=torch.float64)
    assert torch.equal(L, torch.tril(L))
    for j in range(T):
        u, column = 0.0, []
        for t in range(T):
            u = lam * u + (1.0 if t == j else 0.0)
            column.append(u)
        np.testing.assert_allclose(L[:, j].numpy(), column, rtol=1e-12, atol=1e-300)


@given(st.integers(1, 20), taus, conventions)
def test_reset_matrix_is_strictly_lower_triangular_and_matches_its_convention(T, tau, convention):
    """A = Λ − I (spikingjelly) or (Λ − I)/λ (snntorch): strictly lower-triangular, so a spike
    lowers only later membranes, by θ λ^(t−j) (or λ^(t−j−1))."""
    lam = decay_from_tau(tau)
    A = reset_matrix(T, tau, convention, dtype=torch.float64)
    L = lambda_matrix(T, tau, dtype=torch.float64)
    expected = L - torch.eye(T, dtype=torch.float64)
    if convention == "snntorch":
        expected = expected / lam
    torch.testing.assert_close(A, expected, rtol=1e-12, atol=0)
    assert torch.equal(A, torch.tril(A, diagonal=-1))


@given(currents(), taus, st.sampled_from(["bernoulli", "threshold"]), st.integers(1, 4))
def test_output_spikes_are_binary_with_the_inputs_shape_and_dtype(x, tau, sample, K):
    """Sampled or thresholded outputs are spikes in {0, 1} of x's shape and dtype."""
    xt = torch.from_numpy(x)
    out = fpt_lif(xt, tau=tau, K=K, sample=sample, generator=torch.Generator().manual_seed(0))
    assert out.shape == xt.shape
    assert out.dtype == xt.dtype
    assert bool(((out == 0) | (out == 1)).all())
