"""Scale-out (spec section 7): DDP and FSDP2 over a diffusers DiT on 2 gloo ranks, sharded
evaluation gathered on rank 0."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from unimc import COCO17, keypoint_ap
from unimc.distributed import gather_detections, shard_indices

from icml25_core import free_port, process_group

pytest.importorskip("diffusers")
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_distributed.py"


@pytest.mark.parametrize("engine", ["ddp", "fsdp"])
def test_two_gloo_ranks_train_and_gather(tmp_path, engine):
    out = tmp_path / "res.json"
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
        "--master_port", str(free_port()), str(EXAMPLE), "--engine", engine, "--out", str(out),
    ]  # fmt: skip
    log = tmp_path / "log.txt"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with process_group(cmd, log=log, env=env) as proc:  # the group is ended on leaving
        try:
            code = proc.wait(timeout=180)
        except subprocess.TimeoutExpired:
            pytest.fail("2-rank run timed out:\n" + log.read_text()[-3000:])
    assert code == 0, log.read_text()[-3000:]
    res = json.loads(out.read_text())
    assert res["world"] == 2
    assert res["n_dets"] == 5
    assert all(np.isfinite(res["losses"]))
    r0 = json.loads(Path(f"{out}.rank0").read_text())
    r1 = json.loads(Path(f"{out}.rank1").read_text())
    assert r0["gammas"] == r1["gammas"]  # synchronised updates
    assert any(g != 0.0 for g in r0["gammas"])  # the gates trained
    # gathered evaluation equals a single-process evaluation of the same detections
    single = keypoint_ap(res["gt"], res["dets"], {1: COCO17.sigma_array()})
    np.testing.assert_array_equal(single[1], res["ap"])
    assert sorted(d["image_id"] for d in res["dets"]) == [1, 2, 3, 4, 5]


def test_shard_indices_cover_once():
    parts = [shard_indices(11, r, 3) for r in range(3)]
    assert sorted(i for p in parts for i in p) == list(range(11))
    with pytest.raises(ValueError, match="rank"):
        shard_indices(5, 3, 3)


def test_gather_without_process_group_is_identity():
    dets = [{"image_id": 1}]
    assert gather_detections(dets) == dets
