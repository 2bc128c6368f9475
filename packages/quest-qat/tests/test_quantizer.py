"""Spec tests 4-6 and 11: Hadamard normalisation, trust-mask rates, the estimator, 4:8."""

import numpy as np
import pytest
import torch
from quest_qat import (
    QuESTLinear,
    QuESTQuantizer,
    TrustSTE,
    hadamard_matrix,
    optimal_gaussian_scale,
    quantize_codes,
    quest_quantize,
)
from scipy.stats import norm
from torch import nn


def _rel_mse(x, rotate):
    xhat, _, _ = quest_quantize(x, 4, rotate=rotate)
    ref = x @ torch.block_diag(*[hadamard_matrix(128)] * (x.shape[1] // 128)) if rotate else x
    return ((xhat - ref).square().mean() / ref.square().mean()).item()


def test_ht_normalises_student_t(gen):
    x = torch.distributions.StudentT(3.0).sample((512, 1024))
    assert _rel_mse(x, True) <= 0.0135
    assert _rel_mse(x, False) >= 0.10


def test_ht_normalises_laplace(gen):
    torch.manual_seed(1)
    x = torch.distributions.Laplace(0.0, 1.0).sample((512, 1024))
    assert _rel_mse(x, True) <= 0.0125
    assert _rel_mse(x, False) >= 0.03


@pytest.mark.parametrize(
    ("bits", "rows", "tol"), [(1, 256, 0.03), (2, 256, 0.03), (3, 512, 0.03), (4, 1024, 0.03),
                              (8, 4096, 0.10)],
)  # fmt: skip
def test_mask_rate_on_gaussian_rows(bits, rows, tol, gen):
    x = torch.randn(rows, 4096, generator=gen)
    _, mask, _ = quest_quantize(x, bits, rotate=False)
    alpha = optimal_gaussian_scale(bits)
    expected = 2 * norm.sf(alpha * (1 + 1 / (2**bits - 1)))
    rate = 1 - mask.float().mean().item()
    assert rate == pytest.approx(expected, rel=tol)


@pytest.mark.parametrize("bits", [1, 2, 4, 8])
def test_trust_one_equals_clip_mask(bits, gen):
    x = torch.randn(64, 256, dtype=torch.float64, generator=gen)
    _, trust_mask, _step = quest_quantize(x, bits)
    _, clip_mask, _ = quest_quantize(x, bits, clip_scale=1 + 1 / (2**bits - 1))
    xh = x @ torch.block_diag(*[hadamard_matrix(128, torch.float64)] * 2)
    boundary = (xh.abs() - optimal_gaussian_scale(bits) * (1 + 1 / (2**bits - 1))
                * xh.square().mean(-1, keepdim=True).sqrt()).abs() < 1e-9  # fmt: skip
    assert torch.equal(trust_mask | boundary, clip_mask | boundary)


def test_estimator_gradient_is_masked_rotation(gen):
    x = torch.randn(6, 256, dtype=torch.float64, generator=gen, requires_grad=True)
    g = torch.randn(6, 256, dtype=torch.float64, generator=gen)
    xhat, mask, _ = quest_quantize(x, 2)
    xhat.backward(g)
    dense = torch.block_diag(*[torch.from_numpy(_scipy_h(128))] * 2)
    assert (x.grad - (g * mask) @ dense).abs().max().item() <= 1e-12


def _scipy_h(n):
    import scipy.linalg

    return scipy.linalg.hadamard(n) / np.sqrt(n)


def test_infinite_trust_is_identity_gradient(gen):
    x = torch.randn(5, 128, dtype=torch.float64, generator=gen, requires_grad=True)
    g = torch.randn(5, 128, dtype=torch.float64, generator=gen)
    xhat, mask, _ = quest_quantize(x, 3, trust=float("inf"), half=False)
    assert bool(mask.all())
    xhat.backward(g)
    assert (x.grad - g).abs().max().item() <= 1e-12


def test_half_and_full_layers_match(gen):
    torch.manual_seed(0)
    lin = nn.Linear(256, 64).double()
    half = QuESTLinear.from_linear(lin, QuESTQuantizer(4), QuESTQuantizer(4))
    full = QuESTLinear.from_linear(
        lin, QuESTQuantizer(4, half=False), QuESTQuantizer(4, half=False)
    )
    x = torch.randn(9, 256, dtype=torch.float64, generator=gen, requires_grad=True)
    y_half = half(x)
    (gx_half,) = torch.autograd.grad(y_half.sum(), x)
    y_full = full(x)
    (gx_full,) = torch.autograd.grad(y_full.sum(), x)
    assert (y_half - y_full).abs().max().item() <= 1e-10
    assert (gx_half - gx_full).abs().max().item() <= 1e-10


def test_no_float_rotated_input_is_saved(gen):
    x = torch.randn(16, 256, generator=gen, requires_grad=True)
    saved = []

    def pack(t):
        saved.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        quest_quantize(x, 4)[0].sum().backward()
    assert saved
    assert all(t.dtype in (torch.bool, torch.uint8) for t in saved)


def test_codes_contract_bit_for_bit(gen):
    for dtype in (torch.float32, torch.float64, torch.float16):
        x = torch.randn(7, 384, generator=gen).to(dtype)
        codes, step = quantize_codes(x, 4)
        xhat, _, _ = quest_quantize(x, 4)
        assert codes.dtype == torch.int8
        assert torch.equal(((codes.to(step.dtype) + 0.5) * step).to(dtype), xhat)


def test_empty_batch_gives_empty_output():
    xhat, mask, step = quest_quantize(torch.empty(0, 128), 4)
    assert xhat.shape == (0, 128)
    assert mask.shape == (0, 128)
    assert step.shape == (0, 1)
    assert QuESTQuantizer(4)(torch.empty(2, 0, 128)).shape == (2, 0, 128)


def test_sparse48_keeps_two_largest_pairs(gen):
    w = torch.randn(6, 128, dtype=torch.float64, generator=gen)
    out = QuESTQuantizer(4, sparse48=True)(w).reshape(6, 16, 4, 2)
    dense = QuESTQuantizer(4)(w).reshape(6, 16, 4, 2)
    norms = dense.square().sum(-1)
    for row in range(6):
        for group in range(16):  # brute force over the 4 pairs of each group of 8
            kept = [p for p in range(4) if bool((out[row, group, p] != 0).any())]
            dropped = [p for p in range(4) if p not in kept]
            assert len(kept) == 2  # grid levels are never 0, so a kept pair is non-zero
            for p in kept:
                assert torch.equal(out[row, group, p], dense[row, group, p])
            assert min(norms[row, group, kept]) >= max(norms[row, group, dropped])


def test_trust_ste_returns_mask_and_step(gen):
    spec = dict(bits=4, block=128, trust=1.0, clip_scale=None, rotate=True, half=True,
                grid="int", sparse48=False, alpha=optimal_gaussian_scale(4))  # fmt: skip
    x = torch.randn(3, 128, generator=gen)
    xhat, mask, step = TrustSTE.apply(x, spec, "torch")
    assert xhat.shape == mask.shape == (3, 128)
    assert step.shape == (3, 1)
