"""TLS on the links to server B (issue 16): certificates pinned by the enrolment, optional client
certificates, a throwaway CA made with ``cryptography``; and the sybil refused over the network.
Each server runs in its own process group, ended by group id with bounded time-outs."""

import numpy as np
import pytest
from janus_secagg import CertificatePinError, ClientKeys, JanusClient, NotEnrolledError
from janus_secagg.cli import main
from janus_secagg.net import Remote
from janus_secagg.serving import start_server, stop_server
from janus_secagg.testing import Deployment, throwaway_certificates
from janus_secagg.tls import PinnedTLS


@pytest.fixture
def deployment(tmp_path, params):
    return Deployment(tmp_path / "dep", params, 3)


@pytest.fixture
def server_b(deployment):
    started = []

    def start(*extra):
        proc, port = start_server(deployment.serve_args("b", *extra))
        started.append(proc)
        return port

    yield start
    for proc in started:
        stop_server(proc)


def test_pinned_certificate_accepted_any_other_refused(deployment, server_b, tmp_path):
    port = server_b()
    assert deployment.remote("b", port).keys() == deployment.enrolment.b
    # a certificate from the same CA but not the pinned one, and one from another CA
    same_ca = deployment.paths["client.pem"].read_text()
    other_ca = (throwaway_certificates(tmp_path / "other", ("b",)) / "b.pem").read_text()
    for pem in (same_ca, other_ca):
        with pytest.raises(CertificatePinError, match=r"not the one the enrolment pins|other than"):
            Remote("127.0.0.1", port, tls=PinnedTLS(pem)).keys()
    with pytest.raises(ConnectionError):  # plain TCP to a TLS server gets no answer
        Remote("127.0.0.1", port, timeout=5).keys()


def test_a_man_in_the_middle_with_its_own_certificate_is_refused(deployment, tmp_path, params):
    """A second B-like server (the attacker's) with its own key and certificate: clients that
    hold the enrolment refuse it before sending anything."""
    rogue = Deployment(tmp_path / "rogue", params, 3)
    proc, port = start_server(rogue.serve_args("b"))
    try:
        with pytest.raises(CertificatePinError):
            deployment.remote("b", port).keys()
    finally:
        stop_server(proc)


def test_a_tls_client_of_a_plain_server_is_told_so(deployment, tmp_path, params):
    plain = Deployment(tmp_path / "plain", params, 3, tls=False)
    proc, port = start_server(plain.serve_args("b"))
    try:
        pinned = PinnedTLS(deployment.paths["b.pem"].read_text())
        with pytest.raises(ConnectionError, match="plain TCP"):
            Remote("127.0.0.1", port, timeout=30, tls=pinned).keys()
    finally:
        stop_server(proc)


def test_client_certificates_when_b_requires_them(deployment, server_b):
    port = server_b("--tls-client-ca", str(deployment.paths["ca"]))
    with pytest.raises(ConnectionError, match="client certificate"):
        deployment.remote("b", port, timeout=10).keys()
    remote = Remote.to_server(
        deployment.enrolment, "b", "127.0.0.1", port,
        client_cert=deployment.paths["client.pem"], client_key=deployment.paths["client.key"],
    )  # fmt: skip
    assert remote.keys() == deployment.enrolment.b


def test_sybil_refused_over_the_network(deployment, server_b, params, ck):
    b = deployment.remote("b", server_b())
    e = deployment.enrolment
    sybil = JanusClient(params, ClientKeys.generate(), e.a, e.b, ck)
    with pytest.raises(NotEnrolledError, match="enrolment"):
        b.submit(sybil.prepare(np.zeros(params.dim), 1, 1)[1])
    enrolled = deployment.janus_clients(ck)[0]
    b.submit(enrolled.prepare(np.zeros(params.dim), 1, 1)[1])
    assert b.received(deployment.authorize("received", 1)) == [enrolled.client_id]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"--tls-cert": "client.pem", "--tls-key": "client.key"}, "not the certificate the enrol"),
        ({"--tls-cert": None, "--tls-key": None, "--insecure": True}, "pins a TLS certificate"),
        ({"--tls-cert": None, "--tls-key": None}, "--insecure for plain TCP"),
        ({"--tls-key": "a.key"}, "tls_cert"),
        ({"--operator": ClientKeys.generate().public.to_bytes().hex()}, "not signed by the op"),
        ({"--key-file": "a_key"}, "holds server A's keys; serve-b needs its own"),
    ],
)
def test_serve_b_refuses_a_bad_setup(deployment, capsys, change, match):
    args = deployment.serve_args("b")[2:]
    pairs, flags = {}, []
    it = iter(args[1:])
    for key in it:
        if key in ("--insecure", "--no-state-file"):
            flags.append(key)
        else:
            pairs[key] = next(it)
    for key, value in change.items():
        if value is None:
            pairs.pop(key, None)
        elif value is True:
            flags.append(key)
        else:
            pairs[key] = str(deployment.paths.get(value, value))
    argv = [args[0], *[x for kv in pairs.items() for x in kv], *flags]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert any(m in err for m in match.split("|")), err
    assert "Traceback" not in err
