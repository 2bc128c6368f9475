"""Scale-out: a 2-process gloo DDP step (torchrun) equals one process on the joint batch with
``reduction="sum"`` and all-reduced token counts (spec section 7, test 10)."""

import os
import sys
from pathlib import Path

import ddp_worker
import torch

from icml25_core import free_port, process_group


def test_ddp_two_process_gloo_equals_single_process(tmp_path):
    out = tmp_path / "ddp.pt"
    script = str(Path(__file__).parent / "ddp_worker.py")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", "--nproc_per_node=2",
           f"--master_port={free_port()}", "--master_addr=127.0.0.1", script, str(out)]  # fmt: skip
    with process_group(cmd, env=env, log=tmp_path / "torchrun.log") as proc:
        code = proc.wait(timeout=150)
    assert code == 0, (tmp_path / "torchrun.log").read_text()[-3000:]
    net = ddp_worker.model()
    feats, lengths, targets, t_len = ddp_worker.data()
    loss = net(feats, lengths, targets, t_len).loss / t_len.sum()
    loss.backward()
    got = torch.load(out)
    torch.testing.assert_close(got["loss"], loss.detach(), rtol=1e-6, atol=1e-6)
    want = ddp_worker.grads(net)
    assert want.keys() == got["grads"].keys()
    for name, g in want.items():
        torch.testing.assert_close(got["grads"][name], g, rtol=1e-5, atol=1e-6)
