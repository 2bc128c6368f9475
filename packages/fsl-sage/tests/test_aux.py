"""Spec tests 1 and 2: the linear gradient-scalar aux against autograd."""

import pytest
import torch
import torch.nn.functional as F
from fsl_sage import GradScalarAux, LinearGradScalarAux
from torch import nn


def _linear_server(d, c, dtype):
    torch.manual_seed(3)
    return nn.Sequential(nn.Linear(d, c), nn.LogSoftmax(dim=1)).to(dtype)


@pytest.mark.parametrize("batch", [7, 128])
def test_estimate_equals_linear_server_gradient(batch):
    d, c = 20, 10
    server = _linear_server(d, c, torch.float32)
    aux = LinearGradScalarAux(d, c)
    aux.linear.load_state_dict(server[0].state_dict())
    z = torch.randn(batch, d).requires_grad_(True)
    y = torch.randint(0, c, (batch,))
    (g_mean,) = torch.autograd.grad(F.nll_loss(server(z), y), z)
    # spec test 1 as written: the estimate IS the gradient of the server's batch-mean NLL
    torch.testing.assert_close(aux.estimate(z.detach(), y), g_mean, atol=1e-6, rtol=0)
    generic = GradScalarAux(nn.Sequential(nn.Linear(d, c), nn.LogSoftmax(dim=1)))
    generic.net[0].load_state_dict(server[0].state_dict())
    torch.testing.assert_close(generic.estimate(z.detach(), y), g_mean, atol=1e-6, rtol=0)


@pytest.mark.parametrize("batch", [7, 128])
def test_alignment_loss_vanishes_for_identical_linear_model(batch):
    d, c = 20, 10
    server = _linear_server(d, c, torch.float64)
    aux = LinearGradScalarAux(d, c).double()
    aux.linear.load_state_dict(server[0].state_dict())
    z = torch.randn(batch, d, dtype=torch.float64).requires_grad_(True)
    y = torch.randint(0, c, (batch,))
    (g_star,) = torch.autograd.grad(F.nll_loss(server(z), y, reduction="sum"), z)
    assert float(aux.alignment_grad(z.detach(), y, g_star)[0]) <= 1e-20
    assert float(aux.alignment_loss(z.detach(), y, g_star).detach()) <= 1e-20


@pytest.mark.parametrize(("batch", "d", "c"), [(1, 3, 2), (17, 20, 10), (64, 33, 7)])
def test_closed_form_matches_double_backward(batch, d, c):
    torch.manual_seed(batch)
    aux = LinearGradScalarAux(d, c).double()
    z = torch.randn(batch, d, dtype=torch.float64)
    y = torch.randint(0, c, (batch,))
    g_star = torch.randn(batch, d, dtype=torch.float64)
    generic = GradScalarAux(aux.net)  # same parameters, autograd path
    est_auto = GradScalarAux.estimate(generic, z, y)
    torch.testing.assert_close(aux.estimate(z, y), est_auto, rtol=1e-10, atol=0)
    loss_auto = generic.alignment_loss(z, y, g_star)
    grad_w, grad_b = torch.autograd.grad(loss_auto, [aux.linear.weight, aux.linear.bias])
    loss, cw, cb = aux.alignment_grad(z, y, g_star)
    torch.testing.assert_close(loss, loss_auto.detach(), rtol=1e-10, atol=0)
    torch.testing.assert_close(cw, grad_w, rtol=1e-10, atol=1e-14)
    torch.testing.assert_close(cb, grad_b, rtol=1e-10, atol=1e-14)


def test_estimate_on_cut_shape_flattens():
    aux = LinearGradScalarAux((2, 3, 3), 4)
    z = torch.randn(5, 2, 3, 3)
    y = torch.randint(0, 4, (5,))
    assert aux.estimate(z, y).shape == z.shape


BAD = [
    ({"z": torch.randn(4, 6), "y": torch.zeros(3, dtype=torch.int64)}, ValueError, "`y`"),
    ({"z": torch.randn(4, 5), "y": torch.zeros(4, dtype=torch.int64)}, ValueError, r"\(6,\)"),
    ({"z": torch.randn(4, 6), "y": torch.full((4,), 3)}, ValueError, r"\[0, 3\)"),
    ({"z": torch.randn(4, 6), "y": torch.full((4,), -1)}, ValueError, r"\[0, 3\)"),
    ({"z": torch.randn(4, 6), "y": torch.zeros(4, dtype=torch.int32)}, TypeError, "`y`"),
    (
        {"z": torch.full((4, 6), float("nan")), "y": torch.zeros(4, dtype=torch.int64)},
        ValueError,
        "`z`",
    ),
    ({"z": torch.randn(0, 6), "y": torch.zeros(0, dtype=torch.int64)}, ValueError, "`z`"),
    ({"z": torch.randint(0, 3, (4, 6)), "y": torch.zeros(4, dtype=torch.int64)}, TypeError, "`z`"),
    ({"z": [[0.0] * 6], "y": torch.zeros(1, dtype=torch.int64)}, TypeError, "`z`"),
]


@pytest.mark.parametrize(("kwargs", "error", "match"), BAD)
@pytest.mark.parametrize("method", ["estimate", "alignment_loss", "alignment_grad"])
def test_aux_rejects_bad_input(kwargs, error, match, method):
    aux = LinearGradScalarAux(6, 3)
    call = getattr(aux, method)
    extra = {} if method == "estimate" else {"g_star": torch.zeros(4, 6)}
    with pytest.raises(error, match=match):
        call(**kwargs, **extra)


def test_aux_rejects_g_star_of_other_shape():
    aux = LinearGradScalarAux(6, 3)
    with pytest.raises(ValueError, match="`g_star`"):
        aux.alignment_grad(torch.randn(4, 6), torch.zeros(4, dtype=torch.int64), torch.zeros(4, 5))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"in_features": 0, "num_classes": 3}, "in_features"),
        ({"in_features": 4, "num_classes": 1}, "num_classes"),
    ],
)
def test_linear_aux_rejects_bad_sizes(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LinearGradScalarAux(**kwargs)


def _net(c=3):
    return nn.Sequential(nn.Linear(6, c), nn.LogSoftmax(dim=1))


Y4 = torch.zeros(4, dtype=torch.int64)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: LinearGradScalarAux("6", 3), TypeError, "in_features"),
        (lambda: LinearGradScalarAux((2, 2.5), 3), TypeError, "in_features"),
        (lambda: GradScalarAux(_net(), input_shape=(0,)), ValueError, "input_shape"),
        (lambda: GradScalarAux(_net(), input_shape="ab"), TypeError, "input_shape"),
        (lambda: GradScalarAux(_net(), num_classes=0), ValueError, "num_classes"),
        (lambda: GradScalarAux(_net(), num_classes=2.0), TypeError, "num_classes"),
        (lambda: LinearGradScalarAux(6, 3)(torch.randn(4, 5)), ValueError, r"\(6,\)"),
        (lambda: LinearGradScalarAux(6, 3)(torch.randn(6)), ValueError, "`z`"),
        (lambda: GradScalarAux(_net()).estimate(torch.randn(4, 5), Y4), ValueError,
         "does not fit the auxiliary network"),
        (lambda: GradScalarAux(_net(3)).estimate(torch.randn(4, 6), torch.full((4,), 4)),
         ValueError, r"`y` must hold labels in \[0, 3\)"),
        (lambda: GradScalarAux(_net(3)).estimate(torch.randn(4, 6), torch.full((4,), -1)),
         ValueError, r"`y` must hold labels in \[0, 3\)"),  # no num_classes: the net's C
        (lambda: GradScalarAux(_net(3), num_classes=5).estimate(torch.randn(4, 6), Y4),
         ValueError, "num_classes"),
        (lambda: GradScalarAux(nn.Identity()).estimate(torch.randn(4, 6, 2), Y4), ValueError,
         r"\[B, C\]"),
        (lambda: LinearGradScalarAux(6, 3).alignment_loss(
            torch.randn(4, 6), Y4, torch.zeros(4, 6), scale=float("nan")), ValueError, "scale"),
        (lambda: LinearGradScalarAux(6, 3).alignment_loss(
            torch.randn(4, 6), Y4, torch.zeros(4, 6), scale=float("inf")), ValueError, "scale"),
    ],
)  # fmt: skip
def test_aux_construction_and_forward_reject_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize(
    "net", [nn.Linear(6, 3), nn.Sequential(nn.Linear(6, 3), nn.Softmax(dim=1))],
    ids=["logits", "probabilities"],
)  # fmt: skip
def test_aux_refuses_a_network_that_does_not_output_log_probabilities(net):
    """New-user trial 34: ``-a(z)_y`` of raw logits or probabilities is not an NLL, and its
    gradient was returned as an estimate without complaint."""
    with pytest.raises(ValueError, match="the auxiliary network must output log-probabilities"):
        GradScalarAux(net, num_classes=3).estimate(torch.randn(4, 6), Y4)


def test_estimate_takes_float64_smashed_data_as_the_linear_aux_does():
    """New-user trial 34: float64 `z` on a float32 network was reported as a shape problem."""
    torch.manual_seed(0)
    linear = LinearGradScalarAux(6, 3)
    z, y = torch.randn(4, 6, dtype=torch.float64), torch.randint(0, 3, (4,))
    got = GradScalarAux(linear.net).estimate(z, y)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, linear.estimate(z, y))
