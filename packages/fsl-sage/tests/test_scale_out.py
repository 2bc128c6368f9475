"""Scale-out on Flower's deployment engine (slow, runs in CI): a SuperLink and two SuperNodes on
loopback run ``examples/flower-app`` with ``flwr run`` and must give the bytes and accuracies of
the "round" schedule. Every process started here gets its own process group and is ended by that
group's id (SIGTERM, then SIGKILL), with bounded time-outs (DECISIONS 6)."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from fsl_sage import Simulation
from fsl_sage.flower import FlowerConfig, build_split, load_partition, load_test

BIN = Path(sys.executable).parent
APP = Path(__file__).resolve().parents[1] / "examples" / "flower-app"
RUN = {
    "dataset": "digits", "num-clients": 2, "per-client": 120, "widths": "4,8", "rounds": 2,
    "batch-size": 16, "q": 2, "l": 1, "buffer-size": 60, "align-epochs": 3,
    "align-batch-size": 30, "num-test": 300,
}  # fmt: skip


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _wait(predicate, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.5)
    raise TimeoutError(f"timed out waiting for {what}")


@contextmanager
def _group(cmd, env, log_path):
    """Run ``cmd`` in its own process group; end the whole group on exit."""
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            yield proc
        finally:
            for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue


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
    link = _port()
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
    with _group(link_cmd, env, tmp_path / "superlink.log"):
        _wait(lambda: _listening(link), 60, "the SuperLink")
        nodes = [
            [
                str(BIN / "flower-supernode"),
                "--insecure",
                "--superlink",
                f"127.0.0.1:{link}",
                "--port",
                str(_port()),
                "--node-config",
                f"partition-id={i} num-partitions=2",
            ]
            for i in range(2)
        ]
        with (
            _group(nodes[0], env, tmp_path / "supernode0.log"),
            _group(nodes[1], env, tmp_path / "supernode1.log"),
        ):
            cmd = [str(BIN / "flwr"), "run", str(APP), "loop", "--stream", "--run-config", config]
            with _group(cmd, env, tmp_path / "run.log") as run:
                run.wait(timeout=400)
            _wait(result.exists, 60, "the ServerApp's result")
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
