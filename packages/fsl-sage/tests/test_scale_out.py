"""Scale-out on Flower's deployment engine (slow, runs in CI): a SuperLink and two SuperNodes on
loopback run ``examples/flower-app`` with ``flwr run`` and must give the bytes and accuracies of
the "round" schedule. Every process started here gets its own process group and is ended by that
group's id (SIGTERM, then SIGKILL), with bounded time-outs (DECISIONS 6)."""

import json
import os
import sys
from pathlib import Path

import pytest
from fsl_sage import Simulation
from fsl_sage.flower import FlowerConfig, build_split, load_partition, load_test

from icml25_core import free_port, port_listening, process_group, wait_until

BIN = Path(sys.executable).parent
APP = Path(__file__).resolve().parents[1] / "examples" / "flower-app"
RUN = {
    "dataset": "digits", "num-clients": 2, "per-client": 120, "widths": "4,8", "rounds": 2,
    "batch-size": 16, "q": 2, "l": 1, "buffer-size": 60, "align-epochs": 3,
    "align-batch-size": 30, "num-test": 300,
}  # fmt: skip


def _value(v):
    return f"'{v}'" if isinstance(v, str) else str(v)


@pytest.mark.slow
def test_loopback_deployment_equals_round_schedule(tmp_path):
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "FLWR_HOME": str(tmp_path / "flwr-home"),
        "OMP_NUM_THREADS": "1",
    }
    link = free_port()
    home = Path(env["FLWR_HOME"])
    home.mkdir()
    (home / "config.toml").write_text(
        f'[superlink]\ndefault = "loop"\n\n[superlink.loop]\n'
        f'address = "127.0.0.1:{link}"\ninsecure = true\n'
    )
    result = tmp_path / "result.json"
    config = " ".join(f"{k}={_value(v)}" for k, v in {**RUN, "result-path": str(result)}.items())
    link_cmd = [
        str(BIN / "flower-superlink"), "--insecure", "--disable-runtime-dependency-installation",
        "--host", "127.0.0.1", "--port", str(link),
    ]  # fmt: skip
    with process_group(link_cmd, env=env, log=tmp_path / "superlink.log"):
        wait_until(lambda: port_listening(link), 60, "the SuperLink")
        nodes = [
            [
                str(BIN / "flower-supernode"),
                "--insecure",
                "--superlink",
                f"127.0.0.1:{link}",
                "--port",
                str(free_port()),
                "--node-config",
                f"partition-id={i} num-partitions=2",
            ]
            for i in range(2)
        ]
        with (
            process_group(nodes[0], env=env, log=tmp_path / "supernode0.log"),
            process_group(nodes[1], env=env, log=tmp_path / "supernode1.log"),
        ):
            cmd = [str(BIN / "flwr"), "run", str(APP), "loop", "--stream", "--run-config", config]
            with process_group(cmd, env=env, log=tmp_path / "run.log") as run:
                run.wait(timeout=400)
            wait_until(result.exists, 60, "the ServerApp's result")
    assert run.returncode == 0, (tmp_path / "run.log").read_text(errors="replace")[-3000:]
    summary = json.loads(result.read_text())
    cfg = FlowerConfig.from_run_config(RUN)
    sim = Simulation(
        build_split(cfg), [load_partition(cfg, i, 2) for i in range(2)], cfg.algorithm(),
        schedule="round", batch_size=cfg.batch_size, seed=cfg.seed, test=load_test(cfg),
    )  # fmt: skip
    for _ in range(cfg.rounds):
        sim.run_round()
    assert summary["official_bytes"] == sim.meter.official_total()
    assert summary["bytes"] == sim.meter.as_dict()
    accs = [r["accuracy"] for r in summary["history"]]
    assert accs == pytest.approx(sim.history.accuracy, abs=1e-6)
    assert len(summary["client_metrics"]) == 2
