"""DiffWave's gated activation: the PyTorch reference against numpy/scipy in float64, the fused
Triton kernel against the reference (``TRITON_INTERPRET=1`` on CPU), the dispatch rules and the
bad-input errors (spec section 6: Triton fused gate beside its reference)."""

import numpy as np
import pytest
import torch
from phonepure import DiffWave, gated_activation, gated_activation_reference
from phonepure.gate import gate_backend
from scipy.special import expit

# The Triton interpreter evaluates sigmoid as 1 / (1 + exp(-x)) in numpy: exp overflows to inf
# for x < -88 and the result is the exact 0; only the warning is noise.
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in exp:RuntimeWarning")


def _numpy_gate(z, bias):
    z = z.double().numpy()
    b = bias.double().numpy()
    b = np.broadcast_to(b, z.shape[:2])[:, :, None]
    C = z.shape[1] // 2
    return np.tanh(z[:, :C] + b[:, :C]) * expit(z[:, C:] + b[:, C:])


@pytest.mark.parametrize("shape", [(1, 2, 1), (2, 8, 1000), (3, 64, 1025)])
@pytest.mark.parametrize("per_example", [False, True])
def test_reference_matches_numpy(shape, per_example):
    g = torch.Generator().manual_seed(0)
    z = 4 * torch.randn(shape, generator=g, dtype=torch.float64)
    bias = torch.randn((shape[0], shape[1]) if per_example else (shape[1],), generator=g)
    got = gated_activation_reference(z, bias)
    assert got.shape == (shape[0], shape[1] // 2, shape[2])
    np.testing.assert_allclose(got.numpy(), _numpy_gate(z, bias), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("shape", [(1, 2, 1), (2, 8, 1000), (3, 64, 1025)])
@pytest.mark.parametrize("per_example", [False, True])
def test_triton_matches_reference(shape, per_example):
    pytest.importorskip("triton")
    from phonepure.kernels.gate_triton import triton_gated_activation

    g = torch.Generator().manual_seed(1)
    z = 4 * torch.randn(shape, generator=g)
    bias = torch.randn((shape[0], shape[1]) if per_example else (shape[1],), generator=g)
    got = triton_gated_activation(z, bias.expand(shape[0], shape[1]))
    want = gated_activation_reference(z, bias)
    assert got.shape == want.shape
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=0, atol=1e-6)


def test_saturated_inputs_stay_finite():
    pytest.importorskip("triton")
    from phonepure.kernels.gate_triton import triton_gated_activation

    z = torch.tensor([[[-1e4, 1e4, 0.0], [1e4, -1e4, 0.0]]])
    got = triton_gated_activation(z, torch.zeros(1, 2))
    torch.testing.assert_close(got, torch.tensor([[[-1.0, 0.0, 0.0]]]), rtol=0, atol=1e-7)


def test_dispatch_follows_the_backend_variable(monkeypatch):
    pytest.importorskip("triton")
    z = torch.randn(2, 6, 50)
    monkeypatch.delenv("ICML25_BACKEND", raising=False)
    assert gate_backend(z) == "torch"
    monkeypatch.setenv("ICML25_BACKEND", "triton-interpret")
    assert gate_backend(z) == "triton-interpret"
    calls = []
    import phonepure.kernels.gate_triton as kernel

    real = kernel.triton_gated_activation
    monkeypatch.setattr(kernel, "triton_gated_activation", lambda *a: calls.append(1) or real(*a))
    with torch.no_grad():
        out = gated_activation(z, torch.randn(6))
    assert calls == [1]
    assert out.shape == (2, 3, 50)
    # a gradient is needed: the reference runs and the gradient flows
    zg = z.clone().requires_grad_(True)
    gated_activation(zg).sum().backward()
    assert calls == [1]
    assert zg.grad is not None
    monkeypatch.setenv("ICML25_BACKEND", "cuda-please")
    with pytest.raises(ValueError, match="ICML25_BACKEND"):
        gate_backend(z)


def test_diffwave_with_the_triton_gate_equals_the_torch_path(monkeypatch):
    pytest.importorskip("triton")
    torch.manual_seed(0)
    model = DiffWave(16, 16, 4, 2).eval()
    for p in model.parameters():  # the output conv starts at zero; make the output non-trivial
        torch.nn.init.normal_(p, std=0.3)
    x = torch.randn(2, 1, 300)
    t = torch.tensor([0, 5])
    monkeypatch.delenv("ICML25_BACKEND", raising=False)
    with torch.no_grad():
        want = model(x, t)
    monkeypatch.setenv("ICML25_BACKEND", "triton-interpret")
    with torch.no_grad():
        got = model(x, t)
    assert want.abs().max() > 1e-3
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_block_equals_the_unfused_official_form():
    """tanh·σ of conv(h) with the bias inside the conv (philsyn) = the gate with it outside."""
    torch.manual_seed(0)
    block = DiffWave(8, 8, 1, 1).blocks[0]
    h = torch.randn(2, 8, 40)
    e = torch.randn(2, 512)
    with torch.no_grad():
        hh = h + block.fc_t(e)[:, :, None]
        z = block.dilated_conv_layer(hh)
        out = torch.tanh(z[:, :8]) * torch.sigmoid(z[:, 8:])
        want_res = (hh + block.res_conv(out)) * 0.5**0.5
        got_res, got_skip = block(h, e)
    torch.testing.assert_close(got_res, want_res, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(got_skip, block.skip_conv(out), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    ("z", "bias", "exc", "match"),
    [
        (torch.randn(4, 10), None, ValueError, "`z` must have shape"),
        (torch.randn(1, 3, 10), None, ValueError, "even channel count"),
        (torch.ones(1, 2, 3, dtype=torch.int64), None, TypeError, "`z` must be a floating"),
        (torch.randn(2, 4, 10), torch.randn(3), ValueError, r"`bias` must have shape \(4,\)"),
        (torch.randn(2, 4, 10), torch.randn(3, 4), ValueError, r"or \(2, 4\)"),
    ],
)
def test_bad_input(z, bias, exc, match):
    with pytest.raises(exc, match=match):
        gated_activation(z, bias)
