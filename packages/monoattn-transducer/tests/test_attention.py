"""Expected monotonic attention against brute force (spec test 5)."""

import pytest
import torch
from monoattn_transducer import MonotonicCrossAttention, expected_monotonic_attention


def _rand(N=3, R=4, T=7, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    e = torch.randn(N, R, T, generator=g, dtype=dtype) * 2
    p = torch.rand(N, R, T, generator=g, dtype=dtype)
    return p / p.sum(-1, keepdim=True), e


def _prefix_softmax(e, tau):
    w = torch.zeros_like(e)
    w[: tau + 1] = torch.softmax(e[: tau + 1], 0)
    return w


def test_delta_alignment_gives_prefix_softmax():
    _, e = _rand()
    N, R, T = e.shape
    tau = torch.randint(0, T, (N, R), generator=torch.Generator().manual_seed(1))
    p = torch.nn.functional.one_hot(tau, T).to(e.dtype)
    w = expected_monotonic_attention(p, e, eps=0.0)
    for n in range(N):
        for r in range(R):
            ref = _prefix_softmax(e[n, r], int(tau[n, r]))
            torch.testing.assert_close(w[n, r], ref, atol=1e-12, rtol=1e-12)
    # with the official eps = 1e-6 the difference stays below 1e-5
    w6 = expected_monotonic_attention(p, e)
    torch.testing.assert_close(w6, w, atol=1e-5, rtol=0)


def test_uniform_alignment_is_mean_of_prefix_softmaxes():
    _, e = _rand(seed=2)
    N, R, T = e.shape
    p = torch.full_like(e, 1.0 / T)
    w = expected_monotonic_attention(p, e, eps=0.0)
    for n in range(N):
        for r in range(R):
            ref = sum(_prefix_softmax(e[n, r], t) for t in range(T)) / T
            torch.testing.assert_close(w[n, r], ref, atol=1e-12, rtol=1e-12)


def test_weights_nonnegative_rows_sum_to_alignment_mass():
    p, e = _rand(seed=3, dtype=torch.float32)
    p = p * torch.rand(p.shape[:2])[..., None]  # partial mass per row
    w = expected_monotonic_attention(p, e)
    assert (w >= 0).all()
    torch.testing.assert_close(w.sum(-1), p.sum(-1), atol=1e-5, rtol=0)


def test_key_padding_mask_zeroes_padded_frames():
    p, e = _rand(seed=4)
    mask = torch.zeros(e.shape[0], 1, e.shape[2], dtype=torch.bool)
    mask[:, :, -2:] = True
    w = expected_monotonic_attention(p, e, mask)
    assert (w[..., -2:] == 0).all()
    ref = expected_monotonic_attention(p[..., :-2], e[..., :-2])
    torch.testing.assert_close(w[..., :-2], ref)


def test_gradcheck_fp64():
    p, e = _rand(N=2, R=2, T=5, seed=5)
    p.requires_grad_()
    e.requires_grad_()
    assert torch.autograd.gradcheck(
        lambda a, b: expected_monotonic_attention(a, b, backend="torch"), (p, e)
    )


def test_triton_matches_torch_values_and_grads(triton_ok):
    p, e = _rand(N=3, R=5, T=11, seed=6, dtype=torch.float32)
    mask = torch.zeros(3, 1, 11, dtype=torch.bool)
    mask[1, :, 8:] = True
    outs = []
    for backend in ("torch", "triton"):
        pp = p.clone().requires_grad_()
        ee = e.clone().requires_grad_()
        w = expected_monotonic_attention(pp, ee, mask, backend=backend)
        gw = torch.linspace(-1, 1, w.numel()).view_as(w)
        gp, ge = torch.autograd.grad(w, (pp, ee), gw)
        outs.append((w, gp, ge))
    for a, b in zip(*outs, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_cross_attention_delta_alignment_equals_softmax_on_prefix():
    torch.manual_seed(0)
    layer = MonotonicCrossAttention(8, 2).double()
    q = torch.randn(1, 1, 8, dtype=torch.float64)
    kv = torch.randn(1, 6, 8, dtype=torch.float64)
    align = torch.zeros(1, 1, 6, dtype=torch.float64)
    align[0, 0, 3] = 1.0
    a = layer(q, kv, kv, alignment=align)
    b = layer(q, kv[:, :4], kv[:, :4])
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


@pytest.mark.parametrize("bad", ["nan", "neg", "shape"])
def test_expected_attention_bad_input_raises(bad):
    p, e = _rand()
    if bad == "nan":
        e[0, 0, 0] = float("nan")
        name = "energy"
    elif bad == "neg":
        p[0, 0, 0] = -1
        name = "alignment"
    else:
        e = e[:, :, :-1]
        name = "energy"
    with pytest.raises(ValueError, match=name):
        expected_monotonic_attention(p, e)


def _brute_expected_attention(p, e):
    """E_tau[softmax_{j <= tau}(e)] in float64, one prefix softmax at a time."""
    p, e = p.double(), e.double()
    w = torch.zeros_like(e)
    for t in range(e.shape[-1]):
        w[..., : t + 1] += p[..., t : t + 1] * torch.softmax(e[..., : t + 1], -1)
    return w


@pytest.mark.parametrize("scale", [3.0, 10.0, 20.0])
@pytest.mark.parametrize("eps", [0.0, 1e-6])
def test_triton_stable_for_large_energies(triton_ok, scale, eps):
    # Trial 23 H1: the kernel's suffix sum `total - cumsum + ratio` cancelled in fp32 for
    # energies of magnitude ~10 (weights < 0, row sums 2.04); it is a reverse scan now.
    g = torch.Generator().manual_seed(23)
    N, R, T = 3, 4, 7
    p = torch.rand(N, R, T, generator=g)
    p = p / p.sum(-1, keepdim=True)
    e = torch.randn(N, R, T, generator=g) * scale
    wt = expected_monotonic_attention(p, e, eps=eps, backend="triton")
    wr = expected_monotonic_attention(p, e, eps=eps, backend="torch")
    w64 = expected_monotonic_attention(p.double(), e.double(), eps=eps, backend="torch")
    assert wt.dtype == torch.float32
    assert (wt >= 0).all()
    torch.testing.assert_close(wt.sum(-1), torch.ones(N, R), atol=1e-5, rtol=0)
    torch.testing.assert_close(wt, wr, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(wt.double(), w64, atol=1e-6, rtol=1e-5)
    if eps == 0.0:
        brute = _brute_expected_attention(p, e)
        torch.testing.assert_close(wt.double(), brute, atol=1e-6, rtol=1e-5)


def test_triton_stable_large_energies_delta_alignment_and_mask(triton_ok):
    # delta alignments on every frame (the prefix-softmax case) with padded frames
    g = torch.Generator().manual_seed(5)
    T = 9
    e = torch.randn(2, T, T, generator=g) * 10
    p = torch.eye(T).expand(2, T, T).clone()
    mask = torch.zeros(2, 1, T, dtype=torch.bool)
    mask[1, :, 6:] = True
    wt = expected_monotonic_attention(p, e, mask, eps=0.0, backend="triton")
    ref = _brute_expected_attention(p.masked_fill(mask, 0.0), e.masked_fill(mask, -torch.inf))
    assert (wt >= 0).all()
    torch.testing.assert_close(wt.double(), ref.nan_to_num(0.0), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(wt.sum(-1)[1], (~mask[1, 0]).float().expand(T), atol=1e-5, rtol=0)
