"""Spec test 7: LSQ's step gradient (Esser et al., 2020, Eq. 3) and PACT's gradients."""

import math

import pytest
import torch
from quest_qat import AbsMaxSTEQuantizer, LSQQuantizer, PACTQuantizer, STEQuantizer


def test_lsq_step_gradient_matches_esser(gen):
    bits, s = 3, 0.4
    q_n, q_p = 2 ** (bits - 1), 2 ** (bits - 1) - 1
    x = torch.randn(8, 32, dtype=torch.float64, generator=gen) * 1.5
    lsq = LSQQuantizer(bits, step_init=s).double()
    s = lsq.step.item()  # the float32 Parameter's exact value
    g = torch.randn(8, 32, dtype=torch.float64, generator=gen)
    lsq(x).backward(g)
    v = x / s
    # Esser et al. Eq. 3: -v + round(v) inside, -Q_N below, Q_P above; times g = 1/sqrt(N·Q_P)
    rounded = -v + torch.floor(v + 0.5)
    inner = torch.where(v <= -q_n, -float(q_n), torch.where(v >= q_p, float(q_p), rounded))
    expected = (g * inner).sum() / math.sqrt(x.numel() * q_p)
    assert lsq.step.grad.item() == pytest.approx(expected.item(), rel=1e-12, abs=1e-14)


def test_lsq_initial_step_and_persistent_flag(gen):
    x = torch.randn(16, 64, generator=gen)
    lsq = LSQQuantizer(4)
    lsq(x)
    assert lsq.step.item() == pytest.approx(2 * x.abs().mean().item() / math.sqrt(7), rel=1e-6)
    state = lsq.state_dict()
    assert bool(state["initialized"])
    fresh = LSQQuantizer(4)
    fresh.load_state_dict(state)
    fresh(x * 10)  # a resumed quantizer keeps its step
    assert fresh.step.item() == pytest.approx(lsq.step.item())


def test_pact_gradients(gen):
    bits, alpha = 2, 0.8
    x = torch.randn(10, 16, dtype=torch.float64, generator=gen, requires_grad=True)
    pact = PACTQuantizer(bits, clip_init=alpha).double()
    g = torch.randn(10, 16, dtype=torch.float64, generator=gen)
    pact(x).backward(g)
    inside = x.detach().abs() < alpha
    assert torch.equal(x.grad, g * inside)
    expected = (g * torch.sign(x.detach()) * (~inside)).sum()
    assert pact.clip.grad.item() == pytest.approx(expected.item(), rel=1e-12)


def test_pact_grid_is_midrise_on_clip(gen):
    pact = PACTQuantizer(2, clip_init=1.5)
    levels = torch.unique(pact(torch.linspace(-3, 3, 1001)))
    step = 2 * 1.5 / 3
    assert torch.allclose(levels, torch.tensor([-1.5, -0.5, 0.5, 1.5]) * step)


def test_ste_gradients_are_identity(gen):
    x = torch.randn(4, 32, generator=gen, requires_grad=True)
    for quantizer in (STEQuantizer(2), AbsMaxSTEQuantizer(2)):
        x.grad = None
        quantizer(x).sum().backward()
        assert torch.equal(x.grad, torch.ones_like(x))


def test_absmax_outer_levels_at_row_max(gen):
    x = torch.randn(4, 32, dtype=torch.float64, generator=gen)
    xhat = AbsMaxSTEQuantizer(2)(x)
    top = x.abs().amax(-1)
    assert torch.allclose(xhat.abs().amax(-1), top, atol=1e-7)
