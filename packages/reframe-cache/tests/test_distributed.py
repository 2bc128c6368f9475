"""Scale-out (spec §7): 2 streams in 2 torchrun/gloo processes, one wrapper per stream, give
the same outputs and refresh decisions as each stream run alone in this process."""

import os
import sys

import pytest
import torch
from reframe_cache.data import opencv_sample, video_frames
from reframe_cache.distributed import run_streams
from reframe_cache.models import UNet

from icml25_core.processes import process_group


def _videos():
    try:
        return [opencv_sample("Megamind.avi"), opencv_sample("vtest.avi")]
    except FileNotFoundError as err:
        pytest.skip(str(err))


def test_two_streams_in_two_gloo_processes_match_one_process(tmp_path):
    videos = _videos()
    args = ["--frames", "6", "--size", "32x32", "--widths", "4,8,8,8", "--policy", "delta-0.05"]
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--standalone",
        "-m",
        "reframe_cache",
        "streams",
        *(x for v in videos for x in ("--video", str(v))),
        *args,
        "--out",
        str(tmp_path),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ICML25_PROGRESS": "0"}
    log = tmp_path / "log.txt"
    with process_group(command, log=log, env=env) as proc:  # ended by group id (DECISIONS 6)
        code = proc.wait(timeout=150)
    assert code == 0, log.read_text()[-3000:]
    text = log.read_text()
    assert "stream 0" in text
    assert "on rank 1" in text

    def make_model():
        torch.manual_seed(0)
        return UNet(3, 3, widths=(4, 8, 8, 8))

    streams = [video_frames(v, (32, 32), n=6) for v in videos]
    alone = {
        i: run_streams(make_model, [s], cache="up1", policy="delta-0.05")[0]
        for i, s in enumerate(streams)
    }
    for i in range(2):
        got = torch.load(tmp_path / f"stream{i}.pt", weights_only=False)
        assert got["rank"] == i
        assert got["history"] == alone[i]["history"]
        torch.testing.assert_close(got["outputs"], alone[i]["outputs"], rtol=1e-5, atol=1e-6)
