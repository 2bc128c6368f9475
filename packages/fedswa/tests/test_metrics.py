"""Spec test 10: the top Hessian eigenvalue against closed forms and a dense Hessian."""

import pytest
import torch
import torch.nn.functional as F
from fedswa import accuracy, top_hessian_eigenvalue
from torch.autograd.functional import hessian
from torch.func import functional_call


class _Quad(torch.nn.Module):
    def __init__(self, a):
        super().__init__()
        self.a = a
        self.y = torch.nn.Parameter(torch.ones(len(a), dtype=a.dtype))

    def forward(self, _):
        return 0.5 * self.y @ self.a @ self.y


def test_quadratic_gives_max_eigenvalue_of_a():
    torch.manual_seed(0)
    q, _ = torch.linalg.qr(torch.randn(8, 8, dtype=torch.float64))
    eigs = torch.tensor([9.0, 4.0, 3.0, 2.0, 1.0, 0.5, 0.2, 0.1], dtype=torch.float64)
    a = q @ torch.diag(eigs) @ q.T
    value = top_hessian_eigenvalue(
        _Quad(a), [(torch.zeros(1), torch.zeros(1))], iters=100, tol=1e-9,
        loss_fn=lambda out, _: out,
    )  # fmt: skip
    assert value == pytest.approx(9.0, rel=1e-3)


def test_tiny_mlp_matches_dense_hessian():
    torch.manual_seed(1)
    net = torch.nn.Sequential(
        torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3)
    ).double()
    x, y = torch.randn(20, 3, dtype=torch.float64), torch.randint(0, 3, (20,))
    batches = [(x[:12], y[:12]), (x[12:], y[12:])]
    names = [n for n, _ in net.named_parameters()]
    shapes = [p.shape for p in net.parameters()]
    flat = torch.cat([p.detach().reshape(-1) for p in net.parameters()])

    def loss(vec):
        params, start = {}, 0
        for n, s in zip(names, shapes, strict=True):
            params[n] = vec[start : start + s.numel()].reshape(s)
            start += s.numel()
        return F.cross_entropy(functional_call(net, params, (x,)), y)

    eigs = torch.linalg.eigvalsh(hessian(loss, flat))
    expected = eigs[eigs.abs().argmax()].item()
    value = top_hessian_eigenvalue(net, batches, iters=500, tol=1e-10)
    assert value == pytest.approx(expected, rel=1e-2)


def test_accuracy_counts_correct_predictions():
    net = torch.nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        net.weight.copy_(torch.eye(2))
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 2.0]])
    assert accuracy(net, x, torch.tensor([0, 1, 1, 1])) == 0.75


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(batches=[]), ValueError, "`batches` is empty"),
        (dict(iters=0), ValueError, "`iters`"),
        (dict(tol=0.0), ValueError, "`tol`"),
        (dict(model="net"), TypeError, "`model`"),
        (
            dict(batches=[(torch.full((3, 2), float("nan")), torch.tensor([0, 1, 0]))]),
            ValueError,
            "NaN",
        ),
        (
            dict(batches=[(torch.randn(3, 5), torch.tensor([0, 1, 0]))]),
            ValueError,
            r"`model`/`loss_fn` failed",
        ),
        (dict(loss_fn=lambda out, y: out.sum(1)), ValueError, "scalar"),
    ],
)
def test_top_hessian_eigenvalue_rejects_bad_input(kwargs, error, match):
    args = dict(model=torch.nn.Linear(2, 2), batches=[(torch.randn(3, 2), torch.tensor([0, 1, 0]))])
    args.update(kwargs)
    with pytest.raises(error, match=match):
        top_hessian_eigenvalue(args.pop("model"), args.pop("batches"), **args)
