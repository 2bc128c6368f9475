"""FPT against the exact LIF (Sec. 4 convergence), closed forms at T = 1, peers at K = 1."""

import math

import pytest
import torch
from fpt_snn import default_alphas, fpt_lif, lambda_matrix, lif_sequential, stateleaky_beta


def _inputs(T, N=300, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(T, N, generator=g, dtype=dtype) * 0.8 + 0.6


@pytest.mark.parametrize("convention", ["spikingjelly", "snntorch"])
@pytest.mark.parametrize("method", ["dense", "chunked"])
def test_heaviside_fpt_with_K_ge_T_equals_lif_bitwise(convention, method):
    # Spec test 1: for every T in 1..64, K = T evaluations reproduce the sequential LIF exactly.
    for T in range(1, 65):
        x = _inputs(T, N=64, seed=T)
        exact = lif_sequential(x, convention=convention)
        for K in (T, T + 1):
            out = fpt_lif(
                x, K=K, spike_fn="heaviside", sample="none", convention=convention, method=method
            )
            assert torch.equal(out, exact), (T, K)


def test_fpt_exact_for_K_ge_T_in_float32_away_from_threshold():
    # float32 inputs: equal wherever the exact membrane is not within rounding of θ.
    T = 24
    x = _inputs(T, N=2000, dtype=torch.float32)
    out = fpt_lif(x, K=T, spike_fn="heaviside", sample="none")
    exact = lif_sequential(x)
    assert (out != exact).float().mean() < 1e-3


@pytest.mark.parametrize("convention", ["spikingjelly", "snntorch"])
def test_after_k_evaluations_first_k_steps_exact_and_mismatch_non_increasing(convention):
    # Spec test 2: 20 000 neurons, T = 16.
    T = 16
    x = _inputs(T, N=20_000, seed=3)
    exact = lif_sequential(x, convention=convention)
    previous = math.inf
    for K in range(1, T + 1):
        out = fpt_lif(x, K=K, spike_fn="heaviside", sample="none", convention=convention)
        assert torch.equal(out[:K], exact[:K]), K
        mismatch = (out != exact).double().mean().item()
        assert mismatch <= previous, K
        previous = mismatch
    assert previous == 0.0


def test_single_step_closed_form_forward_and_grad():
    # Spec test 4: T = 1, o = σ(α_{K−1}(x − θ)); grad α_b σ(α_b h)(1 − σ(α_b h)), α_b = α/3.
    x = torch.linspace(-2, 3, 101, dtype=torch.float64).reshape(1, -1).requires_grad_()
    theta = 1.2
    out = fpt_lif(x, v_threshold=theta, sample="none")
    h = x.detach() - theta
    alpha = default_alphas(3)[-1]
    torch.testing.assert_close(out, torch.sigmoid(alpha * h), rtol=1e-12, atol=1e-12)
    out.sum().backward()
    ab = max(1.0, alpha / 3)
    expected = ab * torch.sigmoid(ab * h) * (1 - torch.sigmoid(ab * h))
    torch.testing.assert_close(x.grad, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sample", ["bernoulli", "threshold"])
def test_straight_through_grads_equal_sample_none_grads(sample):
    x = _inputs(12, N=50).requires_grad_()
    cot = torch.randn(12, 50, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    (fpt_lif(x, sample="none") * cot).sum().backward()
    expected = x.grad.clone()
    x.grad = None
    out = fpt_lif(x, sample=sample, generator=torch.Generator().manual_seed(2))
    assert set(out.unique().tolist()) <= {0.0, 1.0}
    (out * cot).sum().backward()
    torch.testing.assert_close(x.grad, expected, rtol=0, atol=0)


def test_bernoulli_mean_equals_probability():
    # E[o] = s within 4 standard errors over 10^5 draws.
    x = torch.tensor([[0.3, 0.9, 1.0, 1.4]], dtype=torch.float64).expand(100_000, 1, 4)
    x = x.reshape(100_000, 4).T.reshape(1, -1)  # T = 1, 4 · 10^5 neurons
    g = torch.Generator().manual_seed(0)
    draws = fpt_lif(x, sample="bernoulli", generator=g).reshape(4, 100_000)
    p = fpt_lif(x[:, ::100_000], sample="none").reshape(4)
    se = torch.sqrt(p * (1 - p) / 100_000)
    assert torch.all((draws.mean(1) - p).abs() <= 4 * se)


def test_fpt_output_is_causal():
    # Spec test 5: ∂o_t/∂x_t' = 0 for t' > t.
    T = 9
    x = _inputs(T, N=1)[:, 0]
    jac = torch.autograd.functional.jacobian(lambda v: fpt_lif(v, sample="none"), x)
    assert torch.count_nonzero(torch.triu(jac, diagonal=1)) == 0
    assert torch.count_nonzero(torch.tril(jac)) > 0


@pytest.mark.parametrize("T", [1, 5, 16])
def test_K1_equals_spikingjelly_psn_with_lambda_weight(T):
    # Spec test 6: K = 1 is PSN (Fang et al. 2023) with W = Λ, b = −θ.
    from spikingjelly.activation_based import neuron

    theta = 1.0
    x = _inputs(T, N=500)
    psn = neuron.PSN(T).double()
    with torch.no_grad():
        psn.weight.copy_(lambda_matrix(T, 2.0, dtype=torch.float64))
        psn.bias.fill_(-theta)
    out = fpt_lif(x, K=1, spike_fn="heaviside", sample="none", v_threshold=theta)
    assert torch.equal(out, psn(x))


@pytest.mark.parametrize("tau", [2.0, 5.0])
def test_K1_snntorch_equals_stateleaky(tau):
    import snntorch

    T, lam = 20, 1 - 1 / tau
    x = _inputs(T, N=400).float().reshape(T, 20, 20)
    sl = snntorch.StateLeaky(beta=stateleaky_beta(lam), channels=20, threshold=1.0)
    spk, mem = sl(x)
    mem_ours = (lambda_matrix(T, tau) @ x.reshape(T, -1)).reshape(x.shape)
    torch.testing.assert_close(mem, mem_ours, rtol=1e-5, atol=1e-5)
    out = fpt_lif(x, K=1, tau=tau, spike_fn="heaviside", sample="none", convention="snntorch")
    clear = (mem - 1.0).abs() > 1e-4  # away from rounding at the threshold
    assert torch.equal(out[clear], spk[clear])


def test_learnable_tau_forward_equals_lif_at_that_tau_and_gradcheck():
    # Spec test 7 (functional form): τ as a tensor, K >= T, Heaviside: exact LIF at that τ.
    T = 10
    x = _inputs(T, N=200)
    tau = torch.tensor(3.3, dtype=torch.float64, requires_grad=True)
    out = fpt_lif(x, tau=tau, K=T, spike_fn="heaviside", sample="none")
    assert torch.equal(out, lif_sequential(x, tau=3.3))
    xs = _inputs(5, N=3)

    def f(t):
        return fpt_lif(xs, tau=t, sample="none", surrogate="exact", method="dense")

    assert torch.autograd.gradcheck(f, (tau,))

    def g(t):
        return fpt_lif(xs, tau=t, sample="none", surrogate="exact", method="chunked")

    assert torch.autograd.gradcheck(g, (tau,))


def test_learnable_alphas_gradcheck():
    xs = _inputs(5, N=3)
    alphas = torch.tensor([2.0, 6.0, 12.0], dtype=torch.float64, requires_grad=True)

    def f(a):
        return fpt_lif(xs, alphas=a, sample="none", surrogate="exact", method="dense")

    assert torch.autograd.gradcheck(f, (alphas,))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_inputs_run_in_float32(dtype):
    x = _inputs(16, N=100, dtype=torch.float32)
    out = fpt_lif(x.to(dtype), sample="none")
    assert out.dtype == dtype
    ref = fpt_lif(x.to(dtype).float(), sample="none")
    torch.testing.assert_close(out.float(), ref, rtol=0, atol=1e-2)


def test_default_alphas_follow_official_schedule():
    assert default_alphas(3) == (2.0, 6.0, 12.0)  # 2·(1, 3, 6), imagenet_train.py
    assert default_alphas(1) == (2.0,)
    assert default_alphas(5) == (2.0, 6.0, 12.0, 12.0, 12.0)


def test_dense_path_compiles_without_graph_breaks():
    x = _inputs(8, N=10, dtype=torch.float32)

    def f(v):
        return fpt_lif(v, sample="threshold", method="dense")

    compiled = torch.compile(f, fullgraph=True, backend="eager")
    torch.testing.assert_close(compiled(x), f(x))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"x": torch.ones(4, 3, dtype=torch.int32)}, TypeError, "`x`"),
        ({"x": [[1.0]]}, TypeError, "`x`"),
        ({"x": torch.tensor(1.0)}, ValueError, "`x`"),
        ({"x": torch.ones(0, 3)}, ValueError, "`x`"),
        ({"x": torch.tensor([[1.0, float("inf")]])}, ValueError, "`x`"),
        ({"x": torch.tensor([[float("nan")]])}, ValueError, "`x`"),
        ({"K": 0}, ValueError, "`K`"),
        ({"K": 2.5}, TypeError, "`K`"),
        ({"K": 10**12}, ValueError, "`K`"),  # bounded: no K-long slope tuple is built
        ({"alphas": (1.0, 2.0)}, ValueError, "`alphas`"),
        ({"alphas": (1.0, -2.0, 3.0)}, ValueError, "`alphas`"),
        ({"alphas": "abc"}, ValueError, "`alphas`"),
        ({"tau": 1.0}, ValueError, "`tau`"),
        ({"tau": torch.tensor([2.0, 3.0])}, ValueError, "`tau`"),
        ({"v_threshold": -1.0}, ValueError, "`v_threshold`"),
        ({"spike_fn": "relu"}, ValueError, "`spike_fn`"),
        ({"sample": "poisson"}, ValueError, "`sample`"),
        ({"surrogate": "atan"}, ValueError, "`surrogate`"),
        ({"convention": "norse"}, ValueError, "`convention`"),
        ({"method": "cuda"}, ValueError, "`method`"),
        ({"generator": 3}, TypeError, "`generator`"),
        ({"x": torch.ones(4, 3, device="meta")}, ValueError, "`x`"),
        ({"v_threshold": 1e300}, ValueError, "`v_threshold`"),  # overflows float32
        ({"v_threshold": 1e-300}, ValueError, "`v_threshold`"),  # rounds to 0 in float32
    ],
)
def test_bad_input_is_rejected_fpt_lif(kwargs, error, match):
    kwargs = {"x": torch.ones(4, 3), **kwargs}
    with pytest.raises(error, match=match):
        fpt_lif(**kwargs)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: default_alphas(0), ValueError, "`K`"),
        (lambda: default_alphas(True), TypeError, "`K`"),
        (lambda: __import__("fpt_snn").sigmoid_surrogate(0.0), ValueError, "`alpha`"),
        (lambda: __import__("fpt_snn").sigmoid_surrogate("4"), TypeError, "`alpha`"),
        (lambda: __import__("fpt_snn.bench").bench.benchmark(repeats=0), ValueError, "`repeats`"),
        (lambda: __import__("fpt_snn.bench").bench.benchmark(Ts=(0,)), ValueError, "`Ts`"),
    ],
)
def test_bad_input_is_rejected_helpers(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_large_K_runs_and_default_alphas_stay_capped():
    # K >= T is the exact LIF, also for long T; 3.0**k overflowed a float from k = 647 on.
    alphas = default_alphas(1000)
    assert alphas[:3] == (2.0, 6.0, 12.0)
    assert set(alphas[2:]) == {12.0}
    x = torch.randn(5, 4, dtype=torch.float64) + 0.6
    exact = fpt_lif(x, K=700, spike_fn="heaviside", sample="none")
    assert torch.equal(exact, lif_sequential(x))


def test_v_threshold_far_beyond_float32_still_runs_in_float64():
    x = torch.randn(4, 3, dtype=torch.float64)
    assert fpt_lif(x, v_threshold=1e300, sample="threshold").sum() == 0


def test_sigmoid_surrogate_gradient_closed_form():
    from fpt_snn import sigmoid_surrogate

    h = torch.linspace(-1, 1, 9, dtype=torch.float64, requires_grad=True)
    out = sigmoid_surrogate(4.0)(h)
    assert torch.equal(out, (h >= 0).double())
    out.sum().backward()
    sig = torch.sigmoid(4 * h.detach())
    torch.testing.assert_close(h.grad, 4 * sig * (1 - sig), rtol=1e-12, atol=1e-12)
