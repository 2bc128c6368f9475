"""Test-only helpers: a trapdoored commitment key, fault-injecting servers (spec §3), and a
throwaway deployment (operator, keys, CA, certificates, enrolment file) for loopback tests.

Never use these in a deployment: the trapdoor key breaks binding (whoever knows the trapdoor
opens a commitment to anything), the faulty servers cheat on purpose, and the throwaway CA's
key lies in a temporary folder. Run a faulty server as a process with
``python -m janus_secagg.testing serve-a|serve-b --fault NAME ...``.
"""

import argparse
import dataclasses
import datetime
import ipaddress
import os
import secrets
import sys
from pathlib import Path

import numpy as np
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from py_arkworks_bls12381 import Scalar

from .client import JanusClient
from .commitment import Commitment, CommitmentKey, _generator
from .enrolment import Enrolment
from .keys import ClientKeys, ServerKeys
from .messages import Authorization, ParticipantSet
from .net import Remote
from .params import GROUP_ORDER, JanusParams
from .server import ServerA, ServerB
from .serving import add_server_arguments, serve

#: Faults of server A: +1 on Y_0, +1 on P_A, C_U off by one client's commitment, B given a
#: different U than A publishes, a published U other than the one summed, a broken signature,
#: and "exclude": one honest client silently left out of U, consistently for A and B.
FAULTS_A = ("y", "p_a", "c_u", "u_b", "ids", "signature", "exclude")
#: Faults of server B: +1 on R_0, -1 on P_B.
FAULTS_B = ("r", "p_b")


def trapdoor_key(params: JanusParams) -> tuple[CommitmentKey, list[int]]:
    """A key with G_j = a_j · H for known random a_j (returned): commitments are equivocable.

    Used to prove hiding: with the trapdoor, ρ' = ρ + Σ_j a_j (x_j − x'_j) mod r makes
    commit(x', ρ') == commit(x, ρ).
    """
    h = _generator(params.domain, b"H", 0)
    trapdoor = [secrets.randbelow(GROUP_ORDER) for _ in range(params.length)]
    gens = tuple(h * Scalar(a) for a in trapdoor)
    return CommitmentKey(gens, h, params.domain), trapdoor


def _resign(server, agg, **changes):
    unsigned = dataclasses.replace(agg, signature=b"", **changes)
    signature = server.keys.sign(unsigned.payload(server.params.context))
    return dataclasses.replace(unsigned, signature=signature)


class FaultyServerA(ServerA):
    """Server A that applies one fault of ``FAULTS_A`` to every round and signs the result."""

    def __init__(self, params, keys, fault: str, round_id: int = 1, *, enrolment=None):
        if fault not in FAULTS_A:
            raise ValueError(f"`fault` must be one of {FAULTS_A}, got {fault!r}")
        super().__init__(params, keys, round_id, enrolment=enrolment)
        self.fault = fault

    def participants(self, u_b) -> ParticipantSet:
        honest = super().participants(u_b)
        if self.fault not in ("u_b", "exclude"):
            return honest
        ids = honest.ids[1:]
        unsigned = ParticipantSet(honest.round_id, ids, b"")
        pset = ParticipantSet(
            honest.round_id, ids, self.keys.sign(unsigned.payload(self.params.context))
        )
        if self.fault == "exclude":  # A then sums over the smaller U too: consistent
            self._participants = pset
        return pset

    def aggregate(self, round_id: int):
        assert self._participants is not None  # participants() ran
        first: Commitment = self._inbox[self._participants.ids[0]][-1]
        out = super().aggregate(round_id)
        vector = out.vector.copy()
        if self.fault == "y":
            vector[0] += 1
            out = _resign(self, out, vector=vector)
        elif self.fault == "p_a":
            out = _resign(self, out, blinding=(out.blinding + 1) % GROUP_ORDER)
        elif self.fault == "c_u":
            out = _resign(self, out, commitment=out.commitment + first)
        elif self.fault == "ids":
            out = _resign(self, out, ids=out.ids[:-1])
        elif self.fault == "signature":
            out = dataclasses.replace(out, signature=bytes(64))
        self.outputs[round_id] = out
        return out


class FaultyServerB(ServerB):
    """Server B that applies one fault of ``FAULTS_B`` to every round and signs the result."""

    def __init__(self, params, keys, a_pub, fault: str, round_id: int = 1, *, enrolment=None):
        if fault not in FAULTS_B:
            raise ValueError(f"`fault` must be one of {FAULTS_B}, got {fault!r}")
        super().__init__(params, keys, a_pub, round_id, enrolment=enrolment)
        self.fault = fault

    def aggregate(self, participants):
        out = super().aggregate(participants)
        if self.fault == "r":
            vector = out.vector.copy()
            vector[0] += 1
            out = _resign(self, out, vector=vector)
        else:
            out = _resign(self, out, blinding=(out.blinding - 1) % GROUP_ORDER)
        self.outputs[participants.round_id] = out
        return out


class Federation:
    """Honest servers A and B and n registered clients, all in this process."""

    def __init__(self, params, ck, n, servers=None):
        self.params, self.ck = params, ck
        self.ka, self.kb = ServerKeys.generate(), ServerKeys.generate(box=True)
        if servers is None:
            self.A, self.B = ServerA(params, self.ka), ServerB(params, self.kb, self.ka.public)
        else:
            self.A, self.B = servers(params, self.ka, self.kb)
        self.clients = [self.join() for _ in range(n)]

    def join(self):
        client = JanusClient(
            self.params, ClientKeys.generate(), self.ka.public, self.kb.public, self.ck
        )
        self.A.register(client.keys.public)
        self.B.register(client.keys.public)
        return client

    def run_round(self, round_id, xs, to_a=None, to_b=None):
        """Clients seal encoded vectors `xs`; `to_a`/`to_b` are the indices reaching A/B."""
        n = len(xs)
        to_a = range(n) if to_a is None else to_a
        to_b = range(n) if to_b is None else to_b
        msgs = [
            self.clients[i].seal(
                xs[i], os.urandom(32), round_id, *np.random.default_rng(i).integers(1, 2**62, 2)
            )
            for i in range(n)
        ]
        for i in to_a:
            self.A.receive(msgs[i][0])
        for i in to_b:
            self.B.receive(msgs[i][1])
        pset = self.A.participants(self.B.bindings)
        agg_b = self.B.aggregate(pset)
        agg_a = self.A.aggregate(round_id)
        return agg_a, agg_b, msgs


def random_codes(params, rng, n):
    """n valid encodings (quantize's range) with random weights in [1, 50]."""
    weights = rng.integers(1, 51, size=n)
    body = rng.integers(0, params.max_code + 1, size=(n, params.dim)) * weights[:, None]
    return np.concatenate([body, weights[:, None]], axis=1).astype(np.int64)


def throwaway_certificates(folder, names=("a", "b"), hosts=("127.0.0.1", "localhost")):
    """A throwaway CA and, per name, a leaf certificate it signs, made with ``cryptography``
    (ECDSA P-256, valid one day, SAN = `hosts`).

    Writes ``ca.pem`` and ``<name>.pem`` / ``<name>.key`` (PEM, key unencrypted) into `folder`;
    returns the folder as a ``Path``. For loopback tests only.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "janus-secagg throwaway CA")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    (folder / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    sans = [
        x509.IPAddress(ipaddress.ip_address(h)) if h[0].isdigit() else x509.DNSName(h)
        for h in hosts
    ]
    for name in names:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"janus-secagg {name}")])
        cert = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256())
        )  # fmt: skip
        (folder / f"{name}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (folder / f"{name}.key").write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ))  # fmt: skip
    return folder


class Deployment:
    """A complete throwaway deployment in `folder`: operator key, A's and B's keys, `n` client
    keys, a CA with TLS certificates for A and B (`tls`), and the signed enrolment file.

    Attributes: ``operator`` (hex verify key), ``enrolment`` (``Enrolment``), ``paths`` (dict:
    enrolment, a_key, b_key, client_<i>, <name>.pem/.key, ca), ``clients`` (``ClientKeys``).
    """

    def __init__(self, folder, params: JanusParams, n: int, tls: bool = True):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.params = params
        operator = ClientKeys.generate()
        self.operator = operator.public.to_bytes().hex()
        self.ka, self.kb = ServerKeys.generate(), ServerKeys.generate(box=True)
        self.paths = {"enrolment": self.folder / "enrolment.json",
                      "a_key": self.folder / "a.key", "b_key": self.folder / "b.key"}  # fmt: skip
        self.ka.save(self.paths["a_key"])
        self.kb.save(self.paths["b_key"])
        self.clients = [ClientKeys.generate() for _ in range(n)]
        for i, client in enumerate(self.clients):
            self.paths[f"client_{i}"] = self.folder / f"client-{i}.key"
            client.save(self.paths[f"client_{i}"])
        certs = {}
        if tls:
            throwaway_certificates(self.folder / "tls", ("a", "b", "client"))
            for name in ("a", "b", "client"):
                for ext in ("pem", "key"):
                    self.paths[f"{name}.{ext}"] = self.folder / "tls" / f"{name}.{ext}"
            self.paths["ca"] = self.folder / "tls" / "ca.pem"
            certs = {f"{r}_certificate": self.paths[f"{r}.pem"].read_text() for r in "ab"}
        self.enrolment = Enrolment.create(
            operator.signing, params, self.ka.public, self.kb.public,
            [c.public for c in self.clients], **certs,
        )  # fmt: skip
        self.enrolment.save(self.paths["enrolment"])
        self.tls = tls

    def serve_args(self, role: str, *extra, module: str = "janus_secagg") -> list[str]:
        """Arguments of ``python -m <module> serve-<role>`` for this deployment (`module`
        ``janus_secagg.testing`` runs a faulty server: add ``--fault NAME`` to `extra`); the
        servers keep their records in memory unless `extra` names a ``--state-file``."""
        args = ["-m", module, f"serve-{role}", "--enrolment",
                str(self.paths["enrolment"]), "--operator", self.operator, "--key-file",
                str(self.paths[f"{role}_key"])]  # fmt: skip
        if self.tls:
            args += ["--tls-cert", str(self.paths[f"{role}.pem"]), "--tls-key",
                     str(self.paths[f"{role}.key"])]  # fmt: skip
        else:
            args.append("--insecure")
        if "--state-file" not in extra:
            args.append("--no-state-file")
        return [*args, *extra]

    def remote(self, role: str, port: int, timeout: float = 60.0) -> Remote:
        """A stub of server `role` on 127.0.0.1:`port`, TLS-pinned as a client would."""
        return Remote.to_server(self.enrolment, role, "127.0.0.1", port, timeout=timeout)

    def authorize(self, request: str, round_id: int) -> Authorization:
        """A's signed `request` ("close", "received", "bindings") for round `round_id`."""
        return Authorization.sign(self.ka, self.params.context, request, round_id)

    def janus_clients(self, ck) -> list[JanusClient]:
        """A ``JanusClient`` per enrolled key."""
        return [JanusClient.from_enrolment(self.enrolment, c, ck) for c in self.clients]


def main(argv=None) -> int:
    """``python -m janus_secagg.testing serve-a|serve-b --fault NAME [serve options]``."""
    parser = argparse.ArgumentParser(prog="janus_secagg.testing")
    parser.add_argument("role", choices=("serve-a", "serve-b"))
    parser.add_argument("--fault", required=True, choices=FAULTS_A + FAULTS_B)
    add_server_arguments(parser)
    args = parser.parse_args(argv)
    role = args.role[-1]

    def make(role, enrolment, keys, state=None):
        if role == "a":
            return FaultyServerA(enrolment.params, keys, args.fault, enrolment=enrolment)
        return FaultyServerB(enrolment.params, keys, enrolment.a, args.fault, enrolment=enrolment)

    return serve(role, args, make)


if __name__ == "__main__":
    sys.exit(main())
