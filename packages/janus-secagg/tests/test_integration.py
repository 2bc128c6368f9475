"""Spec §5 test 15: servers A and B as two OS processes on 127.0.0.1 (ephemeral ports), 8 clients,
3 rounds, one dropout, exact result; then a fault-injecting A: every client refuses.
Each server runs in its own process group, ended by group id with bounded time-outs."""

import socket

import numpy as np
import pytest
from janus_secagg import (
    AggA,
    AggB,
    ClientKeys,
    CommitmentKey,
    JanusClient,
    JanusParams,
    ServerKeys,
    VerificationError,
    quantize,
)
from janus_secagg.net import Remote, start_server, stop_server

DIM = 64


def _start_pair(tmp_path, a_module):
    ka = ServerKeys.generate()
    key_file = tmp_path / "a.key"
    ka.save(key_file)
    common = ["--dim", str(DIM), "--linger", "30"]
    b_proc, b_port = start_server(
        ["-m", "janus_secagg", "serve-b", "--a-pub", ka.public.sign.hex(), *common]
    )
    procs = [b_proc]
    try:
        a_proc, a_port = start_server(
            [*a_module, "--key-file", str(key_file), "--b-port", str(b_port), *common]
        )
        procs.append(a_proc)
    except RuntimeError:
        stop_server(b_proc)
        raise
    return procs, Remote("127.0.0.1", a_port, timeout=30), Remote("127.0.0.1", b_port, timeout=30)


@pytest.fixture
def network(tmp_path):
    started = []

    def start(a_module):
        procs, a, b = _start_pair(tmp_path, a_module)
        started.extend(procs)
        return a, b

    yield start
    for proc in started:
        stop_server(proc)


def _clients(a, b, params, ck, n):
    a_pub, b_pub = a.keys(), b.keys()
    clients = []
    for _ in range(n):
        client = JanusClient(params, ClientKeys.generate(), a_pub, b_pub, ck)
        a.register(client.keys.public)
        b.register(client.keys.public)
        clients.append(client)
    return clients


def test_two_server_processes_exact_with_dropout_then_faulty_a_detected(network):
    params = JanusParams(dim=DIM)
    ck = CommitmentKey.derive(params)
    rng = np.random.default_rng(17)
    a, b = network(["-m", "janus_secagg", "serve-a"])
    clients = _clients(a, b, params, ck, 8)
    for round_id in (1, 2, 3):
        us = rng.normal(size=(8, DIM))
        ws = rng.integers(1, 100, size=8)
        dropout = 7 if round_id == 2 else None  # reaches A, drops before B
        for i, client in enumerate(clients):
            to_a, to_b = client.prepare(us[i], int(ws[i]), round_id)
            a.submit(to_a)
            if i != dropout:
                b.submit(to_b)
        a.close_round(round_id)
        kept = [i for i in range(8) if i != dropout]
        expected = sum(quantize(us[i], int(ws[i]), params) for i in kept)
        agg_a, agg_b = a.fetch(round_id, AggA), b.fetch(round_id, AggB)
        for client in clients:
            assert np.array_equal(client.verify(agg_a, agg_b).astype(np.int64), expected)

    a, b = network(["-m", "janus_secagg.testing", "serve-a", "--fault", "y"])
    clients = _clients(a, b, params, ck, 8)
    for client in clients:
        to_a, to_b = client.prepare(rng.normal(size=DIM), 1, 1)
        a.submit(to_a)
        b.submit(to_b)
    a.close_round(1)
    agg_a, agg_b = a.fetch(1, AggA), b.fetch(1, AggB)
    for client in clients:
        with pytest.raises(VerificationError):
            client.verify(agg_a, agg_b)


def test_servers_answer_malformed_requests_and_keep_serving(network):
    # trial findings F5, F14, F15 over TCP: an empty frame used to crash the handler with a
    # traceback; a retried client's inconsistent pair is left out of U by A, not fatal
    a, b = network(["-m", "janus_secagg", "serve-a"])
    with socket.create_connection((a.host, a.port), timeout=10) as sock:
        sock.sendall(b"\x00\x00\x00\x00")
        reply = sock.recv(1000)
    assert reply[4] == 3
    assert b"empty request" in reply
    with pytest.raises(TypeError, match="msg"):
        a.submit(None)
    params = JanusParams(dim=DIM)
    ck = CommitmentKey.derive(params)
    clients = _clients(a, b, params, ck, 4)
    us = np.random.default_rng(3).uniform(-1, 1, (4, DIM))
    for i, client in enumerate(clients):
        to_a, to_b = client.prepare(us[i], 1, 1)
        a.submit(to_a)
        if i == 0:
            to_b = client.prepare(us[i], 1, 1)[1]  # a retry reaches B only
        b.submit(to_b)
    assert a.close_round(1).count == 3
    agg_a, agg_b = a.fetch(1, AggA), b.fetch(1, AggB)
    assert np.abs(clients[1].finalize(agg_a, agg_b) - us[1:].mean(0)).max() <= 2.0**-17


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"host": "127.0.0.1", "port": 70000}, ValueError, "port"),
        ({"host": "127.0.0.1", "port": "1"}, TypeError, "port"),
        ({"host": None, "port": 1}, TypeError, "host"),
        ({"host": "127.0.0.1", "port": 1, "timeout": 0}, ValueError, "timeout"),
    ],
)
def test_remote_rejects_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        Remote(**kwargs)
