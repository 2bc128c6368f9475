"""Roles, messages and the byte meter: sizes and bad input."""

import pytest
import torch
from fsl_sage import (
    AuxState,
    Client,
    CommMeter,
    FServer,
    ModelState,
    SmashedBatch,
    SServer,
    module_nbytes,
)
from torch import nn


def test_message_sizes_are_official_fp32_counts():
    batch = SmashedBatch(0, 0, torch.zeros(5, 3, 2, 2), torch.zeros(5, dtype=torch.int64))
    assert batch.nbytes == 4 * 5 * 12
    assert batch.label_nbytes == 8 * 5
    lin = nn.Linear(7, 3)
    assert ModelState(lin.state_dict()).nbytes == 4 * (7 * 3 + 3) == module_nbytes(lin)
    bn = nn.BatchNorm1d(4)  # weight, bias, running mean/var (4 each) + num_batches_tracked
    assert AuxState(bn.state_dict()).nbytes == 4 * 17 == module_nbytes(bn)


def test_comm_meter_counts_by_kind_and_direction():
    meter = CommMeter()
    meter.add("smashed", "up", 100)
    meter.add("gradients", "down", 100)
    meter.add("labels", "up", 16)
    meter.add("client_model", "up", 40)
    assert meter.total() == 256
    assert meter.official_total() == 240
    assert meter.total(direction="up") == 156
    assert CommMeter.from_dict(meter.as_dict()).as_dict() == meter.as_dict()


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (("pixels", "up", 1), ValueError, "kind"),
        (("smashed", "sideways", 1), ValueError, "direction"),
        (("smashed", "up", -1), ValueError, "nbytes"),
        (("smashed", "up", 1.5), TypeError, "nbytes"),
    ],
)
def test_comm_meter_rejects_bad_input(args, error, match):
    with pytest.raises(error, match=match):
        CommMeter().add(*args)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: CommMeter().total("pixels"), ValueError, "kind"),
        (lambda: CommMeter().total(direction="sideways"), ValueError, "direction"),
        (lambda: CommMeter.from_dict({"smashed": 3}), ValueError, "smashed/up"),
        (lambda: CommMeter.from_dict({"smashed/up/x": 3}), ValueError, "smashed/up"),
        (lambda: CommMeter.from_dict({"pixels/up": 3}), ValueError, "kind"),
        (lambda: CommMeter.from_dict([("smashed/up", 3)]), TypeError, "data"),
    ],
)
def test_comm_meter_total_and_from_dict_reject_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_module_nbytes_rejects_non_module():
    with pytest.raises(TypeError, match="module"):
        module_nbytes({"w": torch.zeros(2)})


def _client(**kwargs):
    args = {
        "client_id": 0,
        "model": nn.Linear(3, 2),
        "x": torch.randn(4, 3),
        "y": torch.zeros(4, dtype=torch.int64),
    }
    args.update(kwargs)
    return Client(**args)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"client_id": -1}, ValueError, "client_id"),
        ({"x": torch.randn(0, 3), "y": torch.zeros(0, dtype=torch.int64)}, ValueError, "`x`"),
        ({"x": torch.full((4, 3), float("nan"))}, ValueError, "`x`"),
        ({"x": torch.zeros(4, 3, dtype=torch.int64)}, TypeError, "`x`"),
        ({"y": torch.zeros(5, dtype=torch.int64)}, ValueError, "`y`"),
        ({"y": torch.zeros(4)}, TypeError, "`y`"),
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"lr": 0.0}, ValueError, "lr"),
        ({"weight_decay": -1.0}, ValueError, "weight_decay"),
        ({"lr": float("inf")}, ValueError, "lr"),
        ({"weight_decay": float("inf")}, ValueError, "weight_decay"),
        ({"seed": -1}, ValueError, "seed"),
        ({"model": "net"}, TypeError, "model"),
        ({"model": nn.Flatten()}, ValueError, "no parameters"),
        ({"aux": nn.Linear(2, 2)}, TypeError, "aux"),
    ],
)
def test_client_rejects_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        _client(**kwargs)


def test_client_local_round_rejects_unknown_algorithm_and_bad_q():
    client = _client()
    with pytest.raises(ValueError, match="algorithm"):
        client.local_round(0, "sgd")
    with pytest.raises(ValueError, match="q"):
        client.local_round(0, "cse_fsl", server_update_interval=0)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda c: c.local_round(-1, "fedavg"), ValueError, "round"),
        (lambda c: c.local_round(0.5, "fedavg"), TypeError, "round"),
        (lambda c: c.local_round(0, "fsl_sage"), ValueError, "aux"),
        (lambda c: c.local_round(0, "cse_fsl"), ValueError, "aux"),
        (lambda c: c.local_round(0, "splitfed"), ValueError, "exchange"),
        (lambda c: c.batches(-1), ValueError, "round"),
        (lambda c: c.probe(-2), ValueError, "round"),
    ],
)
def test_client_rounds_reject_bad_input_before_any_step(call, error, match):
    client = _client()
    before = {k: v.clone() for k, v in client.model.state_dict().items()}
    with pytest.raises(error, match=match):
        call(client)
    assert all(torch.equal(v, before[k]) for k, v in client.model.state_dict().items())


def test_client_batches_cover_the_data_once_per_round():
    client = _client(x=torch.randn(37, 3), y=torch.zeros(37, dtype=torch.int64), batch_size=8)
    batches = client.batches(4)
    assert [len(b) for b in batches] == [8, 8, 8, 8, 5]
    assert sorted(torch.cat(batches).tolist()) == list(range(37))
    assert all(torch.equal(a, b) for a, b in zip(batches, client.batches(4), strict=True))


@pytest.mark.parametrize(
    ("batch", "error", "match"),
    [
        ("not a batch", TypeError, "batch"),
        (SmashedBatch(0, 0, torch.zeros(3, 4), torch.zeros(2, dtype=torch.int64)), ValueError, "y"),
        (SmashedBatch(0, 0, torch.zeros(3, 4), torch.zeros(3)), TypeError, "y"),
        (SmashedBatch(0, 0, torch.zeros(0, 4), torch.zeros(0, dtype=torch.int64)), ValueError, "z"),
        (SmashedBatch(3, 0, torch.full((3, 4), float("inf")), torch.zeros(3, dtype=torch.int64)),
         FloatingPointError, "client 3 in round 9"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("method", ["step", "split_step"])
def test_sserver_rejects_bad_batches(batch, error, match, method):
    server = SServer(nn.Sequential(nn.Linear(4, 2), nn.LogSoftmax(dim=1)))
    with pytest.raises(error, match=match):
        getattr(server, method)(batch, 9)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"lr": -1.0}, "lr"), ({"weight_decay": -1.0}, "weight_decay"), ({"buffer_size": 0}, "M")],
)
def test_sserver_rejects_bad_hyper_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SServer(nn.Linear(2, 2), **kwargs)


def test_sserver_rejects_a_non_module_model():
    with pytest.raises(TypeError, match="model"):
        SServer("server")


def test_sserver_align_needs_buffered_data():
    server = SServer(nn.Sequential(nn.Linear(4, 2), nn.LogSoftmax(dim=1)))
    with pytest.raises(ValueError, match="client_id"):
        server.align(0, None)


@pytest.mark.parametrize(
    ("states", "weights", "match"),
    [
        ([], [], "states"),
        ([{"w": torch.zeros(2)}], [1.0, 2.0], "weights"),
        ([{"w": torch.zeros(2)}, {"v": torch.zeros(2)}], [1.0, 1.0], "keys"),
        ([{"w": torch.zeros(2)}], [-1.0], "weights"),
        ([{"w": torch.zeros(2)}], [float("nan")], "weights"),
        ([{"w": torch.zeros(2)}], [0.0], "weights"),
        ([{"w": torch.zeros(2)}, {"w": torch.zeros(3)}], [1.0, 1.0], r"states\[1\]\['w'\]"),
    ],
)
def test_fserver_rejects_bad_input(states, weights, match):
    with pytest.raises(ValueError, match=match):
        FServer.aggregate(states, weights)


def test_fsl_sage_client_step_is_the_gradient_of_the_mean_aux_loss():
    """Issue 34: with ``estimate`` on the batch-mean scale, ``z.backward(estimate)`` gives the
    client the gradient of mean_b l_a(z_b, y_b) w.r.t. its parameters (spec §2 step 4): one
    local epoch equals Adam on that loss through autograd, with the aux held fixed."""
    import copy

    import torch.nn.functional as F
    from fsl_sage import LinearGradScalarAux

    torch.manual_seed(0)
    x, y = torch.randn(20, 3), torch.randint(0, 4, (20,))
    aux = LinearGradScalarAux(5, 4)
    client = Client(0, nn.Linear(3, 5), x, y, aux=aux, batch_size=7, lr=1e-2)
    manual = copy.deepcopy(client.model)
    optimizer = torch.optim.Adam(manual.parameters(), lr=1e-2, weight_decay=1e-4)
    batches = client.batches(0)
    client.local_round(0, "fsl_sage")
    for idx in batches:
        optimizer.zero_grad(set_to_none=True)
        F.nll_loss(aux(manual(x[idx])), y[idx]).backward()
        optimizer.step()
    for ours, theirs in zip(client.model.parameters(), manual.parameters(), strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-7)


def test_splitfed_split_at_the_round_trip_equals_local_round():
    """Issue 34 (SplitFed on Flower): forward in one message, backward in the next, with the
    buffers (BatchNorm) and RNG (dropout) restored for the recomputed forward, leaves client and
    server bitwise where ``local_round("splitfed")`` does."""
    import copy

    from fsl_sage import SServer

    torch.manual_seed(0)
    x, y = torch.randn(20, 3), torch.randint(0, 4, (20,))
    net = nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.Dropout(0.3), nn.ReLU())
    head = nn.Sequential(nn.Linear(5, 4), nn.LogSoftmax(dim=1))
    ours = Client(0, copy.deepcopy(net), x, y, batch_size=7)
    ref = Client(0, copy.deepcopy(net), x, y, batch_size=7)
    server_ours, server_ref = SServer(copy.deepcopy(head)), SServer(copy.deepcopy(head))
    torch.manual_seed(5)
    ref.local_round(0, "splitfed", exchange=lambda b: server_ref.split_step(b, 0))
    torch.manual_seed(5)
    for j in range(len(ours.batches(0))):
        batch, snapshot = ours.splitfed_forward(0, j)
        torch.manual_seed(99)  # whatever happens between the two messages
        ours.splitfed_backward(0, j, server_ours.split_step(batch, 0), snapshot)
    for a, b in ((ours.model, ref.model), (server_ours.model, server_ref.model)):
        for (ka, va), (_, vb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
            assert torch.equal(va, vb), ka
    with pytest.raises(ValueError, match="iteration"):
        ours.splitfed_forward(0, 3)
