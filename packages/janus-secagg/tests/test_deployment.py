"""The example app (examples/flower-app) on Flower's deployment engine, end to end on loopback:
server B (``janus-secagg serve-b``: TLS with the pinned certificate, client certificates required,
state file), a SuperLink, three SuperNodes whose node config holds the trust anchors, and
``flwr run`` with server A's settings in the run config (issue 16).

Every process gets its own process group (``start_new_session``) and is ended by that group's
id, SIGTERM then SIGKILL, with bounded time-outs (DECISIONS.md 6): SuperNodes leave
``flower-superexec`` children.
"""

import json
import os
import sys
from pathlib import Path

import pytest
from janus_secagg import CommitmentKey, JanusParams, ServerB
from janus_secagg.serving import start_server, stop_server
from janus_secagg.testing import Deployment

from icml25_core import free_port, port_listening, process_group, wait_until

BIN = Path(sys.executable).parent
APP = Path(__file__).resolve().parents[1] / "examples" / "flower-app"
NODES = 3


def _tail(path, n=3000):
    return Path(path).read_text(errors="replace")[-n:] if Path(path).exists() else ""


@pytest.mark.slow
def test_example_app_on_the_deployment_engine(tmp_path):
    params = JanusParams(dim=784 * 10 + 10)
    dep = Deployment(tmp_path / "dep", params, NODES)
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "FLWR_HOME": str(tmp_path / "flwr-home"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "OMP_NUM_THREADS": "1",
    }
    # the generators, derived once into the cache every process reads (else each derives them)
    CommitmentKey.derive(params, cache_dir=str(tmp_path / "cache" / "janus-secagg"))
    link_port = free_port()
    home = Path(env["FLWR_HOME"])
    home.mkdir()
    (home / "config.toml").write_text(
        f'[superlink]\ndefault = "loop"\n\n[superlink.loop]\n'
        f'address = "127.0.0.1:{link_port}"\ninsecure = true\n'
    )
    state = tmp_path / "b-state.jsonl"
    result_path = tmp_path / "result.json"
    b_proc, b_port = start_server(
        dep.serve_args("b", "--state-file", str(state), "--tls-client-ca", str(dep.paths["ca"]))
    )
    try:
        link_cmd = [
            str(BIN / "flower-superlink"), "--insecure",
            "--disable-runtime-dependency-installation",
            "--host", "127.0.0.1", "--port", str(link_port),
        ]  # fmt: skip
        with process_group(link_cmd, env=env, log=tmp_path / "superlink.log"):
            wait_until(lambda: port_listening(link_port), 60, "the SuperLink")
            node_cmds = [
                [
                    str(BIN / "flower-supernode"), "--insecure", "--superlink",
                    f"127.0.0.1:{link_port}", "--port", str(free_port()), "--node-config",
                    f"partition-id={i} num-partitions={NODES} "
                    f"janus-enrolment='{dep.paths['enrolment']}' janus-operator='{dep.operator}' "
                    f"janus-key-file='{dep.paths[f'client_{i}']}' "
                    f"janus-b-address='127.0.0.1:{b_port}' "
                    f"janus-tls-cert='{dep.paths['client.pem']}' "
                    f"janus-tls-key='{dep.paths['client.key']}'",
                ]
                for i in range(NODES)
            ]  # fmt: skip
            with (
                process_group(node_cmds[0], env=env, log=tmp_path / "supernode0.log"),
                process_group(node_cmds[1], env=env, log=tmp_path / "supernode1.log"),
                process_group(node_cmds[2], env=env, log=tmp_path / "supernode2.log"),
            ):
                run_config = (
                    f"num-rounds=2 train-images=3000 min-nodes={NODES} "
                    f"result-path='{result_path}' janus-operator='{dep.operator}' "
                    f"janus-a-key-file='{dep.paths['a_key']}' "
                    f"janus-enrolment='{dep.paths['enrolment']}' "
                    f"janus-b-address='127.0.0.1:{b_port}' "
                    f"janus-tls-cert='{dep.paths['client.pem']}' "
                    f"janus-tls-key='{dep.paths['client.key']}'"
                )
                run_cmd = [str(BIN / "flwr"), "run", str(APP), "loop", "--stream",
                           "--run-config", run_config]  # fmt: skip
                with process_group(run_cmd, env=env, log=tmp_path / "run.log") as run:
                    run.wait(timeout=400)
                wait_until(result_path.exists, 60, "the ServerApp's result")
    finally:
        stop_server(b_proc)
    assert run.returncode == 0, _tail(tmp_path / "run.log")
    summary = json.loads(result_path.read_text())
    assert summary["participants"] == [NODES, NODES]  # every enrolled node in U, both rounds
    assert len(summary["accuracy"]) == 3  # before round 1, after rounds 1 and 2
    assert summary["accuracy"][0] == pytest.approx(0.1)  # the zero model predicts class 0
    assert summary["accuracy"][-1] > 0.5  # 10 classes: chance is 0.1
    # B's persisted record: the co-signed model pin and one answer per round, each over U
    b = ServerB(params, dep.kb, dep.ka.public, state=state, enrolment=dep.enrolment)
    assert b.model_pin is not None
    assert b.model_pin.round_id == 1
    assert sorted(b.outputs) == [1, 2]
    assert all(set(answer.ids) == dep.enrolment.client_ids for answer in b.outputs.values())
