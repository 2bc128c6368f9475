"""Spec test 8: the Triton kernels against the PyTorch reference (TRITON_INTERPRET=1 on CPU)."""

import os

import pytest
import torch

pytest.importorskip("triton")
if os.environ.get("TRITON_INTERPRET") != "1" and not torch.cuda.is_available():
    pytest.skip("needs TRITON_INTERPRET=1 or a GPU", allow_module_level=True)

from quest_qat import optimal_gaussian_scale, quest_quantize
from quest_qat.kernels.quest import (
    pack_mask,
    quest_bwd_triton,
    quest_fwd_triton,
    quest_pack_triton,
    unpack_mask,
)
from quest_qat.kernels.quest.naive import (
    quest_bwd_naive,
    quest_codes_naive,
    quest_fwd_naive,
)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
SHAPES = [(1, 128), (3, 256), (5, 384), (16, 256)]
DTYPES = [torch.float32, torch.float16] + ([torch.bfloat16] if DEVICE == "cuda" else [])


def _input(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g)
    if shape[0] > 1:
        x[1] = 0.0  # a zero row
    x[0, 5] = 1e4  # a large value
    return x.to(dtype).to(DEVICE)


def _boundary(x, bits):
    """Distance of x_h/Δ (reference, float64) to the nearest integer: a code boundary."""
    xh = x.double()
    xh = (xh.reshape(xh.shape[0], -1, 128) @ _h()).reshape(xh.shape)
    sigma = xh.square().mean(-1, keepdim=True).sqrt()
    step = 2 * (optimal_gaussian_scale(bits) * sigma + 1e-8) / (2**bits - 1)
    v = xh / step
    return (v - v.round()).abs(), xh, step


def _h():
    from quest_qat import hadamard_matrix

    return hadamard_matrix(128, torch.float64, DEVICE)


@pytest.mark.parametrize("bits", [1, 2, 4, 8])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"M{s[0]}-K{s[1]}")
def test_forward_matches_reference(shape, dtype, bits):
    x = _input(shape, dtype, seed=shape[0] * 100 + bits)
    alpha = optimal_gaussian_scale(bits)
    xhat_t, maskbits, step_t = quest_fwd_triton(x, bits, 128, 1.0, None, True, alpha)
    xhat_r, mask_r, step_r = quest_fwd_naive(x, bits)
    dist, _, _ = _boundary(x, bits)
    near = dist < 1e-5
    codes_t = torch.round(xhat_t.double() / step_t.double() - 0.5)
    codes_r, _ = quest_codes_naive(x, bits)
    assert torch.allclose(step_t, step_r.float(), rtol=1e-5, atol=0)
    differ = codes_t != codes_r.double()
    assert not bool((differ & ~near).any()), "codes differ away from a boundary"
    same = ~differ
    assert torch.equal(xhat_t[same], xhat_r.to(dtype)[same]) or torch.allclose(
        xhat_t[same].float(), xhat_r.to(dtype)[same].float(), rtol=1e-5, atol=0
    )
    mask_t = unpack_mask(maskbits, shape[1])
    mask_differ = mask_t != mask_r
    assert not bool((mask_differ & ~near).any()), "trust mask differs away from a boundary"


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"M{s[0]}-K{s[1]}")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_backward_matches_reference(shape, dtype):
    g = torch.Generator().manual_seed(shape[0])
    grad = torch.randn(shape, generator=g).to(dtype).to(DEVICE)
    mask = torch.rand(shape, generator=g).to(DEVICE) > 0.1
    out_t = quest_bwd_triton(grad, pack_mask(mask), 128, True)
    out_r = quest_bwd_naive(grad.float(), mask)
    tol = 1e-6 if dtype == torch.float32 else 1e-2  # fp16 output rounding
    assert (out_t.float() - out_r).abs().max().item() <= tol * max(1.0, out_r.abs().max().item())


@pytest.mark.parametrize("bits", [2, 4])
def test_pack_matches_reference(bits):
    x = _input((5, 384), torch.float32, seed=bits)
    codes_t, step_t, rowsum_t = quest_pack_triton(x, bits, 128, True, optimal_gaussian_scale(bits))
    codes_r, step_r = quest_codes_naive(x, bits)
    dist, _, _ = _boundary(x, bits)
    differ = codes_t != codes_r
    assert not bool((differ & ~(dist < 1e-5)).any())
    assert torch.equal(rowsum_t, codes_t.to(torch.int32).sum(-1))
    assert torch.allclose(step_t, step_r, rtol=1e-5, atol=0)


def test_autograd_through_triton_backend(monkeypatch):
    x = _input((16, 256), torch.float32, seed=7).requires_grad_(True)
    g = torch.randn(16, 256, generator=torch.Generator().manual_seed(3)).to(DEVICE)
    monkeypatch.setenv("ICML25_BACKEND", "triton" if DEVICE == "cuda" else "triton-interpret")
    xhat_t, mask_t, _ = quest_quantize(x, 4)
    (grad_t,) = torch.autograd.grad(xhat_t, x, g)
    monkeypatch.setenv("ICML25_BACKEND", "torch")
    xhat_r, mask_r, _ = quest_quantize(x, 4)
    (grad_r,) = torch.autograd.grad(xhat_r, x, g)
    assert torch.equal(mask_t, mask_r)
    # 1e-6 relative to the largest entry: fp32 sums of 128 products in a different order
    assert (grad_t - grad_r).abs().max().item() <= 1e-6 * max(1.0, grad_r.abs().max().item())


@pytest.mark.parametrize("bits", [1, 4, 8])
def test_forward_is_finite_and_homogeneous_at_the_float32_limit(bits):
    """The kernel's online power-of-two row scale: rows of ~1e37 (whose squares overflow fp32)
    give 2^90 times the result at ~1e10, bit for bit, and the reference's codes; the largest
    float32 values give finite x̂ and Δ."""
    g = torch.Generator().manual_seed(bits)
    x = torch.randn(3, 256, generator=g, dtype=torch.float64).clamp(-4, 4)
    x[1] = 3.0
    alpha = optimal_gaussian_scale(bits)
    x_ref, x_big = (x * 2.0**32).float().to(DEVICE), (x * 2.0**122).float().to(DEVICE)
    xhat_r, bits_r, step_r = quest_fwd_triton(x_ref, bits, 128, 1.0, None, True, alpha)
    xhat_b, bits_b, step_b = quest_fwd_triton(x_big, bits, 128, 1.0, None, True, alpha)
    assert torch.equal(step_b, step_r * 2.0**90)
    assert torch.equal(xhat_b, xhat_r * 2.0**90)
    assert torch.equal(bits_b, bits_r)
    codes_t, _, _ = quest_pack_triton(x_big, bits, 128, True, alpha)
    codes_r, _ = quest_codes_naive(x_big, bits)
    dist, _, _ = _boundary(x_big, bits)  # the σ sums run in another order
    assert not bool(((codes_t != codes_r) & (dist >= 1e-5)).any())
    top = torch.full((2, 128), torch.finfo(torch.float32).max, device=DEVICE)
    top[1, ::2] *= -1
    xhat, _, step = quest_fwd_triton(top, bits, 128, 1.0, None, True, alpha)
    assert bool(torch.isfinite(xhat).all())
    assert bool(torch.isfinite(step).all())
