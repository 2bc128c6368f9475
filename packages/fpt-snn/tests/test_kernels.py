"""dense = chunked = Triton (interpreter on CPU), forward and grads; gradcheck on the reference."""

import pytest
import torch
from fpt_snn import fpt_lif
from fpt_snn.kernels import resolve_method, triton_available

CASES = [1, 7, 64, 130]


def _run(x, method, cot, **kw):
    x = x.detach().clone().requires_grad_()
    out = fpt_lif(x, sample="none", method=method, **kw)
    (out * cot).sum().backward()
    return out.detach(), x.grad


def _case(T, N=37, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, N, generator=g) * 0.8 + 0.6
    cot = torch.randn(T, N, generator=g)
    return x, cot


@pytest.mark.parametrize("surrogate", ["official", "exact"])
@pytest.mark.parametrize("T", CASES, ids=lambda T: f"T{T}-N37")
def test_chunked_matches_dense(T, surrogate):
    x, cot = _case(T)
    for convention in ("spikingjelly", "snntorch"):
        ref = _run(x, "dense", cot, surrogate=surrogate, convention=convention)
        got = _run(x, "chunked", cot, surrogate=surrogate, convention=convention)
        for r, g, name in zip(ref, got, ("out", "grad"), strict=True):
            torch.testing.assert_close(g, r, rtol=1e-5, atol=1e-5, msg=name)


needs_triton = pytest.mark.skipif(
    not triton_available(), reason="Triton needs a GPU or TRITON_INTERPRET=1 (set by conftest)"
)


@needs_triton
@pytest.mark.parametrize("surrogate", ["official", "exact"])
@pytest.mark.parametrize("T", CASES, ids=lambda T: f"T{T}-N37")
def test_triton_matches_dense(T, surrogate):
    x, cot = _case(T)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    ref = _run(x, "dense", cot, surrogate=surrogate)
    got = _run(x.to(device), "triton", cot.to(device), surrogate=surrogate)
    for r, g, name in zip(ref, got, ("out", "grad"), strict=True):
        # PR #660 of spikingjelly: Triton surrogates once gave zero grads; compare each one.
        assert g.abs().sum() > 0 or r.abs().sum() == 0, name
        torch.testing.assert_close(g.cpu(), r, rtol=1e-5, atol=1e-5, msg=name)


@needs_triton
@pytest.mark.parametrize("convention", ["spikingjelly", "snntorch"])
def test_triton_heaviside_and_snntorch_convention_match_dense(convention):
    x, cot = _case(70, N=19, seed=4)
    kw = {"spike_fn": "heaviside", "convention": convention, "K": 4}
    ref = _run(x, "dense", cot, **kw)
    got = _run(x, "triton", cot, **kw)
    assert torch.equal(got[0], ref[0])
    torch.testing.assert_close(got[1], ref[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method", ["dense", "chunked"])
@pytest.mark.parametrize("convention", ["spikingjelly", "snntorch"])
def test_gradcheck_reference_float64(method, convention):
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(6, 3, generator=g, dtype=torch.float64) * 0.8 + 0.6).requires_grad_()

    def f(v):
        return fpt_lif(v, sample="none", surrogate="exact", method=method, convention=convention)

    assert torch.autograd.gradcheck(f, (x,))


def test_chunked_block_boundary_grad_gradcheck():
    # T = 70 crosses the 64-step block: carries must pass gradients exactly.
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(70, 2, generator=g, dtype=torch.float64) * 0.8 + 0.6).requires_grad_()

    def f(v):
        return fpt_lif(v, sample="none", surrogate="exact", method="chunked")

    assert torch.autograd.gradcheck(f, (x,))


def test_auto_method_picks_by_shape(monkeypatch):
    # CPU: "fused" where it applies (the fastest measured path, benchmarks/RESULTS.md), else
    # chunked/dense; off the CPU without Triton: chunked for T > 64, dense below.
    monkeypatch.delenv("ICML25_BACKEND", raising=False)
    cpu = {"on_cuda": False, "needs_param_grad": False}
    for T in (1, 8, 32, 64, 100, 128, 256, 512):
        assert resolve_method("auto", T, **cpu) == "fused", T
    assert resolve_method("auto", 1000, **cpu) == "chunked"  # 64-step blocks do not divide it
    assert resolve_method("auto", 32, on_cuda=False, needs_param_grad=True) == "dense"
    assert resolve_method("auto", 65, on_cuda=False, needs_param_grad=False, per_neuron=True) == (
        "chunked"
    )
    assert resolve_method("auto", 32, **cpu, hard_reset=True) == "dense"
    monkeypatch.setenv("ICML25_BACKEND", "torch")
    assert resolve_method("auto", 32, on_cuda=True, needs_param_grad=False) == "dense"
    assert resolve_method("auto", 65, on_cuda=True, needs_param_grad=False) == "chunked"
    assert resolve_method("dense", 500, **cpu) == "dense"


FUSED_CASES = [1, 7, 32, 64, 128, 130, 256]


@pytest.mark.parametrize("surrogate", ["official", "exact"])
@pytest.mark.parametrize("T", FUSED_CASES, ids=lambda T: f"T{T}-N37")
def test_fused_matches_dense(T, surrogate):
    # The fused CPU kernel (hand-written backward, tiles, block + low-rank operators from
    # T = 64) against the autograd reference, both conventions, forward and input gradient.
    x, cot = _case(T)
    for convention in ("spikingjelly", "snntorch"):
        ref = _run(x, "dense", cot, surrogate=surrogate, convention=convention)
        got = _run(x, "fused", cot, surrogate=surrogate, convention=convention)
        for r, g, name in zip(ref, got, ("out", "grad"), strict=True):
            torch.testing.assert_close(g, r, rtol=1e-5, atol=1e-5, msg=name)


@pytest.mark.parametrize("K", [1, 2, 5])
@pytest.mark.parametrize("T", [9, 64, 128])
def test_fused_tiles_heaviside_and_schedules_match_dense_float64(T, K):
    # Narrow tiles (5 neurons, a partial last tile), Heaviside spikes bitwise, other K and
    # slopes, τ and θ off their defaults, float64: the same spikes and gradients as dense.
    from fpt_snn.kernels.fpt_dense import fpt_dense
    from fpt_snn.kernels.fpt_fused import fpt_fused, operators
    from fpt_snn.lif import lambda_matrix, reset_matrix

    g = torch.Generator().manual_seed(T + K)
    x = (torch.randn(T, 23, generator=g, dtype=torch.float64) * 0.8 + 0.6).requires_grad_()
    cot = torch.randn(T, 23, generator=g, dtype=torch.float64)
    alphas = tuple(1.5 + 2.0 * k for k in range(K))
    for convention, heaviside in (("spikingjelly", True), ("snntorch", True), ("snntorch", False)):
        strict = convention == "snntorch"
        L = lambda_matrix(T, 3.0, dtype=x.dtype)
        R = reset_matrix(T, 3.0, convention, dtype=x.dtype)
        ref = fpt_dense(x, L, R, -1.2, 1.2, alphas, heaviside=heaviside, strict=strict)
        (ref_grad,) = torch.autograd.grad(ref, x, cot)
        ops = operators(T, 3.0, convention, x.dtype, x.device)
        for recompute in (False, True):
            got = fpt_fused(
                x, *ops, 1.2, alphas, heaviside=heaviside, strict=strict, width=5,
                recompute=recompute,
            )  # fmt: skip
            (got_grad,) = torch.autograd.grad(got, x, cot)
            if heaviside:
                assert torch.equal(got, ref)
            torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(got_grad, ref_grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("T", [64, 128, 512])
@pytest.mark.parametrize("convention", ["spikingjelly", "snntorch"])
def test_structured_operators_equal_the_matrices(T, convention):
    # Diagonal blocks + rank-(T/B) factors equal Λ and A (closed forms λ^{t−j}) and their
    # transposes, applied to random vectors, in float64.
    from fpt_snn.kernels.fpt_fused import operators, structured_block
    from fpt_snn.lif import lambda_matrix, reset_matrix

    assert structured_block(T) is not None
    v = torch.randn(T, 11, dtype=torch.float64)
    L, R = operators(T, 2.5, convention, torch.float64, v.device)
    for op, M in ((L, lambda_matrix(T, 2.5, dtype=torch.float64)),
                  (R, reset_matrix(T, 2.5, convention, dtype=torch.float64))):  # fmt: skip
        out = torch.empty_like(v)
        torch.testing.assert_close(op.apply(v, out), M @ v, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(op.t().apply(v, out.clone()), M.T @ v, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(
            op.scaled(3.0).apply(v, out.clone(), v, beta=0.5, alpha=-2.0),
            0.5 * v - 6.0 * (M @ v), rtol=1e-12, atol=1e-12,
        )  # fmt: skip


def test_fused_operators_have_no_subnormals_float32():
    # λ^{t−j} underflows below float32's smallest normal from t − j ≈ 126 (λ = 0.5); the
    # fused kernel's operators hold zeros there (subnormal arithmetic is very slow on x86).
    from fpt_snn.kernels.fpt_fused import operators
    from fpt_snn.lif import lambda_matrix

    L, R = operators(300, 2.0, "spikingjelly", torch.float32, torch.device("cpu"))
    tiny = torch.finfo(torch.float32).tiny
    for M in (L.M, R.M):
        assert not ((M != 0) & (M.abs() < tiny)).any()
    assert float((L.M.double() - lambda_matrix(300, 2.0, dtype=torch.float64)).abs().max()) < tiny


def test_fused_bernoulli_output_equals_dense_with_the_same_generator():
    x = torch.randn(32, 300) * 0.8 + 0.6
    outs = [
        fpt_lif(x, method=m, generator=torch.Generator().manual_seed(5)) for m in ("dense", "fused")
    ]
    assert torch.equal(outs[0], outs[1])


def test_fused_gradcheck_float64():
    g = torch.Generator().manual_seed(2)
    x = (torch.randn(9, 4, generator=g, dtype=torch.float64) * 0.8 + 0.6).requires_grad_()

    def f(v):
        return fpt_lif(v, sample="none", surrogate="exact", method="fused", tau=2.7)

    assert torch.autograd.gradcheck(f, (x,))


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"reset": "hard"}, ValueError, "`method`='fused'"),
        ({"tau": torch.tensor([2.0, 3.0, 4.0])}, ValueError, "`method`='fused'"),
        ({"tau": torch.tensor(2.0, requires_grad=True)}, RuntimeError, "fall back"),
        ({"alphas": torch.tensor([2.0, 6.0, 12.0], requires_grad=True)}, RuntimeError, "fall back"),
    ],
)
def test_fused_refuses_what_it_cannot_run(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        fpt_lif(torch.ones(4, 3), method="fused", **kwargs)


def test_triton_without_backend_raises_naming_fallback(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.delenv("ICML25_BACKEND", raising=False)
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: Triton is available")
    with pytest.raises(RuntimeError, match="fall back to method='chunked'"):
        fpt_lif(torch.ones(4, 3), method="triton")


def test_triton_refuses_learnable_tau(monkeypatch):
    if not triton_available():
        pytest.skip("no Triton here")
    tau = torch.tensor(2.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="fall back"):
        fpt_lif(torch.ones(4, 3), tau=tau, method="triton")
