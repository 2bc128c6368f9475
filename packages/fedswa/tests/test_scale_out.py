"""Spec test 12 (slow, run in CI): Flower's simulation engine (Ray) and a loopback deployment.

Every process a test starts gets its own process group (``start_new_session``) and is ended by
that group's id, SIGTERM then SIGKILL, with bounded time-outs (DECISIONS.md 6): SuperNodes leave
``flower-superexec`` children, Ray leaves workers.
"""

import json
import os
import sys
from pathlib import Path

import pytest
import torch
from fedswa import get_algorithm, run_federated
from fedswa.flower.app import model_for, partition_data

from icml25_core import free_port, port_listening, process_group, wait_until

BIN = Path(sys.executable).parent
APP = Path(__file__).resolve().parents[1] / "examples" / "flower-app"


def _env(tmp_path):
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "FLWR_HOME": str(tmp_path / "flwr-home"),
        "OMP_NUM_THREADS": "1",
        "RAY_DEDUP_LOGS": "0",
    }


def _tail(path, n=3000):
    return Path(path).read_text(errors="replace")[-n:]


@pytest.mark.slow
def test_ray_simulation_equals_run_federated(tmp_path):
    settings = {
        "algorithm": "fedmoswa", "dataset": "digits", "num-rounds": 3, "local-steps": 10,
        "batch-size": 32, "seed": 0, "eta0": 0.05,
    }  # fmt: skip
    out = tmp_path / "simulation.pt"
    code = (
        "import torch\nfrom fedswa.flower.simulation import simulate\n"
        f"torch.save(simulate({settings!r}, num_supernodes=2), {str(out)!r})\n"
    )
    log = tmp_path / "simulation.log"
    with process_group([sys.executable, "-c", code], env=_env(tmp_path), log=log) as proc:
        proc.wait(timeout=400)
    assert proc.returncode == 0, _tail(log)
    result = torch.load(out, weights_only=False)
    parts = [partition_data("digits", i, 2, 0.5, 42) for i in range(2)]
    history = run_federated(
        lambda: model_for("digits"), parts, get_algorithm("fedmoswa"), rounds=3,
        clients_per_round=2, local_steps=10, batch_size=32, eta0=0.05, seed=0,
    )  # fmt: skip
    for k, v in history.state.model_state.items():
        torch.testing.assert_close(result["state"][k], v, atol=1e-6, rtol=0)
    for k, v in history.state.control.items():
        torch.testing.assert_close(result["control"][k], v, atol=1e-6, rtol=0)


@pytest.mark.slow
def test_loopback_deployment_two_supernodes_on_digits(tmp_path):
    env = _env(tmp_path)
    link_port = free_port()
    home = Path(env["FLWR_HOME"])
    home.mkdir()
    (home / "config.toml").write_text(
        f'[superlink]\ndefault = "loop"\n\n[superlink.loop]\n'
        f'address = "127.0.0.1:{link_port}"\ninsecure = true\n'
    )
    result_path = tmp_path / "result.json"
    link_cmd = [
        str(BIN / "flower-superlink"), "--insecure", "--disable-runtime-dependency-installation",
        "--host", "127.0.0.1", "--port", str(link_port),
    ]  # fmt: skip
    with process_group(link_cmd, env=env, log=tmp_path / "superlink.log"):
        wait_until(lambda: port_listening(link_port), 60, "the SuperLink")
        node_cmds = [
            [
                str(BIN / "flower-supernode"),
                "--insecure",
                "--superlink",
                f"127.0.0.1:{link_port}",
                "--port",
                str(free_port()),
                "--node-config",
                f"partition-id={i} num-partitions=2",
            ]
            for i in range(2)
        ]
        with (
            process_group(node_cmds[0], env=env, log=tmp_path / "supernode0.log"),
            process_group(node_cmds[1], env=env, log=tmp_path / "supernode1.log"),
        ):
            run_cmd = [
                str(BIN / "flwr"), "run", str(APP), "loop", "--stream", "--run-config",
                f"num-rounds=2 local-steps=50 eta0=0.1 result-path='{result_path}'",
            ]  # fmt: skip
            with process_group(run_cmd, env=env, log=tmp_path / "run.log") as run:
                run.wait(timeout=400)
            wait_until(result_path.exists, 60, "the ServerApp's result")
    assert run.returncode == 0, _tail(tmp_path / "run.log")
    summary = json.loads(result_path.read_text())
    assert len(summary["accuracy"]) == 3  # before round 1, after rounds 1 and 2
    assert summary["accuracy"][-1] > 0.5
    assert all(m["control-norm"] > 0 for m in summary["train"].values())  # c_i is non-zero
