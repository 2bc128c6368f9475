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


def test_auto_method_picks_by_length(monkeypatch):
    monkeypatch.delenv("ICML25_BACKEND", raising=False)
    assert resolve_method("auto", 32, on_cuda=False, needs_param_grad=False) == "dense"
    assert resolve_method("auto", 65, on_cuda=False, needs_param_grad=False) == "chunked"
    assert resolve_method("dense", 500, on_cuda=False, needs_param_grad=False) == "dense"


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
