"""Scale-out (spec §7): 2-rank gloo DDP, FSDP2 (``fully_shard``) and tensor-parallel
(column-wise then row-wise QuEST layers) training match one process to 1e-6."""

import os
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest
import torch

from icml25_core import free_port, process_group

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ddp_worker import model_and_data, tp_models_and_data, train  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["ddp", "fsdp2", "tp"])
def test_two_ranks_match_one_process(mode, tmp_path):
    out = tmp_path / f"{mode}.pt"
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONFAULTHANDLER": "1"}  # stacks on abort
    worker = [sys.executable, str(HERE / "ddp_worker.py"), mode]
    with ExitStack() as ranks:  # each rank in its own process group, ended on exit
        procs = [
            ranks.enter_context(process_group([*worker, str(r), "2", str(port), str(out)], env=env))
            for r in range(2)
        ]
        codes = [p.wait(timeout=120) for p in procs]
    assert codes == [0, 0]
    if mode == "tp":  # every rank trains on the whole batch: compare with the same steps
        models, x, y = tp_models_and_data()
        single = {f"{n}.{k}": v for n, m in models.items() for k, v in train(m, x, y).items()}
    else:
        model, x, y = model_and_data()
        single = train(model, x, y)
    sharded = torch.load(out, weights_only=True)
    assert set(sharded) == set(single)
    for k in single:
        assert (sharded[k] - single[k]).abs().max().item() <= 1e-6, k
