"""Scale-out (spec §7): ``torchrun -m finola train`` on 2 gloo ranks, DDP and FSDP2, trains the
same model as one process on the global batch (each rank takes its half of every batch)."""

import os
import sys

import pytest
import torch

from icml25_core.processes import process_group

ARGS = ["--images", "sklearn", "--patches", "64", "--steps", "3", "--channels", "16",
        "--checkpoint-every", "2"]  # fmt: skip


def _train(folder, *extra, ranks=1):
    launcher = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(ranks),
                "--standalone"] if ranks > 1 else [sys.executable]  # fmt: skip
    out, log = folder / "ae.pt", folder / "log.txt"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ICML25_PROGRESS": "0"}
    command = [*launcher, "-m", "finola", "train", *ARGS, *extra, "--out", str(out)]
    with process_group(command, log=log, env=env) as proc:  # ended by group id (DECISIONS 6)
        code = proc.wait(timeout=120)
    assert code == 0, log.read_text()[-3000:]
    return torch.load(out, weights_only=True)["model"]


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_two_ranks_train_like_one_process_on_the_global_batch(tmp_path, strategy):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    single = _train(tmp_path / "one", "--batch-size", "8")
    sharded = _train(tmp_path / "two", "--batch-size", "4", "--distributed", strategy, ranks=2)
    assert single.keys() == sharded.keys()
    for key, value in single.items():
        torch.testing.assert_close(sharded[key], value, rtol=1e-4, atol=1e-5, msg=key)
