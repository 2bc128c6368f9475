"""Spec tests 3, 4 and 9: alignment converges, is scale invariant, and matches the official
formulas under ``official_scale=True``."""

import copy

import pytest
import torch
import torch.nn.functional as F
from fsl_sage import AlignmentBuffer, GradScalarAux, LinearGradScalarAux, align, nmse
from torch import nn

D, C, M = 20, 10, 1000


def _buffer(n=M, d=D, seed=0):
    gen = torch.Generator().manual_seed(seed)
    buf = AlignmentBuffer(max_size=M)
    buf.add(torch.randn(n, d, generator=gen), torch.randint(0, C, (n,), generator=gen))
    return buf


def _linear_head():
    torch.manual_seed(11)
    return nn.Sequential(nn.Linear(D, C), nn.LogSoftmax(dim=1))


@pytest.mark.slow
@pytest.mark.parametrize(("batch_size", "epochs"), [(100, 100), (1000, 1000)])
def test_alignment_scale_invariant_and_exact_for_linear_head(batch_size, epochs):
    # both settings take 1000 Adam steps; the linear head is exactly representable by the aux
    server, buf = _linear_head(), _buffer()
    torch.manual_seed(5)
    aux = LinearGradScalarAux(D, C)
    stats = align(
        aux, buf, server, epochs=epochs, batch_size=batch_size,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    assert stats.nmse_after < 1e-4
    z, y, g = buf.targets(server)
    assert nmse(aux, z, y, g) == pytest.approx(stats.nmse_after)


def test_alignment_reduces_error_for_two_layer_server():
    torch.manual_seed(2)
    server = nn.Sequential(nn.Linear(D, 32), nn.ReLU(), nn.Linear(32, C), nn.LogSoftmax(dim=1))
    buf = _buffer()
    aux = LinearGradScalarAux(D, C)
    stats = align(aux, buf, server, epochs=100, batch_size=1000)
    assert stats.nmse_after < stats.nmse_before
    losses = torch.tensor(stats.loss_per_epoch)
    assert losses[-10:].mean() < losses[:10].mean()
    assert torch.isfinite(losses).all()
    assert float(losses.max()) <= 1.5 * float(losses[0])  # no blow-up


def _official_transcription(aux, z, y, server, epochs, batch_size, seed):
    """Direct transcription of the official alignment: mean-loss targets over the whole buffer,
    mean-loss aux gradients over each batch, summed squared error, Adam 1e-3."""
    zt = z.clone().requires_grad_(True)
    targets = torch.autograd.grad(F.nll_loss(server(zt), y), zt)[0]
    opt = torch.optim.Adam(aux.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        order = torch.randperm(z.shape[0], generator=gen)
        for start in range(0, z.shape[0], batch_size):
            idx = order[start : start + batch_size]
            zb = z[idx].clone().requires_grad_(True)
            aux_loss = F.nll_loss(aux(zb), y[idx])
            g_hat = torch.autograd.grad(aux_loss, zb, create_graph=True)[0]
            loss = F.mse_loss(g_hat, targets[idx], reduction="sum")
            opt.zero_grad()
            loss.backward()
            opt.step()


@pytest.mark.parametrize("kind", ["linear", "mlp"])
@pytest.mark.parametrize("batch_size", [1000, 300])
def test_official_scale_matches_transcription(kind, batch_size):
    torch.manual_seed(4)
    server = nn.Sequential(nn.Linear(D, 16), nn.Tanh(), nn.Linear(16, C), nn.LogSoftmax(dim=1))
    buf = _buffer()
    if kind == "linear":
        ours = LinearGradScalarAux(D, C)
    else:
        ours = GradScalarAux(
            nn.Sequential(nn.Linear(D, 8), nn.Tanh(), nn.Linear(8, C), nn.LogSoftmax(dim=1))
        )
    ref = GradScalarAux(copy.deepcopy(ours.net))
    align(
        ours, buf, server, epochs=3, batch_size=batch_size, official_scale=True,
        generator=torch.Generator().manual_seed(9),
    )  # fmt: skip
    _official_transcription(ref, buf.z, buf.y, server, 3, batch_size, seed=9)
    for a, b in zip(ours.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-7, rtol=0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"epochs": -1}, ValueError, "epochs"),
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"lr": 0.0}, ValueError, "lr"),
        ({"lr": float("nan")}, ValueError, "lr"),
        ({"aux": nn.Linear(2, 2)}, TypeError, "aux"),
        ({"buffer": [1, 2]}, TypeError, "buffer"),
        ({"buffer": AlignmentBuffer(5)}, ValueError, "empty"),
        ({"lr": float("inf")}, ValueError, "lr"),
        ({"generator": 5}, TypeError, "generator"),
        ({"server_model": nn.Sequential(nn.Linear(D + 1, C), nn.LogSoftmax(dim=1))}, ValueError,
         "server_model"),
        ({"server_model": nn.Sequential(nn.Linear(D, 2), nn.LogSoftmax(dim=1))}, ValueError,
         "classes"),
        ({"aux": LinearGradScalarAux(D + 1, C)}, ValueError, "cut shape"),
    ],
)  # fmt: skip
def test_align_rejects_bad_input(kwargs, error, match):
    args = {"aux": LinearGradScalarAux(D, C), "buffer": _buffer(50), "server_model": _linear_head()}
    args.update(kwargs)
    with pytest.raises(error, match=match):
        align(args.pop("aux"), args.pop("buffer"), args.pop("server_model"), **args)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"aux": nn.Linear(2, 2)}, TypeError, "aux"),
        ({"g_star": torch.zeros(50, D + 1)}, ValueError, "g_star"),
        ({"g_star": torch.full((50, D), float("nan"))}, ValueError, "g_star"),
        ({"y": torch.full((50,), C)}, ValueError, "y"),
        ({"z": torch.zeros(49, D), "g_star": torch.ones(49, D)}, ValueError, "`y`"),
    ],
)
def test_nmse_rejects_bad_input(kwargs, error, match):
    buf = _buffer(50)
    args = {"aux": LinearGradScalarAux(D, C), "z": buf.z, "y": buf.y, "g_star": torch.ones(50, D)}
    args.update(kwargs)
    with pytest.raises(error, match=match):
        nmse(**args)


def test_nmse_is_one_for_zero_estimate_and_zero_for_exact():
    buf = _buffer(50)
    aux = LinearGradScalarAux(D, C)
    with torch.no_grad():
        aux.linear.weight.zero_()
    z, y = buf.z, buf.y
    g = torch.randn(50, D)
    assert nmse(aux, z, y, g) == pytest.approx(1.0)
    other = LinearGradScalarAux(D, C)
    assert nmse(other, z, y, other.estimate(z, y) * len(z)) == 0.0  # per-sample targets
