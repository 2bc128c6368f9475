"""Spec §7: evaluation under torchrun (2 processes, gloo) scores unpadded strided shards and sums
(correct, total) with all_reduce: the counts equal the single-process ones exactly."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from laion_c import evaluate
from PIL import Image

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import torch
    import torch.distributed as dist
    from icml25_core import end_process
    from laion_c import evaluate

    class Red(torch.nn.Module):  # 'cat' when the red channel dominates, else 'fish'
        def forward(self, x):
            red = x[:, 0].mean(dim=(1, 2)) > x[:, 2].mean(dim=(1, 2))
            logits = torch.zeros(len(x), 1000)
            logits[red, 281] = 5.0
            logits[~red, 0] = 5.0
            return logits

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    results = evaluate(Red(), sys.argv[1], normalize=None, distortions=["glitched"], levels=[1, 2])
    if dist.get_rank() == 0:
        print("COUNTS", json.dumps({f"{n}|{k}": v for (n, k), v in results.counts.items()}))
    dist.destroy_process_group()
    end_process(0)  # skip the interpreter teardown that gloo can abort (icml25_core docs)
    """
)


@pytest.mark.slow
def test_torchrun_two_processes_equal_single_process(tmp_path):
    rng = np.random.default_rng(0)
    root = tmp_path / "root"
    for level, n in ((1, 7), (2, 5)):  # odd counts: padding would duplicate an image
        for k in range(n):
            folder = root / "glitched" / f"intensity_level_{level}" / ("cat" if k % 3 else "fish")
            folder.mkdir(parents=True, exist_ok=True)
            Image.fromarray(rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)).save(
                folder / f"{k}.png"
            )
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
        "--master_port", str(29500 + os.getpid() % 1000), str(script), str(root),
    ]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=300, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("COUNTS"))
    counts = {k: tuple(v) for k, v in json.loads(line.split(" ", 1)[1]).items()}

    exec_globals = {}
    exec(SCRIPT.split("torch.set_num_threads")[0], exec_globals)  # the same model, one process
    single = evaluate(
        exec_globals["Red"](), root, normalize=None, distortions=["glitched"], levels=[1, 2]
    )
    assert counts == {f"{n}|{k}": v for (n, k), v in single.counts.items()}
    assert counts["glitched|1"][1] == 7
    assert counts["glitched|2"][1] == 5
