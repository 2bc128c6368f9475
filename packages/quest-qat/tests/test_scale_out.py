"""Scale-out (spec §7): 2-rank gloo DDP and FSDP2 (``fully_shard``) training match one process
to 1e-6."""

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ddp_worker import model_and_data, train  # noqa: E402


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["ddp", "fsdp2"])
def test_two_ranks_match_one_process(mode, tmp_path):
    out = tmp_path / f"{mode}.pt"
    port = _free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONFAULTHANDLER": "1"}  # stacks on abort
    procs = [
        subprocess.Popen(
            [sys.executable, str(HERE / "ddp_worker.py"), mode, str(r), "2", str(port), str(out)],
            env=env,
            start_new_session=True,
        )
        for r in range(2)
    ]
    try:
        codes = [p.wait(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    assert codes == [0, 0]
    model, x, y = model_and_data()
    single = train(model, x, y)
    sharded = torch.load(out, weights_only=True)
    assert set(sharded) == set(single)
    for k in single:
        assert (sharded[k] - single[k]).abs().max().item() <= 1e-6, k
