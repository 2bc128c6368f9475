"""Spec tests 5 (schedules), 6 (bytes), 7 (F-server average, aux averaging) and resume."""

import numpy as np
import pytest
import torch
from fsl_sage import (
    FServer,
    GradScalarAux,
    LinearGradScalarAux,
    Simulation,
    SmashedBatch,
    SServer,
    cse_fsl,
    evaluate,
    fedavg,
    fsl_sage,
    run,
    splitfed_v1,
    splitfed_v2,
)
from torch import nn

BATCH = 16

D = 8 * 2 * 2  # cut numel per sample of the tiny split
C = 10
# closed-form sizes (elements) of the tiny split: conv 1->4 and 4->8 (5x5), MLP 32-384-192-10
CLIENT = (1 * 4 * 25 + 4) + (4 * 8 * 25 + 8)
SERVER = (D * 384 + 384) + (384 * 192 + 192) + (192 * C + C)
AUX = D * C + C


def _batch_sizes(n):
    return [BATCH] * (n // BATCH) + ([n % BATCH] if n % BATCH else [])


def _states(sim):
    out = [sim.server.model.state_dict()]
    for c in sim.clients:
        out.append(c.model.state_dict())
        if c.aux is not None:
            out.append(c.aux.state_dict())
    return out


def _assert_bitwise(a, b):
    for sa, sb in zip(a, b, strict=True):
        for key in sa:
            assert torch.equal(sa[key], sb[key]), key


def _sim(split, parts, alg, schedule="sequential"):
    return Simulation(split, parts, alg, schedule=schedule, batch_size=BATCH, seed=0)


@pytest.mark.parametrize(
    ("n_clients", "alg"),
    [
        (1, fsl_sage(2, 1, 50, align_epochs=3, align_batch_size=20)),
        (3, fsl_sage(2, 1, 50, align=False)),
        (3, cse_fsl(2)),
    ],
    ids=["m1-align", "m3-noalign", "m3-cse"],
)
def test_sequential_and_round_schedules_are_bitwise_identical(
    tiny_split, tiny_partitions, n_clients, alg
):
    parts = tiny_partitions[:n_clients]
    seq, rnd = _sim(tiny_split, parts, alg), _sim(tiny_split, parts, alg, "round")
    for _ in range(3):
        seq.run_round(), rnd.run_round()
    _assert_bitwise(_states(seq), _states(rnd))
    assert seq.meter.as_dict() == rnd.meter.as_dict()


def _smashed_bytes(sizes, q):
    return sum(4 * b * D for j, b in enumerate(sizes) if j % q == 0)


def _labels_bytes(sizes, q):
    return sum(8 * b for j, b in enumerate(sizes) if j % q == 0)


@pytest.mark.parametrize("name", ["fsl_sage", "cse_fsl", "splitfed_v1", "splitfed_v2", "fedavg"])
def test_official_bytes_equal_closed_forms(tiny_split, tiny_partitions, name):
    q, l_align, rounds = 2, 2, 3
    alg = {
        "fsl_sage": fsl_sage(q, l_align, 50, align_epochs=1, align_batch_size=50),
        "cse_fsl": cse_fsl(q),
        "splitfed_v1": splitfed_v1(),
        "splitfed_v2": splitfed_v2(),
        "fedavg": fedavg(),
    }[name]
    sim = _sim(tiny_split, tiny_partitions, alg)
    for _ in range(rounds):
        sim.run_round()
    expected, labels = 0, 0
    for t in range(rounds):
        for x, _ in tiny_partitions:
            sizes = _batch_sizes(x.shape[0])
            assert sizes[-1] < BATCH  # every client has a short last batch
            if name == "fsl_sage":
                expected += _smashed_bytes(sizes, q) + 2 * 4 * CLIENT
                expected += 4 * AUX if t % l_align == 0 else 0
                labels += _labels_bytes(sizes, q)
            elif name == "cse_fsl":
                expected += _smashed_bytes(sizes, q) + 2 * 4 * CLIENT + 2 * 4 * AUX
                labels += _labels_bytes(sizes, q)
            elif name.startswith("splitfed"):
                expected += sum(2 * 4 * b * D for b in sizes) + 2 * 4 * CLIENT
                labels += sum(8 * b for b in sizes)
            else:
                expected += 2 * 4 * (CLIENT + SERVER)
    assert sim.meter.official_total() == expected
    assert sim.meter.total("labels") == labels
    assert sim.meter.total() == expected + labels
    kinds = {key.split("/")[0] for key in sim.meter.as_dict()}
    assert ("labels" in kinds) == (name != "fedavg")


def test_fserver_is_sample_weighted_mean():
    gen = torch.Generator().manual_seed(0)
    states = [{"w": torch.randn(3, 4, generator=gen), "n": torch.tensor(i)} for i in range(3)]
    weights = [40.0, 33.0, 25.0]
    out = FServer.aggregate(states, weights)
    ref = sum(w * s["w"].double().numpy() for w, s in zip(weights, states, strict=True))
    np.testing.assert_allclose(out["w"].numpy(), ref / sum(weights), atol=1e-7, rtol=0)
    assert out["n"] == 0


def test_clients_hold_the_weighted_mean_after_a_round(tiny_split, tiny_partitions):
    sim = _sim(tiny_split, tiny_partitions, fedavg())
    # run the local work by hand, then check the average the round applies
    sizes = [float(x.shape[0]) for x, _ in tiny_partitions]
    for c in sim.clients:
        c.local_round(0, "fedavg")
    locals_ = [{k: v.clone() for k, v in c.model.state_dict().items()} for c in sim.clients]
    FServer.average_modules([c.model for c in sim.clients], sizes)
    for key in locals_[0]:
        ref = sum(w * s[key].double() for w, s in zip(sizes, locals_, strict=True)) / sum(sizes)
        for c in sim.clients:
            torch.testing.assert_close(c.model.state_dict()[key].double(), ref, atol=1e-7, rtol=0)


def test_fsl_sage_aux_models_differ_but_cse_fsl_ones_agree(tiny_split, tiny_partitions):
    sage = _sim(tiny_split, tiny_partitions, fsl_sage(2, 1, 50, align_epochs=2))
    cse = _sim(tiny_split, tiny_partitions, cse_fsl(2))
    sage.run_round(), cse.run_round()
    w = [c.aux.linear.weight for c in sage.clients]
    assert not torch.equal(w[0], w[1])
    assert not torch.equal(w[1], w[2])
    v = [c.aux.linear.weight for c in cse.clients]
    assert torch.equal(v[0], v[1])
    assert torch.equal(v[1], v[2])


def test_run_resumes_from_checkpoint(tiny_split, tiny_partitions, tmp_path):
    alg = fsl_sage(2, 2, 50, align_epochs=2)
    test = tiny_partitions[0]
    kwargs = {"batch_size": BATCH, "seed": 0, "test": test, "show_progress": False}
    full = run(tiny_split, tiny_partitions, alg, rounds=3, **kwargs)
    run(tiny_split, tiny_partitions, alg, rounds=2, checkpoint=tmp_path, **kwargs)
    resumed = run(tiny_split, tiny_partitions, alg, rounds=3, checkpoint=tmp_path, **kwargs)
    assert resumed.records == full.records
    assert full.bytes_to_accuracy(0.0) == full.official_bytes[0]
    with pytest.raises(ValueError, match="target"):  # a fraction, not percent
        full.bytes_to_accuracy(1.01)


@pytest.mark.parametrize(
    ("x", "y", "error", "match"),
    [
        (torch.randn(4, 1, 8, 8), torch.full((4,), 10), ValueError, r"\[0, 10\)"),
        (torch.randn(4, 1, 9, 9), torch.zeros(4, dtype=torch.int64), ValueError,
         r"per-sample shape \(1, 9, 9\)"),
        (torch.randn(4, 1, 8, 8), torch.zeros(4), TypeError, "`y`"),
    ],
)  # fmt: skip
def test_evaluate_rejects_bad_input_and_restores_modes(tiny_split, x, y, error, match):
    tiny_split.client.train(), tiny_split.server.train()
    with pytest.raises(error, match=match):
        evaluate(tiny_split.client, tiny_split.server, x, y)
    assert tiny_split.client.training
    assert tiny_split.server.training


def test_run_stops_at_byte_budget(tiny_split, tiny_partitions):
    hist = run(
        tiny_split, tiny_partitions, fedavg(), rounds=5, batch_size=BATCH, max_bytes=1,
        show_progress=False,
    )  # fmt: skip
    assert len(hist.records) == 1


def test_nan_smashed_data_names_client_and_round(tiny_split, tiny_partitions):
    sim = _sim(tiny_split, tiny_partitions, fsl_sage(2, 1, 50, align_epochs=1))
    with torch.no_grad():
        sim.clients[1].model[0].weight[0, 0, 0, 0] = float("nan")  # a diverged client
    with pytest.raises(FloatingPointError, match="client 1 in round 0"):
        sim.run_round()
    server = SServer(tiny_split.server)
    bad = SmashedBatch(
        2, 0, torch.full((3, 8, 2, 2), float("nan")), torch.zeros(3, dtype=torch.int64)
    )
    with pytest.raises(FloatingPointError, match="client 2 in round 4"):
        server.step(bad, 4)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"rounds": 0}, ValueError, "rounds"),
        ({"schedule": "async"}, ValueError, "schedule"),
        ({"algorithm": splitfed_v2(), "schedule": "round"}, ValueError, "schedule"),
        ({"partitions": []}, ValueError, "partitions"),
        ({"labels": 10}, ValueError, r"\[0, 10\)"),
        ({"labels": -1}, ValueError, r"\[0, 10\)"),
        ({"nan": True}, ValueError, "partitions"),
        ({"short_y": True}, ValueError, r"`partitions\[0\] y` has 39 labels for 40 samples"),
        ({"max_bytes": 0}, ValueError, "max_bytes"),
        ({"algorithm": "fsl_sage"}, TypeError, "algorithm"),
        ({"split": object()}, TypeError, "split"),
        ({"partitions": [(torch.randn(5, 1, 9, 9), torch.zeros(5, dtype=torch.int64))]},
         ValueError, r"`partitions\[0\] x` of per-sample shape \(1, 9, 9\)"),
        ({"partitions": [(torch.randn(5, 3, 8, 8), torch.zeros(5, dtype=torch.int64))]},
         ValueError, r"partitions\[0\] x"),
        ({"partitions": [(torch.randn(5, 1, 8, 8), torch.zeros(5, dtype=torch.int64), None)]},
         TypeError, r"`partitions\[0\]` must be an \(x, y\) pair"),
        ({"partitions": [torch.randn(5, 1, 8, 8)]}, TypeError, r"partitions\[0\]"),
        ({"test": torch.randn(5, 1, 8, 8)}, TypeError, "`test`"),
        ({"test": (torch.randn(5, 1, 16, 16), torch.zeros(5, dtype=torch.int64))}, ValueError,
         "`test x`"),
        ({"test": (torch.randn(5, 1, 8, 8), torch.full((5,), 10))}, ValueError, "`test y`"),
        ({"lr": float("inf")}, ValueError, "lr"),
        ({"weight_decay": float("nan")}, ValueError, "weight_decay"),
        ({"checkpoint": 5}, TypeError, "checkpoint"),
        ({"checkpoint": __file__}, ValueError, "`checkpoint` .* is a file"),
        ({"checkpoint": "/proc/no-such-dir/run"}, ValueError, "`checkpoint` folder"),
        # new-user trial 34: a hand-built split whose server or aux does not fit is named so
        ({"hand_split": {"server": nn.Linear(32, 10)}}, ValueError,
         "the server model must output log-probabilities"),
        ({"hand_split": {"server": nn.Sequential(nn.Linear(16, 10), nn.LogSoftmax(1))}},
         ValueError, r"the smashed data of `partitions\[0\] x` \(per-sample shape \(32,\)\) "
         "does not fit the server model"),
        ({"hand_split": {"aux_factory": lambda: LinearGradScalarAux(16, 10)}}, ValueError,
         r"`aux_factory` takes inputs of shape \(16,\), not the cut shape \(32,\)"),
        ({"hand_split": {"aux_factory": lambda: GradScalarAux(nn.Linear(32, 10))}}, ValueError,
         "auxiliary model of `aux_factory` must output log-probabilities"),
    ],
)  # fmt: skip
def test_run_rejects_bad_input(tiny_split, tiny_partitions, hand_split, kwargs, error, match):
    kwargs = dict(kwargs)
    if "hand_split" in kwargs:
        kwargs["split"] = hand_split(**kwargs.pop("hand_split"))
    parts = [(x.clone(), y.clone()) for x, y in tiny_partitions]
    if "labels" in kwargs:
        parts[0][1][0] = kwargs.pop("labels")
    if kwargs.pop("nan", False):
        parts[0][0][0, 0, 0, 0] = float("nan")
    if kwargs.pop("short_y", False):
        parts[0] = (parts[0][0], parts[0][1][:-1])
    args = {"split": tiny_split, "partitions": parts, "algorithm": fsl_sage(), "rounds": 1}
    args.update(kwargs)
    with pytest.raises(error, match=match):
        run(args.pop("split"), args.pop("partitions"), args.pop("algorithm"), **args)


@pytest.mark.parametrize(
    ("factory", "kwargs", "match"),
    [
        (fsl_sage, {"server_update_interval": 0}, r"q"),
        (fsl_sage, {"align_interval": 0}, r"\(l\)"),
        (fsl_sage, {"buffer_size": 0}, r"\(M\)"),
        (fsl_sage, {"align_epochs": -1}, "align_epochs"),
        (fsl_sage, {"align_epochs": 0}, "`align_epochs` must be >= 1"),  # aligning 0 epochs
        (fsl_sage, {"align_batch_size": 0}, "align_batch_size"),
        (fsl_sage, {"align_lr": -1.0}, "align_lr"),
        (cse_fsl, {"server_update_interval": 0}, r"q"),
    ],
)
def test_algorithms_reject_bad_hyper_parameters(factory, kwargs, match):
    with pytest.raises(ValueError, match=match):
        factory(**kwargs)


def test_align_epochs_may_be_0_only_without_alignment():
    assert fsl_sage(align=False, align_epochs=0).align_epochs == 0
