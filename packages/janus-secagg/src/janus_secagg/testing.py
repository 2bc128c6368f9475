"""Test-only helpers: a trapdoored commitment key and fault-injecting servers (spec §3).

Never use these in a deployment: the trapdoor key breaks binding (whoever knows the trapdoor
opens a commitment to anything), and the faulty servers cheat on purpose. Run a faulty server
as a process with ``python -m janus_secagg.testing serve-a|serve-b --fault NAME ...``.
"""

import argparse
import dataclasses
import os
import secrets
import sys

import numpy as np
from py_arkworks_bls12381 import Scalar

from .client import JanusClient
from .commitment import Commitment, CommitmentKey, _generator
from .keys import ClientKeys, ServerKeys
from .messages import ParticipantSet
from .net import add_server_arguments, serve
from .params import GROUP_ORDER, JanusParams
from .server import ServerA, ServerB

#: Faults of server A: +1 on Y_0, +1 on P_A, C_U off by one client's commitment, B given a
#: different U than A publishes, a wrong digest of U, a wrong |U|, a broken signature.
FAULTS_A = ("y", "p_a", "c_u", "u_b", "digest", "count", "signature")
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

    def __init__(self, params, keys, fault: str, round_id: int = 1):
        if fault not in FAULTS_A:
            raise ValueError(f"`fault` must be one of {FAULTS_A}, got {fault!r}")
        super().__init__(params, keys, round_id)
        self.fault = fault

    def participants(self, u_b) -> ParticipantSet:
        honest = super().participants(u_b)
        if self.fault != "u_b":
            return honest
        ids = honest.ids[1:]
        unsigned = ParticipantSet(honest.round_id, ids, b"")
        return ParticipantSet(
            honest.round_id, ids, self.keys.sign(unsigned.payload(self.params.context))
        )

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
        elif self.fault == "digest":
            out = _resign(self, out, u_digest=bytes(32))
        elif self.fault == "count":
            out = _resign(self, out, count=out.count + 1)
        elif self.fault == "signature":
            out = dataclasses.replace(out, signature=bytes(64))
        self.outputs[round_id] = out
        return out


class FaultyServerB(ServerB):
    """Server B that applies one fault of ``FAULTS_B`` to every round and signs the result."""

    def __init__(self, params, keys, a_pub, fault: str, round_id: int = 1):
        if fault not in FAULTS_B:
            raise ValueError(f"`fault` must be one of {FAULTS_B}, got {fault!r}")
        super().__init__(params, keys, a_pub, round_id)
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


def main(argv=None) -> int:
    """``python -m janus_secagg.testing serve-a|serve-b --fault NAME [serve options]``."""
    parser = argparse.ArgumentParser(prog="janus_secagg.testing")
    parser.add_argument("role", choices=("serve-a", "serve-b"))
    parser.add_argument("--fault", required=True, choices=FAULTS_A + FAULTS_B)
    add_server_arguments(parser)
    args = parser.parse_args(argv)
    role = args.role[-1]

    def make(role, params, keys, a_pub):
        if role == "a":
            return FaultyServerA(params, keys, args.fault)
        return FaultyServerB(params, keys, a_pub, args.fault)

    return serve(role, args, make)


if __name__ == "__main__":
    sys.exit(main())
