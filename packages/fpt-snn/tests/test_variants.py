"""Reset / input-decay variants and the membrane state, against spikingjelly, snntorch and
closed forms (issue 29, points 1 and 3)."""

import itertools

import pytest
import torch
from fpt_snn import FPTLIF, convergence_report, fpt_lif, lambda_matrix, lif_sequential
from fpt_snn.kernels import resolve_method
from fpt_snn.kernels.fpt_dense import hard_reset_drive

# (reset, v_reset, decay_input) in the spikingjelly convention; v_reset = -0.3 tests the shift.
SJ_VARIANTS = [
    (reset, v_reset, decay)
    for reset, decay in itertools.product(["soft", "hard"], [False, True])
    for v_reset in ([0.0] if reset == "soft" else [0.0, -0.3])
]
SNN_VARIANTS = [("soft", 0.0, False), ("hard", 0.0, False), ("soft", 0.0, True)]
ALL = [("spikingjelly", *v) for v in SJ_VARIANTS] + [("snntorch", *v) for v in SNN_VARIANTS]


def _inputs(T, N=300, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(T, N, generator=g, dtype=torch.float64) * 0.8 + 0.9) * scale


def _sj_node(tau, reset, v_reset, decay):
    from spikingjelly.activation_based import neuron

    return neuron.LIFNode(
        tau=tau, decay_input=decay, v_threshold=1.0,
        v_reset=None if reset == "soft" else v_reset, step_mode="m",
    )  # fmt: skip


def _kw(convention, reset, v_reset, decay):
    return {"convention": convention, "reset": reset, "v_reset": v_reset, "decay_input": decay}


@pytest.mark.parametrize(("reset", "v_reset", "decay"), SJ_VARIANTS)
@pytest.mark.parametrize("tau", [2.0, 3.7])
def test_lif_sequential_equals_spikingjelly_lifnode_each_variant(reset, v_reset, decay, tau):
    # spikingjelly's LIFNode (its default: hard reset to 0, decay_input=True), spikes bitwise
    # and the final membrane node.v; inputs scaled by τ with decay_input so spikes stay common.
    x = _inputs(32, scale=tau if decay else 1.0)
    node = _sj_node(tau, reset, v_reset, decay)
    expected = node(x)
    spikes, v = lif_sequential(
        x, tau=tau, return_state=True, **_kw("spikingjelly", reset, v_reset, decay)
    )
    assert 0.2 < expected.mean() < 0.8
    assert torch.equal(spikes, expected)
    torch.testing.assert_close(v, node.v, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("reset", "mechanism"), [("soft", "subtract"), ("hard", "zero")])
def test_lif_sequential_snntorch_equals_leaky_each_reset_with_initial_mem(reset, mechanism):
    import snntorch

    x, u0 = _inputs(24), _inputs(1, seed=5)[0]
    leaky = snntorch.Leaky(beta=0.5, threshold=1.0, reset_mechanism=mechanism)
    mem, spikes = u0.clone(), []
    for t in range(24):
        spk, mem = leaky(x[t], mem)
        spikes.append(spk)
    ours, u = lif_sequential(
        x, convention="snntorch", reset=reset, v_init=u0, return_state=True
    )  # fmt: skip
    assert torch.equal(ours, torch.stack(spikes))
    torch.testing.assert_close(u, mem, rtol=0, atol=1e-12)


def test_lif_sequential_v_init_equals_spikingjelly_node_v():
    # spikingjelly's state: the post-reset membrane node.v, read at step 1.
    x, v0 = _inputs(20), _inputs(1, seed=7)[0] - 0.9
    for reset, v_reset, decay in SJ_VARIANTS:
        node = _sj_node(2.0, reset, v_reset, decay)
        node.v = v0.clone()
        expected = node(x)
        ours = lif_sequential(x, v_init=v0, **_kw("spikingjelly", reset, v_reset, decay))
        assert torch.equal(ours, expected), (reset, v_reset, decay)


@pytest.mark.parametrize(("reset", "v_reset", "decay"), SJ_VARIANTS)
@pytest.mark.parametrize("T", [1, 6, 25])
def test_heaviside_fpt_K_eq_T_equals_spikingjelly_each_variant(reset, v_reset, decay, T):
    # Point 1: exact spikes at K = T for soft/hard x decay_input, against the peer itself.
    x = _inputs(T, seed=T, scale=2.0 if decay else 1.0)
    expected = _sj_node(2.0, reset, v_reset, decay)(x)
    kw = _kw("spikingjelly", reset, v_reset, decay)
    out = fpt_lif(x, K=T, spike_fn="heaviside", sample="none", **kw)
    assert torch.equal(out, expected)
    assert torch.equal(out, lif_sequential(x, **kw))


@pytest.mark.parametrize(("convention", "reset", "v_reset", "decay"), ALL)
def test_hard_and_soft_fixed_point_first_k_steps_exact(convention, reset, v_reset, decay):
    # The induction of Sec. 4 carried to every variant: after k Heaviside evaluations the
    # spikes at steps t <= k equal the exact LIF (row t of M(s) or A uses s_m, m < t, only).
    T = 16
    x = _inputs(T, N=2000, seed=3, scale=2.0 if decay else 1.0)
    kw = _kw(convention, reset, v_reset, decay)
    exact = lif_sequential(x, **kw)
    for K in range(1, T + 1):
        out = fpt_lif(x, K=K, spike_fn="heaviside", sample="none", **kw)
        assert torch.equal(out[:K], exact[:K]), K
    assert torch.equal(out, exact)


def test_hard_reset_operator_against_brute_force():
    # M(s)[t, j] = λ^{t−j} Π_{m=j}^{t−1}(1 − s_m), written out with loops, soft s in (0, 1).
    T, N, lam = 7, 3, 0.6
    g = torch.Generator().manual_seed(0)
    x = torch.randn(T, N, generator=g, dtype=torch.float64)
    s = torch.rand(T, N, generator=g, dtype=torch.float64)
    h = hard_reset_drive(x, s, lambda_matrix(T, 1 / (1 - lam), dtype=torch.float64))
    for n in range(N):
        for t in range(T):
            total = 0.0
            for j in range(t + 1):
                prod = 1.0
                for m in range(j, t):
                    prod *= 1 - float(s[m, n])
                total += lam ** (t - j) * prod * float(x[j, n])
            assert float(h[t, n]) == pytest.approx(total, rel=1e-12, abs=1e-14)


def test_v_init_is_lambda_power_term_at_K1():
    # C_t = (Λx)_t + λ^t V_0 (t = 1..T, spikingjelly soft: u_1 = λ(V_0 − θ s_0) + x_1, s_0 = 0),
    # and K = 1 Heaviside is H(C − θ): the closed form of the initial-membrane derivation.
    T, lam = 9, 0.5
    x, v0 = _inputs(T), _inputs(1, seed=2)[0]
    powers = lam ** torch.arange(1, T + 1, dtype=torch.float64)[:, None]
    C = lambda_matrix(T, 2.0, dtype=torch.float64) @ x + powers * v0
    out = fpt_lif(x, K=1, spike_fn="heaviside", sample="none", v_init=v0)
    assert torch.equal(out, (C >= 1.0).double())


@pytest.mark.parametrize(("convention", "reset", "v_reset", "decay"), ALL)
def test_chunked_processing_equals_one_pass_at_K_eq_T(convention, reset, v_reset, decay):
    # Point 3: three chunks of 12 steps, each K = 12 Heaviside FPT (and the exact LIF), the
    # final membrane of one chunk as v_init of the next, equal one pass over 36 steps.
    kw = _kw(convention, reset, v_reset, decay)
    x = _inputs(36, seed=11, scale=2.0 if decay else 1.0)
    full, v_full = lif_sequential(x, return_state=True, **kw)
    v_fpt = v_lif = None
    fpt_chunks, lif_chunks = [], []
    for c in range(3):
        part = x[12 * c : 12 * (c + 1)]
        o, v_fpt = fpt_lif(
            part, K=12, spike_fn="heaviside", sample="none", v_init=v_fpt, return_state=True, **kw
        )
        fpt_chunks.append(o)
        o, v_lif = lif_sequential(part, v_init=v_lif, return_state=True, **kw)
        lif_chunks.append(o)
    assert torch.equal(torch.cat(fpt_chunks), full)
    assert torch.equal(torch.cat(lif_chunks), full)
    torch.testing.assert_close(v_fpt, v_full, rtol=0, atol=1e-12)
    torch.testing.assert_close(v_lif, v_full, rtol=0, atol=1e-12)


def test_layer_streams_in_chunks_and_matches_spikingjelly_default_neuron():
    # FPTLIF(reset="hard", decay_input=True) is spikingjelly's default LIFNode; chunked eval
    # with "lif" streams it; the FPT path with v_init equals the functional op with v_init.
    from spikingjelly.activation_based import neuron

    x = _inputs(30, N=200, scale=2.0).float().reshape(30, 10, 20)
    expected = neuron.LIFNode(step_mode="m")(x)  # tau=2, decay_input=True, v_reset=0
    layer = FPTLIF(T=10, reset="hard", decay_input=True, eval_sample="lif").eval()
    v, outs = None, []
    for c in range(3):
        o, v = layer(x[10 * c : 10 * (c + 1)], v_init=v, return_state=True)
        outs.append(o)
    assert torch.equal(torch.cat(outs), expected)
    train = FPTLIF(T=10, reset="hard", decay_input=True, sample="none", time_dim=1)
    xb = x[:10].transpose(0, 1)
    out, state = train(xb, v_init=v, return_state=True)  # v_init: [batch, features]
    ref, ref_state = fpt_lif(
        x[:10], reset="hard", decay_input=True, sample="none", v_init=v, return_state=True
    )
    torch.testing.assert_close(out, ref.transpose(0, 1), rtol=0, atol=0)
    torch.testing.assert_close(state, ref_state, rtol=0, atol=0)


def test_soft_variants_with_state_run_on_chunked_and_triton_like_dense():
    # decay_input and v_init only change the drive, so the chunked (and Triton) kernels keep
    # them; the hard reset is dense-only and "auto" dispatches it there.
    g = torch.Generator().manual_seed(0)
    x, v0 = torch.randn(130, 9, generator=g) + 0.6, torch.randn(9, generator=g)
    for convention in ("spikingjelly", "snntorch"):
        kw = {"sample": "none", "decay_input": True, "v_init": v0, "convention": convention}
        ref = fpt_lif(x, method="dense", **kw)
        torch.testing.assert_close(fpt_lif(x, method="chunked", **kw), ref, rtol=1e-5, atol=1e-5)
    assert resolve_method("auto", 500, on_cuda=True, needs_param_grad=False, hard_reset=True) == (
        "dense"
    )


@pytest.mark.parametrize(("convention", "reset", "v_reset"), [
    ("spikingjelly", "soft", 0.0), ("spikingjelly", "hard", -0.2), ("snntorch", "soft", 0.0),
    ("snntorch", "hard", 0.0),
])  # fmt: skip
def test_gradcheck_variants_in_x_v_init_and_tau(convention, reset, v_reset):
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(6, 3, generator=g, dtype=torch.float64) * 0.8 + 0.6).requires_grad_()
    v0 = torch.randn(3, generator=g, dtype=torch.float64).requires_grad_()
    tau = torch.tensor(2.5, dtype=torch.float64, requires_grad=True)

    def f(a, b, t):
        return fpt_lif(
            a, tau=t, sample="none", surrogate="exact", convention=convention, reset=reset,
            v_reset=v_reset, decay_input=True, v_init=b, return_state=True,
        )  # fmt: skip

    assert torch.autograd.gradcheck(f, (x, v0, tau))


def test_heaviside_hard_reset_gradients_are_finite():
    x = (torch.randn(10, 50, generator=torch.Generator().manual_seed(0)) + 0.6).requires_grad_()
    fpt_lif(x, reset="hard", spike_fn="heaviside", K=10).sum().backward()
    assert torch.isfinite(x.grad).all()
    assert x.grad.abs().sum() > 0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"reset": "zero"}, ValueError, "`reset`"),
        ({"v_reset": 0.5}, ValueError, "`v_reset`"),  # soft reset has no v_reset
        ({"reset": "hard", "v_reset": 1.0}, ValueError, "`v_reset`"),  # >= v_threshold
        ({"reset": "hard", "v_reset": float("nan")}, ValueError, "`v_reset`"),
        ({"reset": "hard", "v_reset": "0"}, TypeError, "`v_reset`"),
        ({"reset": "hard", "v_reset": -0.5, "convention": "snntorch"}, ValueError, "`v_reset`"),
        ({"decay_input": 1}, TypeError, "`decay_input`"),
        ({"return_state": "yes"}, TypeError, "`return_state`"),
        ({"v_init": torch.zeros(4)}, ValueError, "`v_init`"),
        ({"v_init": torch.zeros(3, dtype=torch.int64)}, TypeError, "`v_init`"),
        ({"v_init": [0.0, 0.0, 0.0]}, TypeError, "`v_init`"),
        ({"v_init": torch.tensor([0.0, float("nan"), 0.0])}, ValueError, "`v_init`"),
        ({"v_init": torch.zeros(3, device="meta")}, ValueError, "`v_init`"),
        ({"reset": "hard", "method": "chunked"}, ValueError, "`method`"),
        ({"reset": "hard", "method": "triton"}, ValueError, "`method`"),
    ],
)
def test_bad_variant_and_state_arguments_are_rejected(kwargs, error, match):
    with pytest.raises(error, match=match):
        fpt_lif(torch.ones(4, 3), **kwargs)
    if "method" not in kwargs:
        with pytest.raises(error, match=match):
            lif_sequential(torch.ones(4, 3), **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"reset": "hard", "method": "chunked"}, ValueError, "`method`"),
        ({"reset": "hard", "v_reset": 2.0}, ValueError, "`v_reset`"),
        ({"decay_input": "no"}, TypeError, "`decay_input`"),
        ({"learnable_lambda": True, "reset": "hard"}, ValueError, "learnable_lambda"),
        ({"learnable_lambda": True, "decay_input": True}, ValueError, "learnable_lambda"),
    ],
)
def test_bad_variant_arguments_are_rejected_by_the_layer(kwargs, error, match):
    with pytest.raises(error, match=match):
        FPTLIF(T=4, **kwargs)


def test_bad_state_arguments_are_rejected_by_the_layer_forward():
    x = torch.ones(4, 3)
    with pytest.raises(ValueError, match="`v_init`"):
        FPTLIF(T=4)(x, v_init=torch.zeros(4))
    with pytest.raises(ValueError, match="`v_init`"):
        FPTLIF(T=4, learnable_lambda=True)(x, v_init=torch.zeros(3))
    with pytest.raises(TypeError, match="`return_state`"):
        FPTLIF(T=4)(x, return_state=1)


def test_convergence_report_takes_the_variants():
    # Hard reset with input decay: zero Heaviside mismatch at K = T (the exactness claim).
    report = convergence_report(_inputs(10, scale=2.0), 10, reset="hard", decay_input=True)
    assert report.mismatch[-1] == 0.0
    assert report.first_wrong_step[-1] is None
