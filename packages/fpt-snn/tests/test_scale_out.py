"""Scale-out: a 2-process gloo DDP step equals one process on the joint batch (spec §7)."""

import os
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest
import torch

from icml25_core import free_port, process_group

sys.path.insert(0, str(Path(__file__).parent))
import ddp_worker


@pytest.mark.slow
def test_ddp_two_process_step_equals_single_process(tmp_path):
    out, port = tmp_path / "ddp.pt", str(free_port())
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    script = str(Path(__file__).parent / "ddp_worker.py")
    with ExitStack() as ranks:  # each rank in its own process group, ended on exit (DECISIONS 6)
        procs = [
            ranks.enter_context(
                process_group([sys.executable, script, str(rank), port, str(out)], env=env)
            )
            for rank in range(2)
        ]
        codes = [p.wait(timeout=120) for p in procs]
    assert codes == [0, 0]
    single = ddp_worker.model()
    ddp_worker.step(single, *ddp_worker.data())
    ddp_state = torch.load(out)
    for name, value in single.state_dict().items():
        torch.testing.assert_close(ddp_state[name], value, rtol=1e-6, atol=1e-6)
