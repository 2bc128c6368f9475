"""The operator-signed enrolment file (issue 16, hole 3): signing, tampering, the keygen / enrol
commands, and bad input."""

import json
import re

import numpy as np
import pytest
from janus_secagg import (
    ClientKeys,
    ClientPublicKey,
    CommitmentKey,
    Enrolment,
    EnrolmentError,
    JanusParams,
    ServerKeys,
)
from janus_secagg.cli import main
from janus_secagg.testing import throwaway_certificates
from nacl.signing import SigningKey


@pytest.fixture
def parts(params):
    ka, kb = ServerKeys.generate(), ServerKeys.generate(box=True)
    return (
        SigningKey.generate(),
        params,
        ka.public,
        kb.public,
        [ClientKeys.generate().public for _ in range(3)],
    )


def test_round_trip_checks_the_operator_signature(parts, tmp_path):
    operator, params, a, b, clients = parts
    certs = throwaway_certificates(tmp_path / "tls")
    enrolment = Enrolment.create(
        operator, params, a, b, clients, b_certificate=(certs / "b.pem").read_text()
    )
    enrolment.save(tmp_path / "e.json")
    loaded = Enrolment.load(tmp_path / "e.json", bytes(operator.verify_key).hex())
    assert loaded == enrolment
    assert loaded.client_ids == {c.client_id for c in clients}
    assert loaded.a_certificate is None
    assert "BEGIN CERTIFICATE" in loaded.b_certificate


@pytest.mark.parametrize(
    "tamper",
    [
        lambda body: body["clients"].append(ClientKeys.generate().public.to_bytes().hex()),
        lambda body: body["params"].update(min_clients=2),
        lambda body: body.update(b=ServerKeys.generate(box=True).public.to_bytes().hex()),
        lambda body: body.update(b_certificate=None),
    ],
    ids=["sybil-added", "threshold-lowered", "b-key-swapped", "tls-pin-dropped"],
)
def test_any_change_after_signing_is_refused(parts, tmp_path, tamper):
    operator, *rest = parts
    certs = throwaway_certificates(tmp_path / "tls")
    Enrolment.create(operator, *rest, b_certificate=(certs / "b.pem").read_text()).save(
        tmp_path / "e.json"
    )
    record = json.loads((tmp_path / "e.json").read_text())
    tamper(record["enrolment"])
    (tmp_path / "e.json").write_text(json.dumps(record))
    with pytest.raises(EnrolmentError, match="not signed by the operator"):
        Enrolment.load(tmp_path / "e.json", bytes(operator.verify_key))


def test_another_operators_list_is_refused(parts, tmp_path):
    Enrolment.create(*parts).save(tmp_path / "e.json")
    with pytest.raises(EnrolmentError, match="not signed by the operator"):
        Enrolment.load(tmp_path / "e.json", bytes(SigningKey.generate().verify_key))


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"clients": []}, ValueError, "min_clients"),
        ({"b": ServerKeys.generate().public}, ValueError, "box key"),
        ({"a": "key"}, TypeError, "`a`"),
        ({"clients": ["x"]}, TypeError, "ClientPublicKey"),
        ({"b_certificate": "not pem"}, ValueError, "b_certificate"),
        ({"operator_key": b"k"}, TypeError, "operator_key"),
    ],
)
def test_create_rejects_bad_input(parts, change, error, match):
    operator, params, a, b, clients = parts
    args = {"operator_key": operator, "params": params, "a": a, "b": b, "clients": clients}
    args.update(change)
    with pytest.raises(error, match=match):
        Enrolment.create(**args)


def test_create_rejects_a_repeated_key_and_mixed_roles(parts, tmp_path):
    operator, params, a, b, clients = parts
    with pytest.raises(ValueError, match=f"key {clients[0].sign.hex()} twice"):
        Enrolment.create(operator, params, a, b, clients + clients[:1])
    # trial finding (issue 16): the operator's or a server's key enrolled as a client, one
    # certificate pinned for both servers
    own = ClientPublicKey(bytes(operator.verify_key))
    with pytest.raises(ValueError, match="operator's own key"):
        Enrolment.create(operator, params, a, b, [*clients, own])
    with pytest.raises(ValueError, match="server A's key"):
        Enrolment.create(operator, params, a, b, [*clients, ClientPublicKey(a.sign)])
    pem = (throwaway_certificates(tmp_path / "tls") / "a.pem").read_text()
    with pytest.raises(ValueError, match="same: one per server"):
        Enrolment.create(operator, params, a, b, clients, a_certificate=pem, b_certificate=pem)


@pytest.mark.parametrize(
    ("content", "operator", "match"),
    [
        ("{", None, "not an enrolment file"),
        ('{"enrolment": {}, "signature": "00"}', None, "not a janus-secagg-enrolment"),
        (None, "zz", "hex verify key"),
        (None, "00", "32-byte"),
    ],
)
def test_load_rejects_bad_files_and_keys(tmp_path, content, operator, match):
    path = tmp_path / "e.json"
    path.write_text(content or "{}")
    with pytest.raises(EnrolmentError, match=match):
        Enrolment.load(path, operator or bytes(32))
    with pytest.raises(EnrolmentError, match=r"cannot|not an enrolment"):
        Enrolment.load(tmp_path / "missing.json", bytes(32))


def test_keygen_and_enrol_commands(tmp_path, capsys):
    def run(*argv):
        assert main([str(a) for a in argv]) == 0, capsys.readouterr().err
        return capsys.readouterr().out.strip().splitlines()[-1]

    operator = run("keygen", "--role", "operator", "--out", tmp_path / "op.key")
    a_pub = run("keygen", "--role", "a", "--out", tmp_path / "a.key")
    b_pub = run("keygen", "--role", "b", "--out", tmp_path / "b.key")
    clients = [run("keygen", "--role", "client", "--out", tmp_path / f"c{i}.key") for i in range(3)]
    (tmp_path / "clients.txt").write_text(f"# site keys\n{clients[0]}\n{clients[1]}  # site 2\n")
    certs = throwaway_certificates(tmp_path / "tls")
    line = run(
        "enrol", "--operator-key", tmp_path / "op.key", "--a-pub", a_pub, "--b-pub", b_pub,
        "--clients-file", tmp_path / "clients.txt", "--client", clients[2], "--dim", 10,
        "--b-cert", certs / "b.pem", "--out", tmp_path / "e.json",
    )  # fmt: skip
    assert "3 clients" in line
    assert "B pinned" in line
    enrolment = Enrolment.load(tmp_path / "e.json", operator)
    domain = enrolment.params.domain
    assert enrolment.params == JanusParams(dim=10, domain=domain)
    # every enrolment gets its own random domain: old deployments' signatures are void here
    assert domain.startswith(b"JANUS-SECAGG-v1/")
    assert len(domain) == len(b"JANUS-SECAGG-v1/") + 16
    assert enrolment.b == ServerKeys.load(tmp_path / "b.key").public
    assert enrolment.client_ids == {
        ClientKeys.load(tmp_path / f"c{i}.key").client_id for i in range(3)
    }
    assert (tmp_path / "op.key").stat().st_mode & 0o777 == 0o600
    assert run("pubkey", tmp_path / "op.key") == operator
    assert run("pubkey", tmp_path / "b.key") == b_pub
    # a key file is never replaced by accident
    assert main(["keygen", "--role", "client", "--out", str(tmp_path / "c0.key")]) == 2
    assert "--force" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--client", "zz"], "not 32 bytes of hex"),
        (["--a-pub", "00"], "--a-pub"),
        (["--b-cert", "{op}"], "b_certificate"),
        (["--min-clients", "9"], "min_clients"),
        (["--operator-key", "{missing}"], "cannot read"),
        # trial finding (issue 16): errors name the flags, not the fields or a bare Errno
        (["--dim", "0"], "`--dim` must be"),
        (["--min-clients", "1"], "`--min-clients`"),
        (["--clip", "1e-300"], "must be >= 1"),
        (["--clients-file", "{missing}"], "`--clients-file`"),
        (["--b-cert", "{missing}"], "`--b-cert`"),
        (["--operator-key", "{client}"], "`--operator-key`.*holds a client key"),
    ],
)
def test_enrol_rejects_bad_input(tmp_path, capsys, argv, match):
    paths = {"op": tmp_path / "op.key", "missing": tmp_path / "none", "client": tmp_path / "c.key"}
    ClientKeys.generate().save(paths["op"], "operator")
    ClientKeys.generate().save(paths["client"])
    base = {
        "--operator-key": str(paths["op"]),
        "--a-pub": ServerKeys.generate().public.to_bytes().hex(),
        "--b-pub": ServerKeys.generate(box=True).public.to_bytes().hex(),
        "--dim": "4",
        "--out": str(tmp_path / "e.json"),
    }
    extra = [a.format(**paths) for a in argv]
    for key in extra[::2]:
        base.pop(key, None)
    clients = [f"--client={ClientKeys.generate().public.to_bytes().hex()}" for _ in range(3)]
    args = ["enrol", *[x for kv in base.items() for x in kv], *clients, *extra]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert re.search(match, err), err
    assert "Traceback" not in err


def test_enrol_never_replaces_an_existing_file_without_force(tmp_path, capsys):
    """New-user trial: `enrol --out op.key` overwrote the operator's private key."""
    op = tmp_path / "op.key"
    ClientKeys.generate().save(op, "operator")
    secret = op.read_text()
    clients = [f"--client={ClientKeys.generate().public.to_bytes().hex()}" for _ in range(3)]
    a_pub = ServerKeys.generate().public.to_bytes().hex()
    b_pub = ServerKeys.generate(box=True).public.to_bytes().hex()
    argv = ["enrol", "--operator-key", str(op), "--a-pub", a_pub, "--b-pub", b_pub, "--dim", "4"]
    argv += clients
    assert main([*argv, "--out", str(op)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main([*argv, "--out", str(op), "--force"]) == 2  # attacker trial: not even with it
    assert "--force never replaces those" in capsys.readouterr().err
    tls_key = tmp_path / "b-tls.key"
    tls_key.write_text("-----BEGIN PRIVATE KEY-----\n...\n")
    clients_file = tmp_path / "clients.txt"
    clients_file.write_text("\n".join(c.split("=")[1] for c in clients) + "\n")
    for out in (tls_key, clients_file):  # third trial: a TLS key, an input file
        assert main([*argv, "--clients-file", str(clients_file), "--out", str(out), "--force"]) == 2
        assert "never replaces" in capsys.readouterr().err
    assert tls_key.read_text().startswith("-----BEGIN PRIVATE KEY-----")
    # keygen --force replaces a key of the same role only
    assert main(["keygen", "--role", "client", "--out", str(op), "--force"]) == 2
    assert "not a client key file" in capsys.readouterr().err
    assert op.read_text() == secret
    assert main(["keygen", "--role", "operator", "--out", str(op), "--force"]) == 0
    assert op.read_text() != secret
    assert main([*argv, "--out", str(tmp_path / "e.json")]) == 0
    assert main([*argv, "--out", str(tmp_path / "e.json"), "--force"]) == 0


def test_messages_of_one_deployment_are_void_in_another(params, ck):
    # attacker trial (issue 16): with the same context everywhere, a recorder replayed an old
    # run's messages and close into a B restarted with an empty record, and read an update
    from janus_secagg import Authorization, JanusClient, ProtocolError, ServerB, deployment_domain

    operator = SigningKey.generate()
    ka, kb = ServerKeys.generate(), ServerKeys.generate(box=True)
    keys = [ClientKeys.generate() for _ in range(3)]
    old, new = (
        Enrolment.create(
            operator,
            JanusParams(dim=params.dim, domain=deployment_domain()),
            ka.public,
            kb.public,
            [k.public for k in keys],
        )
        for _ in range(2)
    )
    assert old.params.context != new.params.context
    to_b = JanusClient.from_enrolment(old, keys[0], CommitmentKey.derive(old.params)).prepare(
        np.zeros(params.dim), 1, 1
    )[1]
    B = ServerB(new.params, kb, ka.public, enrolment=new)
    with pytest.raises(ProtocolError, match="invalid signature"):
        B.receive(to_b)
    close = Authorization.sign(ka, old.params.context, "bindings", 1)
    with pytest.raises(ProtocolError, match="not signed by server A"):
        B.check_authorization(close, "bindings")
