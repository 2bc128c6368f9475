"""Spec test 11: the ClientApp equals ``Client.local_round`` bitwise (no Ray), and the Ray
simulation engine (2 SuperNodes x 2 rounds) equals the "round" schedule (slow; runs in CI)."""

import json
import os
import sys
import time

import pytest
import torch
from flwr.app import ConfigRecord, Context, Message, Metadata, RecordDict
from fsl_sage import Client, Simulation
from fsl_sage.flower import FlowerConfig, build_split, load_partition
from fsl_sage.flower.client_app import make_client_app
from fsl_sage.flower.records import batches_from_record, state_from_record, state_to_record

from icml25_core import process_group

CFG = FlowerConfig(
    dataset="digits", num_clients=2, per_client=120, widths="4,8", rounds=2, batch_size=16,
    q=2, l=1, buffer_size=60, align_epochs=3, align_batch_size=30, num_test=300,
)  # fmt: skip


def _message(records, message_type, round_):
    md = Metadata(
        run_id=1, message_id=f"m{round_}", src_node_id=1, dst_node_id=7, reply_to_message_id="",
        group_id=str(round_), created_at=time.time(), ttl=3600.0, message_type=message_type,
    )  # fmt: skip
    return Message(RecordDict(records), metadata=md)


def _equal_states(a, b):
    assert list(a) == list(b)
    for key in a:
        assert torch.equal(a[key], b[key]), key


def test_client_app_equals_local_round_bitwise():
    app = make_client_app(CFG)
    node_config = {"partition-id": 1, "num-partitions": 2}
    ctx = Context(run_id=1, node_id=7, node_config=node_config, state=RecordDict(), run_config={})
    split = build_split(CFG)
    x, y = load_partition(CFG, 1, 2)
    torch.manual_seed(3)
    aux = split.aux_factory()
    ref = Client(1, build_split(CFG).client, x, y, aux=aux, batch_size=16, seed=CFG.seed)
    for t in range(2):
        records = {"config": ConfigRecord({"round": t, "skip-first": False})}
        records["client-model"] = state_to_record(ref.model.state_dict())
        if t == 0:
            records["aux"] = state_to_record(aux.state_dict())
        probe = app(_message(dict(records), "query.probe", t), ctx)
        (probed,) = batches_from_record(probe.content.array_records["smashed"], 1)
        expected_probe = ref.probe(t)
        assert torch.equal(probed.z, expected_probe.z)
        assert torch.equal(probed.y, expected_probe.y)
        reply = app(_message(records, "train.fslsage", t), ctx)
        assert not reply.has_error(), reply.error
        sent = ref.local_round(t, "fsl_sage", server_update_interval=CFG.q)
        got = batches_from_record(reply.content.array_records["smashed"], 1)
        assert [b.iteration for b in got] == [b.iteration for b in sent]
        for a, b in zip(got, sent, strict=True):
            assert torch.equal(a.z, b.z)
            assert torch.equal(a.y, b.y)
        _equal_states(
            state_from_record(reply.content.array_records["client-model"]), ref.model.state_dict()
        )
        _equal_states(state_from_record(ctx.state.array_records["aux"]), ref.aux.state_dict())
    assert reply.content.config_records["info"]["num-examples"] == ref.num_samples


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"dataset": "cifar"}, "dataset"),
        ({"q": 0}, "q"),
        ({"l": 0}, "l"),
        ({"buffer_size": 0}, "M"),
        ({"widths": "4"}, "widths"),
        ({"widths": "a,b"}, "widths"),
        ({"alpha": 0.0}, "alpha"),
        ({"num_clients": 0}, "num_clients"),
        ({"seed": -1}, "seed"),
        ({"alpha": float("inf")}, "alpha"),
        ({"lr": float("inf")}, "lr"),
        ({"weight_decay": -1.0}, "weight_decay"),
    ],
)
def test_flower_config_rejects_bad_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FlowerConfig(**kwargs)


def test_flower_config_reads_run_config_keys():
    cfg = FlowerConfig.from_run_config({"num-clients": 3, "align-epochs": 7}, CFG)
    assert (cfg.num_clients, cfg.align_epochs, cfg.dataset) == (3, 7, "digits")
    with pytest.raises(ValueError, match="unknown run-config key"):
        FlowerConfig.from_run_config({"epochs": 3})


def test_unknown_run_config_keys_list_the_run_config_names():
    """New-user trial 34: the list named Python fields (`algorithm_name`, `fraction_train`)."""
    with pytest.raises(ValueError, match="unknown run-config key 'epochs'") as info:
        FlowerConfig.from_run_config({"epochs": 3})
    message = str(info.value)
    assert all(f"'{key}'" in message for key in ("algorithm", "fraction-train", "test-data"))
    assert "algorithm_name" not in message
    assert "fraction_train" not in message


def test_load_partition_rejects_out_of_range_id():
    with pytest.raises(ValueError, match="partition_id"):
        load_partition(CFG, 2, 2)


def test_load_partition_rejects_more_samples_than_the_dataset_holds():
    big = FlowerConfig(dataset="digits", num_clients=2, per_client=1000)  # 2000 > 1797 digits
    with pytest.raises(ValueError, match=r"per_client.*1797"):
        load_partition(big, 0, 2)


def _round_schedule():
    split = build_split(CFG)
    parts = [load_partition(CFG, i, 2) for i in range(2)]
    from fsl_sage.flower.config import load_test

    sim = Simulation(
        split, parts, CFG.algorithm(), schedule="round", batch_size=CFG.batch_size,
        lr=CFG.lr, weight_decay=CFG.weight_decay, seed=CFG.seed, test=load_test(CFG),
    )  # fmt: skip
    for _ in range(CFG.rounds):
        sim.run_round()
    return sim


@pytest.mark.slow
def test_ray_simulation_equals_round_schedule(tmp_path):
    out = tmp_path / "result.pt"
    cfg = {k: getattr(CFG, k) for k in CFG.__dataclass_fields__}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "RAY_DEDUP_LOGS": "0"}
    cmd = [sys.executable, "-m", "fsl_sage.flower.simulation", json.dumps(cfg), str(out)]
    with process_group(cmd, env=env) as proc:  # ends Ray's raylet and workers too, never by name
        assert proc.wait(timeout=420) == 0
    result = torch.load(out, weights_only=False)
    sim = _round_schedule()
    for key, value in sim.clients[0].model.state_dict().items():
        torch.testing.assert_close(result["client_model"][key], value, atol=1e-6, rtol=0)
    for key, value in sim.server.model.state_dict().items():
        torch.testing.assert_close(result["server_model"][key], value, atol=1e-6, rtol=0)
    for aux_state, client in zip(result["aux"], sim.clients, strict=True):
        for key, value in client.aux.state_dict().items():
            torch.testing.assert_close(aux_state[key], value, atol=1e-6, rtol=0)
    assert result["official_bytes"] == sim.meter.official_total()
    assert result["bytes"] == sim.meter.as_dict()
    accs = [r["accuracy"] for r in result["history"]]
    assert accs == pytest.approx(sim.history.accuracy, abs=1e-6)
    assert len(result["client_metrics"]) == 2
