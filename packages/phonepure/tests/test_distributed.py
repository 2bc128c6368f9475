"""Scale-out (spec section 7): DDP training under torchrun with 2 gloo processes, and corpus
purification by file shard."""

import os
import re
import subprocess
import sys

import numpy as np
import soundfile as sf
import torch
from phonepure import DiffWave, PhonemeTemplates, ScoreUNet, save_bundle
from phonepure.cli import main


def test_torchrun_ddp_two_gloo_processes(tmp_path):
    ck = tmp_path / "dw.pt"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    from icml25_core import free_port

    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=2",
        "--master_addr=127.0.0.1",
        f"--master_port={free_port()}",
        "-m",
        "phonepure.train",
        "diffwave",
        "--synthetic",
        "--steps",
        "3",
        "--layers",
        "2",
        "--channels",
        "4",
        "--checkpoint",
        str(ck),
    ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=240, env=env, start_new_session=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    sums = re.findall(r"rank (\d)/2 steps 3 param_sum (\S+)", proc.stdout)
    assert sorted(r for r, _ in sums) == ["0", "1"]
    assert sums[0][1] == sums[1][1]  # DDP keeps replicas identical
    state = torch.load(ck, weights_only=False)
    assert state["step"] == 3


def test_purify_corpus_by_shard(tmp_path, capsys):
    torch.manual_seed(0)
    dw, net = DiffWave(4, 4, 2, 2), ScoreUNet(6, 4, 2)
    bundle = save_bundle(
        tmp_path / "b.pt",
        dw,
        {"res_channels": 4, "skip_channels": 4, "layers": 2, "cycle": 2},
        net,
        {"in_channels": 6, "base": 4, "levels": 2},
        PhonemeTemplates({"sil": np.zeros(256)}),
        N=2,
    )
    src = tmp_path / "in"
    src.mkdir()
    for i in range(5):
        sf.write(src / f"{i}.wav", 0.1 * np.sin(np.arange(3000) / (3 + i)), 16000)
    outs = []
    for i in range(2):
        assert (
            main(
                [
                    "purify",
                    str(src),
                    "--model",
                    str(bundle),
                    "-o",
                    str(tmp_path / "out"),
                    "--shard",
                    f"{i}/2",
                    "--stage1-only",
                ]
            )
            == 0
        )
        outs.append(capsys.readouterr().out)
    assert "shard 0/2: purified 3" in outs[0]
    assert "shard 1/2: purified 2" in outs[1]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"{i}.wav" for i in range(5)]
