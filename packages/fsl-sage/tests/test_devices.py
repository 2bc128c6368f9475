"""DECISIONS 13 / issue 34: clients, aux models and the S-server train on the device asked for
(default: the model's) and give the CPU's result there; CUDA runs when present, elsewhere only
the CPU case runs (the CUDA one is skipped with the reason)."""

import pytest
import torch
from fsl_sage import Simulation, cse_fsl, fsl_sage, splitfed_v1
from fsl_sage.flower import FlowerConfig, build_split, load_partition

DEVICES = [
    "cpu",
    pytest.param(
        "cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
    ),
]
CFG = FlowerConfig(dataset="digits", num_clients=2, per_client=60, widths="4,8", rounds=2,
                   batch_size=16, q=2, l=1, buffer_size=40, align_epochs=2,
                   align_batch_size=20, num_test=100)  # fmt: skip


def _sim(algorithm, device):
    parts = [load_partition(CFG, i, 2) for i in range(2)]
    sim = Simulation(build_split(CFG), parts, algorithm, batch_size=16, seed=CFG.seed,
                     device=device)  # fmt: skip
    for _ in range(2):
        sim.run_round()
    return sim


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "algorithm", [fsl_sage(2, 1, 40, align_epochs=2, align_batch_size=20), cse_fsl(2),
                  splitfed_v1()], ids=["fsl_sage", "cse_fsl", "splitfed_v1"],
)  # fmt: skip
def test_simulation_on_a_device_matches_the_cpu(algorithm, device):
    ours, cpu = _sim(algorithm, device), _sim(algorithm, None)
    pairs = [(ours.clients[0].model, cpu.clients[0].model), (ours.server.model, cpu.server.model)]
    if algorithm.uses_aux:
        pairs.append((ours.clients[0].aux, cpu.clients[0].aux))
    for a, b in pairs:
        for (key, va), (_, vb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
            assert va.device.type == device, key
            torch.testing.assert_close(va.cpu(), vb, rtol=1e-4, atol=1e-5)


def test_an_unknown_device_is_refused_by_name():
    with pytest.raises(ValueError, match="`device` 'gpu'"):
        _sim(cse_fsl(2), "gpu")
    with pytest.raises(ValueError, match="`device` 'gpu'"):
        FlowerConfig(device="gpu")


def test_a_device_torch_cannot_use_here_is_refused_early_by_name(monkeypatch):
    """New-user trial 34: ``device="cuda"`` on a CPU-only torch failed with torch's bare
    ``AssertionError`` deep in a run, and ``"meta"`` with ``.item()`` on a meta tensor."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # CPU-only, on any machine
    with pytest.raises(ValueError, match="`device` 'cuda' is not available here"):
        _sim(cse_fsl(2), "cuda")
    with pytest.raises(ValueError, match="`device` 'meta'"):
        _sim(cse_fsl(2), torch.device("meta"))
    # a run config names the device of other machines: only the name is checked there
    assert FlowerConfig(device="cuda").device == "cuda"
    with pytest.raises(ValueError, match="`device` 'meta'"):
        FlowerConfig(device="meta")
