"""``FPTLIF``: layout, learnable options, eval modes, stateless API, bad input."""

import pytest
import torch
from fpt_snn import FPTLIF, fpt_lif, lif_sequential


def _inputs(T, N=40, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(T, N, generator=g, dtype=dtype) * 0.8 + 0.6


def test_layer_equals_functional_op():
    x = _inputs(12)
    layer = FPTLIF(T=12, sample="threshold")
    torch.testing.assert_close(layer(x), fpt_lif(x, sample="threshold"), rtol=0, atol=0)


def test_time_dim_1_equals_time_dim_0_transposed():
    # Spec test 8 (first half).
    x = _inputs(10).reshape(10, 4, 10)
    first = FPTLIF(T=10, sample="threshold")(x)
    batch_first = FPTLIF(T=10, sample="threshold", time_dim=1)(x.transpose(0, 1))
    assert torch.equal(batch_first, first.transpose(0, 1))


def test_eval_sample_lif_runs_exact_lif():
    x = _inputs(16)
    layer = FPTLIF(T=16, tau=3.0, eval_sample="lif").eval()
    assert torch.equal(layer(x), lif_sequential(x, tau=3.0))


def test_default_eval_is_stochastic_and_deterministic_modes_repeat():
    # Point 5: the official Bernoulli output is drawn at eval too, so two eval calls differ;
    # "threshold", "none" and "lif" repeat, and each equals its closed form.
    x = _inputs(16, N=500)
    layer = FPTLIF(T=16).eval()
    assert not torch.equal(layer(x), layer(x))  # 8000 draws: equal with probability ~0
    s = fpt_lif(x, sample="none")  # the probabilities s^{K−1}
    for mode, expected in [
        ("threshold", (s >= 0.5).to(x.dtype)),
        ("none", s),
        ("lif", lif_sequential(x)),
    ]:
        layer = FPTLIF(T=16, eval_sample=mode).eval()
        first = layer(x)
        assert torch.equal(first, layer(x)), mode
        torch.testing.assert_close(first, expected, rtol=0, atol=0, msg=mode)


def test_learnable_tau_module_forward_equals_lif_at_tau_and_gets_grad():
    # Spec test 7 (layer form): with K >= T and eval_sample="lif" the learned τ drives the LIF;
    # in training the gradient reaches τ.
    T = 8
    layer = FPTLIF(T=T, tau=2.5, K=T, learnable_tau=True, sample="none")
    assert float(layer.tau.detach()) == pytest.approx(2.5)
    x = _inputs(T, dtype=torch.float64)
    layer.double()
    tau = float(layer.tau.detach())
    exact = fpt_lif(x, tau=tau, K=T, spike_fn="heaviside", sample="none")
    assert torch.equal(exact, lif_sequential(x, tau=tau))
    layer(x).sum().backward()
    assert layer.tau_raw.grad is not None
    assert layer.tau_raw.grad.abs() > 0


def test_learnable_lambda_stays_causal_after_optimizer_steps():
    # Spec test 5 (second half): dense (upper-triangle) gradient noise + Adam steps, still causal.
    T = 7
    layer = FPTLIF(T=T, learnable_lambda=True, sample="none").double()
    opt = torch.optim.Adam(layer.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(0)
    for _ in range(3):
        opt.zero_grad()
        layer(_inputs(T, dtype=torch.float64)).sum().backward()
        layer.weight.grad += torch.randn(T, T, generator=g, dtype=torch.float64)
        opt.step()
    assert torch.count_nonzero(torch.triu(layer.weight.detach(), 1)) > 0  # weights not causal...
    x = _inputs(T, N=1, dtype=torch.float64)[:, 0]
    jac = torch.autograd.functional.jacobian(layer, x)
    assert torch.count_nonzero(torch.triu(jac, 1)) == 0  # ...but the layer is
    assert torch.count_nonzero(torch.tril(jac)) > 0


def test_learnable_lambda_initialises_to_the_lif():
    x = _inputs(9, dtype=torch.float64)
    layer = FPTLIF(T=9, learnable_lambda=True, sample="none").double()
    torch.testing.assert_close(layer(x), fpt_lif(x, sample="none"), rtol=1e-12, atol=1e-12)


def test_learnable_alpha_gets_grad():
    layer = FPTLIF(T=6, learnable_alpha=True, sample="none")
    torch.testing.assert_close(layer.alphas(), torch.tensor([2.0, 6.0, 12.0]))
    layer(_inputs(6)).sum().backward()
    assert layer.log_alpha_scale.grad.abs() > 0


def test_state_dict_holds_only_learnables_and_reset_is_noop():
    from spikingjelly.activation_based import functional

    net = torch.nn.Sequential(torch.nn.Linear(5, 5), FPTLIF(T=4))
    assert set(net.state_dict()) == {"0.weight", "0.bias"}
    functional.reset_net(net)  # spikingjelly's API works on the stateless layer
    learn = FPTLIF(T=4, learnable_tau=True, learnable_alpha=True)
    assert set(learn.state_dict()) == {"tau_raw", "log_alpha_scale"}


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"T": 0}, ValueError, "`T`"),
        ({"T": 4.0}, TypeError, "`T`"),
        ({"tau": 0.5}, ValueError, "`tau`"),
        ({"v_threshold": 0}, ValueError, "`v_threshold`"),
        ({"K": 0}, ValueError, "`K`"),
        ({"K": 10**12}, ValueError, "`K`"),
        ({"alphas": (1.0,)}, ValueError, "`alphas`"),
        ({"sample": "x"}, ValueError, "`sample`"),
        ({"eval_sample": "poisson"}, ValueError, "`eval_sample`"),
        ({"convention": "x"}, ValueError, "`convention`"),
        ({"method": "x"}, ValueError, "`method`"),
        ({"time_dim": 0.5}, TypeError, "`time_dim`"),
        ({"learnable_tau": 1}, TypeError, "`learnable_tau`"),
        ({"learnable_lambda": True, "convention": "snntorch"}, ValueError, "learnable_lambda"),
        ({"learnable_lambda": True, "eval_sample": "lif"}, ValueError, "eval_sample"),
        ({"learnable_lambda": True, "method": "chunked"}, ValueError, "`method`"),
        ({"learnable_lambda": True, "method": "triton"}, ValueError, "`method`"),
        ({"v_threshold": 1e300}, ValueError, "`v_threshold`"),
        ({"tau": 1e300, "learnable_tau": True}, ValueError, "`tau`"),
    ],
)
def test_bad_input_is_rejected_fptlif_init(kwargs, error, match):
    with pytest.raises(error, match=match):
        FPTLIF(**{"T": 4, **kwargs})


@pytest.mark.parametrize(
    ("x", "error", "match"),
    [
        (torch.ones(5, 3), ValueError, "T=4"),
        (torch.ones(4, 3, dtype=torch.int64), TypeError, "`x`"),
        (torch.ones(4, 0), ValueError, "`x`"),
        (torch.full((4, 3), float("nan")), ValueError, "`x`"),
        (torch.tensor(1.0), ValueError, "`x`"),
        ("spikes", TypeError, "`x`"),
    ],
)
def test_bad_input_is_rejected_fptlif_forward(x, error, match):
    with pytest.raises(error, match=match):
        FPTLIF(T=4)(x)


def test_repr_shows_learnable_flags_and_method():
    text = repr(FPTLIF(T=4, learnable_tau=True, learnable_alpha=True, method="dense"))
    assert "learnable_tau=True" in text
    assert "learnable_alpha=True" in text
    assert "method='dense'" in text
    assert "learnable_lambda" not in text
    assert "method" not in repr(FPTLIF(T=4))


def test_large_K_layer_runs():
    layer = FPTLIF(T=4, K=700, sample="threshold")
    assert layer(torch.randn(4, 3)).shape == (4, 3)
