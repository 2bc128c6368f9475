"""Spec test 8 (targets leave the server untouched) and the FIFO buffer's behaviour."""

import pytest
import torch
import torch.nn.functional as F
from fsl_sage import AlignmentBuffer
from torch import nn


def test_targets_leave_server_state_bitwise_unchanged():
    torch.manual_seed(0)
    server = nn.Sequential(
        nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3), nn.LogSoftmax(dim=1)
    )
    server.eval()
    for p in server.parameters():
        p.grad = torch.full_like(p, 0.5)
    before = {k: v.clone() for k, v in server.state_dict().items()}
    grads = [p.grad.clone() for p in server.parameters()]
    buf = AlignmentBuffer(10)
    buf.add(torch.randn(7, 6), torch.randint(0, 3, (7,)))
    z, y, g = buf.targets(server)
    for key, value in server.state_dict().items():
        assert torch.equal(value, before[key]), key
    assert server.state_dict()["1.num_batches_tracked"] == before["1.num_batches_tracked"]
    assert all(torch.equal(p.grad, q) for p, q in zip(server.parameters(), grads, strict=True))
    assert not server.training
    # the targets are the train-mode per-sample (sum-loss) gradients
    ref = nn.Sequential(*[m for m in server]).train()
    ref.load_state_dict(before)
    zz = z.clone().requires_grad_(True)
    (expected,) = torch.autograd.grad(F.nll_loss(ref(zz), y, reduction="sum"), zz)
    torch.testing.assert_close(g, expected, atol=0, rtol=0)


def test_buffer_keeps_last_max_size_samples_in_order():
    buf = AlignmentBuffer(max_size=5)
    for k in range(3):
        buf.add(torch.full((3, 2), float(k)), torch.full((3,), k))
    assert len(buf) == 5
    assert buf.y.tolist() == [1, 1, 2, 2, 2]
    assert buf.z[:, 0].tolist() == [1.0, 1.0, 2.0, 2.0, 2.0]


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((torch.randn(3, 2), torch.zeros(4, dtype=torch.int64)), ValueError, "`y`"),
        ((torch.randn(3, 5), torch.zeros(3, dtype=torch.int64)), ValueError, r"\(2,\)"),
        ((torch.full((3, 2), float("inf")), torch.zeros(3, dtype=torch.int64)), ValueError, "`z`"),
        ((torch.randn(0, 2), torch.zeros(0, dtype=torch.int64)), ValueError, "`z`"),
        ((torch.randn(3, 2), torch.zeros(3)), TypeError, "`y`"),
        ((torch.randn(3), torch.zeros(3, dtype=torch.int64)), ValueError, "`z`"),
    ],
)
def test_buffer_add_rejects_bad_input(args, error, match):
    buf = AlignmentBuffer(4)
    buf.add(torch.randn(2, 2), torch.zeros(2, dtype=torch.int64))
    with pytest.raises(error, match=match):
        buf.add(*args)


@pytest.mark.parametrize("max_size", [0, -3, 2.5])
def test_buffer_rejects_bad_max_size(max_size):
    with pytest.raises((ValueError, TypeError), match="max_size"):
        AlignmentBuffer(max_size)


def test_targets_of_empty_buffer_raise():
    with pytest.raises(ValueError, match="empty"):
        AlignmentBuffer().targets(nn.Linear(2, 2))


def _filled(label=0):
    buf = AlignmentBuffer(4)
    buf.add(torch.randn(3, 2), torch.full((3,), label, dtype=torch.int64))
    return buf


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: _filled().targets(nn.Sequential(nn.Linear(5, 3), nn.LogSoftmax(1))), ValueError,
         "does not fit `server_model`"),
        (lambda: _filled(5).targets(nn.Sequential(nn.Linear(2, 3), nn.LogSoftmax(1))), ValueError,
         "label 5 .* 3 classes"),
        (lambda: _filled().targets("server"), TypeError, "server_model"),
        (lambda: AlignmentBuffer().load_state_dict({"z": 1}), ValueError, "`state`"),
        (lambda: AlignmentBuffer().load_state_dict([1]), ValueError, "`state`"),
        (lambda: AlignmentBuffer().load_state_dict({"max_size": 0, "z": None, "y": None}),
         ValueError, "max_size"),
        (lambda: AlignmentBuffer().load_state_dict(
            {"max_size": 3, "z": torch.randn(2, 2), "y": None}), ValueError, "both"),
        (lambda: AlignmentBuffer().load_state_dict(
            {"max_size": 3, "z": torch.randn(2, 2), "y": torch.zeros(3, dtype=torch.int64)}),
         ValueError, "y"),
    ],
)  # fmt: skip
def test_buffer_targets_and_load_reject_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_buffer_state_round_trips():
    buf = _filled(1)
    other = AlignmentBuffer()
    other.load_state_dict(buf.state_dict())
    assert other.max_size == 4
    assert torch.equal(other.z, buf.z)
    assert torch.equal(other.y, buf.y)
