"""Scale-out: a 2-process gloo DDP step equals one process on the joint batch (spec §7)."""

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
import ddp_worker


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_ddp_two_process_step_equals_single_process(tmp_path):
    out, port = tmp_path / "ddp.pt", str(_free_port())
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    script = str(Path(__file__).parent / "ddp_worker.py")
    procs = [
        subprocess.Popen(
            [sys.executable, script, str(rank), port, str(out)], env=env, start_new_session=True
        )
        for rank in range(2)
    ]
    try:
        codes = [p.wait(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)  # its own process group (DECISIONS 6)
    assert codes == [0, 0]
    single = ddp_worker.model()
    ddp_worker.step(single, *ddp_worker.data())
    ddp_state = torch.load(out)
    for name, value in single.state_dict().items():
        torch.testing.assert_close(ddp_state[name], value, rtol=1e-6, atol=1e-6)
