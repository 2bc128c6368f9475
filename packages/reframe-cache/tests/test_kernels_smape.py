"""The fused Triton SMAPE equals the torch reference (spec §5 test 8), under TRITON_INTERPRET=1
on CPU: odd sizes, zeros, large values."""

import pytest
import torch

pytest.importorskip("triton")
from reframe_cache.kernels.smape_triton import triton_smape
from reframe_cache.metrics import naive_smape

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _case(name):
    g = torch.Generator().manual_seed(0)
    if name == "odd":
        return torch.randn(3, 7, 13, generator=g), torch.randn(3, 7, 13, generator=g)
    if name == "multi-block":
        return torch.rand(2, 3, 25, 41, generator=g), torch.rand(2, 3, 25, 41, generator=g)
    if name == "zeros":
        return torch.zeros(5, 5), torch.zeros(5, 5)
    if name == "one-zero":
        return torch.zeros(1, 1031), torch.rand(1, 1031, generator=g)
    if name == "large":
        return torch.randn(999, generator=g) * 1e30, torch.randn(999, generator=g) * 1e30
    if name == "fp16":
        return torch.rand(3, 9, 9, generator=g).half(), torch.rand(3, 9, 9, generator=g).half()
    raise KeyError(name)


@pytest.mark.parametrize("name", ["odd", "multi-block", "zeros", "one-zero", "large", "fp16"])
def test_triton_smape_matches_naive(name):
    a, b = (t.to(DEVICE) for t in _case(name))
    got, want = triton_smape(a, b), naive_smape(a, b)
    assert got.shape == ()
    assert torch.isfinite(got)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-7)


def test_public_smape_dispatches_to_triton_by_environment(monkeypatch):
    monkeypatch.setenv("REFRAME_SMAPE_BACKEND", "triton")
    from reframe_cache import smape

    a, b = _case("odd")
    torch.testing.assert_close(
        smape(a.to(DEVICE), b.to(DEVICE)), naive_smape(a, b).to(DEVICE), rtol=1e-5, atol=1e-7
    )


def test_nan_propagates_in_both_backends():
    a, b = torch.ones(5, device=DEVICE), torch.ones(5, device=DEVICE)
    a[2] = float("nan")
    assert torch.isnan(triton_smape(a, b))
    assert torch.isnan(naive_smape(a, b))
