"""Spec test 6: SDPA tied row attention = einsum reference; R = 1 is plain MHA; gradcheck."""

import pytest
import torch
import torch.nn.functional as F
from ranknovo.kernels.row_attention import row_attention_einsum, row_attention_sdpa


def _inputs(dtype, b=3, r=4, c=7, h=2, dh=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, r, c, h, dh, generator=g, dtype=dtype) for _ in range(3))
    row_mask = torch.ones(b, r, dtype=torch.bool)
    row_mask[1, 2:] = False  # spectrum 1 has 2 real candidates
    row_mask[2, 1:] = False  # spectrum 2 has 1
    col_mask = torch.ones(b, c, dtype=torch.bool)
    col_mask[0, min(5, c - 1) :] = False
    col_mask[2, 3:] = False
    return q, k, v, row_mask, col_mask


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float64, 1e-10), (torch.float32, 1e-5)])
def test_sdpa_equals_einsum_with_padding(dtype, tol):
    q, k, v, rm, cm = _inputs(dtype)
    a = row_attention_einsum(q, k, v, rm, cm)
    b = row_attention_sdpa(q, k, v, rm, cm)
    real = (rm[:, :, None] & cm[:, None, :])[..., None, None].expand_as(a)
    torch.testing.assert_close(a[real], b[real], atol=tol, rtol=tol)


def test_one_row_is_plain_multihead_attention():
    q, k, v, _, _ = _inputs(torch.float64, b=3, r=1)
    rm = torch.ones(3, 1, dtype=torch.bool)
    cm = torch.ones(3, 7, dtype=torch.bool)
    out = row_attention_sdpa(q, k, v, rm, cm)
    ref = F.scaled_dot_product_attention(
        q[:, 0].transpose(1, 2), k[:, 0].transpose(1, 2), v[:, 0].transpose(1, 2)
    ).transpose(1, 2)
    torch.testing.assert_close(out[:, 0], ref, atol=1e-12, rtol=1e-12)


def test_scale_uses_real_row_count_not_padded_batch():
    q, k, v, rm, cm = _inputs(torch.float64)
    padded = row_attention_einsum(q, k, v, rm, cm)
    # dropping the padded rows of spectrum 1 must not change its output
    solo = row_attention_einsum(q[1:2, :2], k[1:2, :2], v[1:2, :2], rm[1:2, :2], cm[1:2])
    torch.testing.assert_close(padded[1:2, :2], solo, atol=1e-12, rtol=0)


def test_gradcheck_einsum_and_sdpa():
    q, k, v, rm, cm = _inputs(torch.float64, b=3, r=2, c=4, h=1, dh=3)
    for fn in (row_attention_einsum, row_attention_sdpa):
        args = [x.clone().requires_grad_() for x in (q, k, v)]
        assert torch.autograd.gradcheck(lambda a, b_, c, f=fn: f(a, b_, c, rm, cm), args)
