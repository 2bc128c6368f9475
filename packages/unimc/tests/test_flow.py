# ruff: noqa: E501  (parametrised case tables read best one case per line)
import pytest
import torch
from unimc import TinyDiT, euler_sample, flow_matching_loss


def test_flow_matching_loss_zero_for_exact_velocity():
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(4, 3, 8, 8, generator=g)
    eps = torch.randn(4, 3, 8, 8, generator=g)
    loss = flow_matching_loss(lambda x, t: eps - x0, x0, noise=eps, generator=g)
    assert loss.item() == 0.0
    t = torch.rand(4, generator=g)
    manual = ((torch.zeros_like(x0) - (eps - x0)) ** 2).mean()
    assert torch.allclose(
        flow_matching_loss(lambda x, t: torch.zeros_like(x), x0, t=t, noise=eps), manual
    )


def test_euler_with_exact_field_returns_x0():
    g = torch.Generator().manual_seed(1)
    x0 = torch.randn(3, 2, 5, generator=g)
    eps = torch.randn(3, 2, 5, generator=g)
    for steps in (1, 7, 20):
        out = euler_sample(lambda x, t: eps - x0, eps, steps)
        assert torch.allclose(out, x0, atol=1e-5)


def test_euler_with_state_dependent_exact_field():
    # the exact rectified-flow field along the straight path: v(x, t) = (x - x0) / t
    g = torch.Generator().manual_seed(2)
    x0 = torch.randn(2, 4, generator=g)
    eps = torch.randn(2, 4, generator=g)
    out = euler_sample(lambda x, t: (x - x0) / t[:, None], eps, 10)
    assert torch.allclose(out, x0, atol=1e-5)


def test_tinydit_shapes_and_zero_init_output():
    m = TinyDiT(image_size=16, patch_size=4, d_model=32, depth=2, n_heads=4, control_channels=1)
    x = torch.randn(2, 3, 16, 16)
    y = m(x, torch.rand(2), control=torch.randn(2, 1, 16, 16))
    assert y.shape == x.shape
    assert torch.count_nonzero(y) == 0  # adaLN-Zero final layer


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: flow_matching_loss(lambda x, t: x, torch.zeros(0, 3)), "x0"),
        (lambda: flow_matching_loss(lambda x, t: x, torch.full((2, 3), float("nan"))), "x0"),
        (lambda: flow_matching_loss(lambda x, t: x, torch.zeros(2, 3), t=torch.zeros(3)), "t"),
        (lambda: flow_matching_loss(lambda x, t: x, torch.zeros(2, 3), noise=torch.zeros(2, 4)), "noise"),
        (lambda: euler_sample(lambda x, t: x, torch.zeros(2, 3), 0), "steps"),
        (lambda: euler_sample(lambda x, t: x, torch.full((2, 3), float("inf"))), "noise"),
        (lambda: TinyDiT(image_size=10, patch_size=4), "patch_size"),
        (lambda: TinyDiT(d_model=30, n_heads=4), "n_heads"),
        (lambda: TinyDiT(image_size=8, d_model=8, n_heads=2)(torch.zeros(1, 3, 8, 8), torch.zeros(1), torch.zeros(1, 1, 8, 8)), "control"),
    ],
)  # fmt: skip
def test_flow_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
