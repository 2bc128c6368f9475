"""The RNN-T loss against brute-force path enumeration, warprnnt-numba and closed forms
(spec section 5, tests 1-3 and 9)."""

import inspect
import math

import pytest
import torch
from brute import brute_force_nll
from monoattn_transducer import RNNTLoss, rnnt_loss

warprnnt = pytest.importorskip("warprnnt_numba")

CASES = [  # (T, U, lengths T_b, lengths U_b, V, blank)
    (4, 3, [4, 2, 3], [3, 3, 1], 5, 0),  # U > T in sample 1, ragged
    (3, 2, [3, 1], [0, 2], 4, 0),  # U = 0 and T = 1
    (1, 4, [1], [4], 6, 0),  # T = 1, U = 4
    (4, 2, [4, 3], [2, 1], 5, 2),  # blank inside the vocabulary
    (3, 3, [3, 2], [3, 2], 5, 4),  # blank = V - 1
]


def _data(T, U, tl, ul, V, blank, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    B = len(tl)
    x = torch.randn(B, T, U + 1, V, generator=g, dtype=dtype).requires_grad_()
    labels = [v for v in range(V) if v != blank]
    y = torch.tensor(labels)[torch.randint(0, V - 1, (B, U), generator=g)]
    return x, y, torch.tensor(tl), torch.tensor(ul)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize(("dtype", "tol"), [(torch.float64, 1e-6), (torch.float32, 1e-4)])
def test_loss_matches_brute_force_and_warprnnt_numba(case, dtype, tol):
    T, U, tl, ul, V, blank = case
    x, y, t_len, u_len = _data(T, U, tl, ul, V, blank, dtype)
    ours = rnnt_loss(x, y, t_len, u_len, blank, reduction="none", backend="torch")
    (g_ours,) = torch.autograd.grad(ours.sum(), x)
    lp = x.double().log_softmax(-1)
    brute = torch.stack([brute_force_nll(lp[b], y[b], tl[b], ul[b], blank) for b in range(len(tl))])
    (g_brute,) = torch.autograd.grad(brute.sum(), x)
    torch.testing.assert_close(ours.double(), brute, atol=tol, rtol=tol)
    torch.testing.assert_close(g_ours.double(), g_brute.to(torch.float64), atol=tol, rtol=tol)
    # warprnnt-numba: int32, T = max length, U+1 = max target length + 1 (spec section 9)
    Tm, Um = max(tl), max(ul)
    xw = x.detach()[:, :Tm, : Um + 1].clone().requires_grad_()
    ref = warprnnt.RNNTLossNumba(blank=blank, reduction="none")(
        xw, y[:, :Um].int().contiguous(), t_len.int(), u_len.int()
    )
    (g_ref,) = torch.autograd.grad(ref.sum(), xw)
    torch.testing.assert_close(ours.detach(), ref.detach().to(ours.dtype), atol=tol, rtol=tol)
    torch.testing.assert_close(g_ours[:, :Tm, : Um + 1], g_ref.to(g_ours.dtype), atol=tol, rtol=tol)


def test_loss_all_zero_logits_closed_form():
    # every path has probability V^-(T+U); there are C(T+U-1, U) of them
    for T, U, V in [(3, 2, 4), (5, 3, 7), (1, 3, 3), (4, 0, 5)]:
        x = torch.zeros(1, T, U + 1, V, dtype=torch.float64)
        y = torch.ones(1, U, dtype=torch.int64)
        got = rnnt_loss(x, y, torch.tensor([T]), torch.tensor([U]), reduction="sum")
        want = (T + U) * math.log(V) - math.log(math.comb(T + U - 1, U))
        assert abs(float(got) - want) < 1e-9


@pytest.mark.parametrize("fused", [True, False])
def test_loss_gradcheck_fp64(fused):
    x, y, t_len, u_len = _data(3, 2, [3, 2], [2, 1], 4, 0, torch.float64, seed=3)
    if not fused:
        x = x.detach().log_softmax(-1).requires_grad_()

    def f(inp):
        # unfused: the loss reads the given log-probs as they are (perturbations of 1e-6 stay
        # within the 1e-3 normalisation check)
        return rnnt_loss(inp, y, t_len, u_len, reduction="none", fused_log_softmax=fused)

    assert torch.autograd.gradcheck(f, (x,), eps=1e-6, atol=1e-6)


def test_loss_unfused_equals_fused_on_log_probs():
    x, y, t_len, u_len = _data(4, 3, [4, 3], [3, 2], 6, 0, torch.float64, seed=5)
    lp = x.detach().log_softmax(-1).requires_grad_()
    a = rnnt_loss(x, y, t_len, u_len, reduction="none")
    b = rnnt_loss(lp, y, t_len, u_len, reduction="none", fused_log_softmax=False)
    torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10)
    (gb,) = torch.autograd.grad(b.sum(), lp)
    (gbf,) = torch.autograd.grad(brute_sum(lp, y, t_len, u_len), lp)
    torch.testing.assert_close(gb, gbf, atol=1e-9, rtol=1e-9)


def brute_sum(lp, y, t_len, u_len):
    return sum(brute_force_nll(lp[b], y[b], int(t_len[b]), int(u_len[b]), 0) for b in range(len(y)))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_triton_matches_torch_values_and_grads(triton_ok, dtype):
    x, y, t_len, u_len = _data(5, 3, [5, 2, 4], [3, 3, 0], 6, 0, dtype, seed=7)
    a = rnnt_loss(x, y, t_len, u_len, reduction="none", backend="torch")
    (ga,) = torch.autograd.grad(a.sum(), x)
    b = rnnt_loss(x, y, t_len, u_len, reduction="none", backend="triton")
    (gb,) = torch.autograd.grad(b.sum(), x)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ga, gb, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_loss_half_precision_within_1e2_of_fp32(dtype):
    x, y, t_len, u_len = _data(6, 4, [6, 5], [4, 2], 8, 0, torch.float32, seed=11)
    ref = rnnt_loss(x.detach(), y, t_len, u_len, reduction="none")
    xh = x.detach().to(dtype).requires_grad_()
    got = rnnt_loss(xh, y, t_len, u_len, reduction="none")
    assert got.dtype == torch.float32  # fp32 compute and result
    # compare with the fp32 run on the same (rounded) logits and on the original ones
    same = rnnt_loss(xh.detach().float(), y, t_len, u_len, reduction="none")
    torch.testing.assert_close(got, same, atol=0, rtol=1e-5)
    assert torch.all((got - ref).abs() / ref.abs() < 1e-2)
    got.sum().backward()
    assert xh.grad is not None
    assert xh.grad.dtype == dtype
    assert torch.isfinite(xh.grad).all()
    assert xh.grad.abs().sum() > 0


@pytest.mark.parametrize("dtype", [torch.int64, torch.complex64, torch.bool])
def test_loss_unsupported_dtype_raises_never_zero(dtype):
    x = torch.zeros(1, 2, 2, 3).to(dtype)
    with pytest.raises(TypeError, match="logits"):
        rnnt_loss(x, torch.ones(1, 1, dtype=torch.int64), torch.tensor([2]), torch.tensor([1]))


def test_loss_long_sequence_finite_and_matches_fp64():
    # warp-transducer style fp32 overflow / underflow on long lattices is a known peer failure
    g = torch.Generator().manual_seed(0)
    T, U, V = 1500, 120, 8
    x = torch.randn(1, T, U + 1, V, generator=g) * 3
    y = torch.randint(1, V, (1, U), generator=g)
    a = rnnt_loss(x, y, torch.tensor([T]), torch.tensor([U]), reduction="none")
    b = rnnt_loss(x.double(), y, torch.tensor([T]), torch.tensor([U]), reduction="none")
    assert torch.isfinite(a).all()
    assert abs(float(a) - float(b)) / float(b) < 1e-5


def test_loss_empty_targets_all_blank():
    # U = 0 for the whole batch: -log p = -sum_t log p(blank | t, 0)
    x = torch.randn(2, 5, 1, 4, dtype=torch.float64, requires_grad=True)
    y = torch.zeros(2, 0, dtype=torch.int64)
    got = rnnt_loss(x, y, torch.tensor([5, 3]), torch.tensor([0, 0]), reduction="none")
    lp = x.log_softmax(-1)[..., 0, 0]
    want = torch.stack([-lp[0, :5].sum(), -lp[1, :3].sum()])
    torch.testing.assert_close(got, want)
    (g1,) = torch.autograd.grad(got.sum(), x)
    (g2,) = torch.autograd.grad(want.sum(), x)
    torch.testing.assert_close(g1, g2)


def test_loss_reductions_and_normalize_value_and_grad_agree():
    x, y, t_len, u_len = _data(4, 3, [4, 3], [3, 2], 5, 0, torch.float64, seed=2)
    per = rnnt_loss(x, y, t_len, u_len, reduction="none")
    torch.testing.assert_close(rnnt_loss(x, y, t_len, u_len, reduction="sum"), per.sum())
    torch.testing.assert_close(rnnt_loss(x, y, t_len, u_len), per.mean())
    nf = rnnt_loss(x, y, t_len, u_len, reduction="sum", normalize="frames")
    torch.testing.assert_close(nf, (per / t_len).sum())
    (g1,) = torch.autograd.grad(nf, x)
    (g2,) = torch.autograd.grad((per / t_len).sum(), x)
    torch.testing.assert_close(g1, g2)
    nt = rnnt_loss(x, y, t_len, u_len, reduction="sum", normalize="tokens")
    torch.testing.assert_close(nt, (per / u_len).sum())


def test_loss_saves_only_lattice_sized_tensors():
    B, T, U, V = 2, 6, 4, 50
    x = torch.randn(B, T, U + 1, V, requires_grad=True)
    y = torch.randint(1, V, (B, U))
    saved: list[torch.Tensor] = []

    def pack(t):
        saved.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        rnnt_loss(x, y, torch.tensor([T, T]), torch.tensor([U, U]))
    big = [t for t in saved if t.numel() >= B * T * (U + 1) * V and t.data_ptr() != x.data_ptr()]
    assert not big, [tuple(t.shape) for t in big]


def test_loss_signature_follows_torchaudio():
    # torchaudio.functional.rnnt_loss(logits, targets, logit_lengths, target_lengths, blank=-1,
    # clamp=-1, reduction="mean", fused_log_softmax=True)
    names = list(inspect.signature(rnnt_loss).parameters)[:8]
    assert names == ["logits", "targets", "logit_lengths", "target_lengths", "blank", "clamp",
                     "reduction", "fused_log_softmax"]  # fmt: skip
    x, y, t_len, u_len = _data(3, 2, [3, 3], [2, 2], 5, 4, torch.float64)
    torch.testing.assert_close(
        rnnt_loss(x, y.int(), t_len.int(), u_len.int(), -1),
        rnnt_loss(x, y, t_len, u_len, blank=4),
    )
    mod = RNNTLoss(blank=4, reduction="sum")
    torch.testing.assert_close(
        mod(x, y, t_len, u_len), rnnt_loss(x, y, t_len, u_len, 4, reduction="sum")
    )


def test_loss_clamp_bounds_gradient():
    x, y, t_len, u_len = _data(3, 2, [3, 3], [2, 2], 5, 0, torch.float64)
    loss = rnnt_loss(x * 10, y, t_len, u_len, clamp=0.05, reduction="sum")
    (g,) = torch.autograd.grad(loss, x)
    assert float(g.abs().max()) <= 0.5 + 1e-12  # d(10 x) = 10 * clamped


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here (DECISIONS 13)")
def test_loss_runs_on_cuda():
    x, y, t_len, u_len = _data(5, 3, [5, 4], [3, 2], 6, 0, torch.float32)
    a = rnnt_loss(x, y, t_len, u_len, reduction="none")
    b = rnnt_loss(x.cuda(), y.cuda(), t_len.cuda(), u_len.cuda(), reduction="none")
    torch.testing.assert_close(a, b.cpu(), atol=1e-5, rtol=1e-5)
