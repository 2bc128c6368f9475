"""Per-channel τ (PLIF-style) and learnable thresholds (issue 29, point 2), against
spikingjelly's ``ParametricLIFNode`` / ``LIFNode`` run channel by channel, brute-force
recurrences and finite differences."""

import pytest
import torch
from fpt_snn import FPTLIF, fpt_lif, lambda_matrix, lif_sequential
from fpt_snn.kernels import resolve_method

TAUS = [2.0, 3.0, 4.5, 7.0]
THETAS = [1.0, 0.7, 1.3, 0.9]
# (reset, v_reset, decay_input) in the spikingjelly convention
VARIANTS = [("soft", 0.0, False), ("soft", 0.0, True), ("hard", 0.0, True), ("hard", -0.3, False)]


def _inputs(*shape, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype) * 0.8 + 0.9


def _channel_inputs(T, B, decay, seed=0):
    # With decay_input the input is scaled by τ_c so that every channel keeps spiking.
    x = _inputs(T, B, len(TAUS), seed=seed)
    return x * torch.tensor(TAUS, dtype=x.dtype) if decay else x


def _sj_node(kind, tau, theta, reset, v_reset, decay):
    from spikingjelly.activation_based import neuron

    kw = {"decay_input": decay, "v_threshold": theta, "step_mode": "m",
          "v_reset": None if reset == "soft" else v_reset}  # fmt: skip
    if kind == "plif":  # 1/τ = sigmoid(w), w = −ln(τ − 1): PLIF (Fang et al., ICCV 2021)
        return neuron.ParametricLIFNode(init_tau=tau, **kw).double()
    return neuron.LIFNode(tau=tau, **kw)


@pytest.mark.parametrize(("reset", "v_reset", "decay"), VARIANTS)
@pytest.mark.parametrize("kind", ["plif", "lif"])
def test_per_channel_tau_and_threshold_equal_spikingjelly_run_per_channel(
    kind, reset, v_reset, decay
):
    # lif_sequential and Heaviside FPT at K = T (dense; chunked where it runs) with [C] τ and
    # θ equal one spikingjelly neuron per channel, spikes bitwise and the final membrane.
    T, B = 24, 60
    x = _channel_inputs(T, B, decay)
    tau, theta = torch.tensor(TAUS, dtype=x.dtype), torch.tensor(THETAS, dtype=x.dtype)
    kw = {"tau": tau, "v_threshold": theta, "reset": reset, "v_reset": v_reset,
          "decay_input": decay, "return_state": True}  # fmt: skip
    ours, v = lif_sequential(x, **kw)
    fpt = {"dense": fpt_lif(x, K=T, spike_fn="heaviside", sample="none", method="dense", **kw)}
    if reset == "soft":
        fpt["chunked"] = fpt_lif(
            x, K=T, spike_fn="heaviside", sample="none", method="chunked", **kw
        )
    # PLIF stores w = −ln(τ − 1) through a float32 tensor, so its τ differs from ours by
    # ~1e-8 relative: the spikes still agree bitwise, the membranes to 1e-6.
    atol = 1e-6 if kind == "plif" else 1e-12
    for c, (tau_c, theta_c) in enumerate(zip(TAUS, THETAS, strict=True)):
        node = _sj_node(kind, tau_c, theta_c, reset, v_reset, decay)
        expected = node(x[:, :, c]).detach()
        assert 0.1 < float(expected.mean()) < 0.9, c
        assert torch.equal(ours[:, :, c], expected), c
        torch.testing.assert_close(v[:, c], node.v.detach(), rtol=0, atol=atol)
        for method, (spikes, state) in fpt.items():
            assert torch.equal(spikes[:, :, c], expected), (method, c)
            torch.testing.assert_close(state[:, c], node.v.detach(), rtol=0, atol=atol)


def test_fptlif_learnable_per_channel_tau_is_plif_per_channel():
    # FPTLIF's learnable per-channel τ uses PLIF's parametrisation and initialisation: the
    # same τ per channel, and the layer's exact-LIF eval and Heaviside FPT at K = T give
    # ParametricLIFNode's spikes channel by channel (batch-first input, channel_dim=2).
    from spikingjelly.activation_based import neuron

    T, B = 16, 50
    x = _channel_inputs(T, B, decay=True, seed=1)
    layer = FPTLIF(
        T=T, tau=TAUS, learnable_tau=True, reset="hard", decay_input=True, time_dim=1,
        eval_sample="lif",
    ).double().eval()  # fmt: skip
    out = layer(x.transpose(0, 1)).transpose(0, 1)
    fpt = fpt_lif(
        x, tau=layer.tau, K=T, spike_fn="heaviside", sample="none", reset="hard",
        decay_input=True,
    )  # fmt: skip
    for c, tau_c in enumerate(TAUS):
        plif = neuron.ParametricLIFNode(init_tau=tau_c, step_mode="m").double()
        torch.testing.assert_close(
            layer.tau[c], 1.0 / plif.w.sigmoid(), rtol=1e-6, atol=0
        )  # float32 w
        expected = plif(x[:, :, c])
        assert torch.equal(out[:, :, c], expected), c
        assert torch.equal(fpt[:, :, c], expected), c


def test_conv_layout_tau_per_channel_equals_scalar_tau_per_slice():
    # [T, B, C, H, W] with τ, θ of shape [C, 1, 1]: each channel slice is the scalar-τ LIF;
    # the layer's channel_dim=2 reshapes its [C] values the same way (time_dim 0 and 1).
    T, C = 10, 3
    x = _inputs(T, 2, C, 4, 5, seed=2)
    tau = torch.tensor(TAUS[:C], dtype=x.dtype).reshape(C, 1, 1)
    theta = torch.tensor(THETAS[:C], dtype=x.dtype).reshape(C, 1, 1)
    out = fpt_lif(x, tau=tau, v_threshold=theta, K=T, spike_fn="heaviside", sample="none")
    layer = FPTLIF(T=T, tau=TAUS[:C], v_threshold=THETAS[:C], eval_sample="lif").eval()
    first = layer(x)
    batch_first = FPTLIF(
        T=T, tau=TAUS[:C], v_threshold=THETAS[:C], eval_sample="lif", time_dim=1
    ).eval()(x.transpose(0, 1))  # fmt: skip
    for c in range(C):
        expected = lif_sequential(x[:, :, c], tau=TAUS[c], v_threshold=THETAS[c])
        assert torch.equal(out[:, :, c], expected), c
        assert torch.equal(first[:, :, c], expected), c
        assert torch.equal(batch_first.transpose(0, 1)[:, :, c], expected), c


def test_per_group_lambda_matrix_and_K1_against_brute_force():
    # Λ[g, t, j] = λ_g^{t−j} (j <= t), and K = 1 is H(C − θ) with C_t = λ_n C_{t−1} + x_t run
    # as a loop per neuron (Λ per neuron, as a batched product).
    T = 6
    tau = torch.tensor([2.0, 5.0, 1.5], dtype=torch.float64)
    L = lambda_matrix(T, tau, dtype=torch.float64)
    assert L.shape == (3, T, T)
    for g, tau_g in enumerate(tau.tolist()):
        lam = 1 - 1 / tau_g
        for t in range(T):
            for j in range(T):
                assert float(L[g, t, j]) == pytest.approx(lam ** (t - j) if j <= t else 0.0)
    x = _inputs(T, 4, 3, seed=3)
    out = fpt_lif(x, tau=tau, K=1, spike_fn="heaviside", sample="none")
    for b in range(4):
        for n in range(3):
            lam, c_t = 1 - 1 / float(tau[n]), 0.0
            for t in range(T):
                c_t = lam * c_t + float(x[t, b, n])
                assert float(out[t, b, n]) == float(c_t >= 1.0)


def test_per_channel_state_streams_in_chunks():
    # Point 3 with per-channel τ and θ: three chunks at K = 12 equal one pass.
    x = _channel_inputs(36, 20, decay=False, seed=4)
    kw = {"tau": torch.tensor(TAUS, dtype=x.dtype), "v_threshold": torch.tensor(THETAS).double()}
    full = lif_sequential(x, **kw)
    v, outs = None, []
    for c in range(3):
        o, v = fpt_lif(
            x[12 * c : 12 * (c + 1)], K=12, spike_fn="heaviside", sample="none", v_init=v,
            return_state=True, **kw,
        )  # fmt: skip
        outs.append(o)
    assert torch.equal(torch.cat(outs), full)


def test_chunked_equals_dense_with_per_channel_tau_across_blocks():
    # T = 130 spans three 64-step blocks: the per-neuron carries against the dense operator.
    x = _inputs(130, 3, 4, seed=5, dtype=torch.float32)
    kw = {"tau": torch.tensor(TAUS), "v_threshold": torch.tensor(THETAS), "sample": "none"}
    for convention in ("spikingjelly", "snntorch"):
        dense = fpt_lif(x, method="dense", convention=convention, **kw)
        chunked = fpt_lif(x, method="chunked", convention=convention, **kw)
        torch.testing.assert_close(chunked, dense, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("convention", "reset", "v_reset", "method"), [
    ("spikingjelly", "soft", 0.0, "dense"), ("snntorch", "soft", 0.0, "dense"),
    ("spikingjelly", "hard", -0.2, "dense"), ("snntorch", "hard", 0.0, "dense"),
    ("spikingjelly", "soft", 0.0, "chunked"),
])  # fmt: skip
def test_gradcheck_per_channel_tau_and_threshold(convention, reset, v_reset, method):
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(6, 2, 3, generator=g, dtype=torch.float64) * 0.8 + 0.6).requires_grad_()
    tau = torch.tensor([2.0, 3.5, 6.0], dtype=torch.float64, requires_grad=True)
    theta = torch.tensor([1.0, 0.6, 1.4], dtype=torch.float64, requires_grad=True)

    def f(a, t, th):
        return fpt_lif(
            a, tau=t, v_threshold=th, sample="none", surrogate="exact", convention=convention,
            reset=reset, v_reset=v_reset, decay_input=True, method=method, return_state=True,
        )  # fmt: skip

    assert torch.autograd.gradcheck(f, (x, tau, theta))


def test_gradcheck_chunked_per_channel_across_blocks():
    # Gradients through the per-neuron carries of the chunked kernel (T = 70: two blocks).
    x = _inputs(70, 2, seed=6) - 0.3
    tau = torch.tensor([2.5, 4.0], dtype=torch.float64, requires_grad=True)
    theta = torch.tensor([1.1, 0.8], dtype=torch.float64, requires_grad=True)

    def f(t, th):
        return fpt_lif(
            x, tau=t, v_threshold=th, sample="none", surrogate="exact", method="chunked"
        )  # fmt: skip

    assert torch.autograd.gradcheck(f, (tau, theta))


@pytest.mark.parametrize("per_channel", [True, False])
def test_gradcheck_layer_parameters_tau_and_threshold(per_channel):
    # The layer's raw parameters (1/τ = σ(w_τ), θ = softplus(w_θ)), through its forward.
    tau, theta = ([2.0, 3.0, 5.0], [1.0, 0.8, 1.2]) if per_channel else (3.0, 0.9)
    layer = FPTLIF(
        T=5, tau=tau, v_threshold=theta, learnable_tau=True, learnable_threshold=True,
        sample="none", channel_dim=-1,
    ).double()  # fmt: skip
    x = _inputs(5, 2, 3, seed=7) - 0.2
    # The layer's backward slope is the official max(1, α/3); at α = 1 it is α itself, the
    # true derivative of the forward sigmoid, which finite differences check.
    layer.alpha_base.fill_(1.0)

    def f(w_tau, w_theta):
        params = {"tau_raw": w_tau, "threshold_raw": w_theta}
        return torch.func.functional_call(layer, params, (x,))

    assert torch.autograd.gradcheck(
        f,
        (
            layer.tau_raw.detach().clone().requires_grad_(),
            layer.threshold_raw.detach().clone().requires_grad_(),
        ),
    )


def test_learnable_threshold_initialises_trains_and_stays_positive():
    layer = FPTLIF(T=8, v_threshold=[1.0, 0.25], learnable_threshold=True, sample="none",
                   channel_dim=-1)  # fmt: skip
    torch.testing.assert_close(layer.v_threshold, torch.tensor([1.0, 0.25]))
    assert set(layer.state_dict()) == {"threshold_raw"}
    x = _inputs(8, 4, 2, dtype=torch.float32)
    layer(x).sum().backward()
    assert (layer.threshold_raw.grad.abs() > 0).all()
    with torch.no_grad():
        layer.threshold_raw.fill_(-60.0)  # a huge step down: softplus keeps θ > 0
    assert (layer.v_threshold > 0).all()
    assert torch.isfinite(layer(x)).all()
    eval_layer = FPTLIF(T=8, v_threshold=0.8, learnable_threshold=True, eval_sample="lif").eval()
    assert torch.equal(eval_layer(x), lif_sequential(x, v_threshold=0.8))


def test_per_channel_never_dispatches_to_triton():
    for T, expected in [(32, "dense"), (130, "chunked")]:
        got = resolve_method("auto", T, on_cuda=True, needs_param_grad=False, per_neuron=True)
        assert got == expected


def _bad_tau_cases():
    return [
        ({"tau": torch.tensor([2.0, 3.0, 4.0, 5.0])}, ValueError, "`tau`"),  # x: [4, 3]
        ({"tau": torch.full((2, 3), 2.0)}, ValueError, "`tau`"),  # broadcasts over time?
        ({"tau": torch.tensor([2.0, 1.0, 3.0])}, ValueError, "`tau`"),
        ({"tau": torch.tensor([2.0, 0.5, 3.0])}, ValueError, "`tau`"),
        ({"tau": torch.tensor([2.0, float("nan"), 3.0])}, ValueError, "`tau`"),
        ({"tau": torch.tensor([2.0, float("inf"), 3.0])}, ValueError, "`tau`"),
        ({"tau": torch.tensor([2, 3, 4])}, ValueError, "`tau`"),
        ({"tau": torch.ones(0)}, ValueError, "`tau`"),
        ({"tau": torch.full((3,), 2.0, device="meta")}, ValueError, "`tau`"),
        ({"v_threshold": torch.tensor([1.0, 0.0, 1.0])}, ValueError, "`v_threshold`"),
        ({"v_threshold": torch.tensor([1.0, -1.0, 1.0])}, ValueError, "`v_threshold`"),
        ({"v_threshold": torch.tensor([1.0, float("nan"), 1.0])}, ValueError, "`v_threshold`"),
        ({"v_threshold": torch.tensor([1.0, 1.0])}, ValueError, "`v_threshold`"),
        ({"reset": "hard", "v_reset": 0.5, "v_threshold": torch.tensor([1.0, 0.4, 1.0])},
         ValueError, "`v_reset`"),
    ]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "error", "match"), _bad_tau_cases())
def test_bad_per_neuron_arguments_are_rejected(kwargs, error, match):
    with pytest.raises(error, match=match):
        fpt_lif(torch.ones(4, 3), **kwargs)
    with pytest.raises(error, match=match):
        lif_sequential(torch.ones(4, 3), **kwargs)


def test_triton_refuses_per_channel_tau_naming_method():
    with pytest.raises(ValueError, match="`method`"):
        fpt_lif(torch.ones(4, 3), tau=torch.full((3,), 2.0), method="triton")
    with pytest.raises(ValueError, match="`method`"):
        fpt_lif(torch.ones(4, 3), v_threshold=torch.ones(3), method="triton")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"tau": [2.0, 0.5]}, ValueError, "`tau`"),
        ({"tau": [2.0, 1.0]}, ValueError, "`tau`"),
        ({"tau": [2.0, float("nan")]}, ValueError, "`tau`"),
        ({"tau": []}, ValueError, "`tau`"),
        ({"tau": ["2.0"]}, TypeError, "`tau`"),
        ({"tau": "2.0"}, TypeError, "`tau`"),
        ({"tau": torch.full((2, 2), 2.0)}, TypeError, "`tau`"),
        ({"tau": torch.tensor(2.0)}, TypeError, "`tau`"),
        ({"v_threshold": [1.0, 0.0]}, ValueError, "`v_threshold`"),
        ({"v_threshold": [1.0, -0.5]}, ValueError, "`v_threshold`"),
        ({"v_threshold": [1.0, float("inf")]}, ValueError, "`v_threshold`"),
        ({"v_threshold": [1.0, 1e300]}, ValueError, "`v_threshold`"),
        ({"tau": [2.0, 3.0], "v_threshold": [1.0, 1.0, 1.0]}, ValueError, "channels"),
        ({"learnable_threshold": 1}, TypeError, "`learnable_threshold`"),
        ({"channel_dim": 1.5}, TypeError, "`channel_dim`"),
        ({"tau": [2.0, 3.0], "method": "triton"}, ValueError, "`method`"),
        ({"tau": [2.0, 3.0], "learnable_lambda": True}, ValueError, "learnable_lambda"),
        ({"learnable_threshold": True, "learnable_lambda": True}, ValueError,
         "learnable_lambda"),
    ],
)  # fmt: skip
def test_bad_per_channel_arguments_are_rejected_by_the_layer(kwargs, error, match):
    with pytest.raises(error, match=match):
        FPTLIF(T=4, **kwargs)


@pytest.mark.parametrize(
    ("layer_kwargs", "x"),
    [
        ({"channel_dim": 2}, torch.ones(4, 2, 5)),  # 5 channels, the layer has 3
        ({"channel_dim": 0}, torch.ones(4, 2, 3)),  # the time axis
        ({"channel_dim": 3}, torch.ones(4, 2, 3)),  # no such axis
        ({"channel_dim": 1, "time_dim": 1}, torch.ones(2, 4, 3)),
    ],
)
def test_bad_channel_layout_is_rejected_by_the_layer_forward(layer_kwargs, x):
    layer = FPTLIF(T=4, tau=[2.0, 3.0, 4.0], **layer_kwargs)
    with pytest.raises(ValueError, match="`channel_dim`"):
        layer(x)
