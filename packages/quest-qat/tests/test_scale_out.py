"""Scale-out (spec §7): 2-rank gloo DDP training matches one process to 1e-6."""

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
def test_ddp_two_ranks_match_one_process(tmp_path):
    out = tmp_path / "ddp.pt"
    port = _free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, str(HERE / "ddp_worker.py"), str(r), "2", str(port), str(out)],
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
    ddp = torch.load(out, weights_only=True)
    assert set(ddp) == set(single)
    for k in single:
        assert (ddp[k] - single[k]).abs().max().item() <= 1e-6, k
