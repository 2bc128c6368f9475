"""The two non-colluding servers (spec §2 steps 4-6): A sums masked updates, B sums masks.

Each server drops unsigned, mis-signed, unknown, duplicate and stale messages, and signs
(t, |U|, SHA-256(sorted U), C_U, SHA-256(vector), P) and publishes U itself. B answers one
participant set per round, only if U ⊆ U_B and |U| >= t. Given an ``Enrolment`` (issue 16),
both servers accept exactly the operator's enrolled client keys. Servers do O(n l) additions and
no multi-scalar multiplication.
"""

import fcntl
import json
import logging
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO

import numpy as np
from nacl.exceptions import CryptoError
from nacl.public import SealedBox

from icml25_core import ResultStore, check_scalar

from .commitment import Commitment
from .enrolment import Enrolment
from .errors import NotEnrolledError, ProtocolError, ReplayError, UnauthorizedError
from .keys import SIGNATURE_BYTES, ClientPublicKey, ServerKeys, ServerPublicKeys, verify_signature
from .messages import (
    AggA,
    AggB,
    Authorization,
    ModelPin,
    ParticipantSet,
    ToA,
    ToB,
    digest,
    y_digest,
)
from .params import GROUP_ORDER, JanusParams
from .prg import SEED_BYTES, mask

log = logging.getLogger("janus_secagg.server")


def _binding(commitment: Commitment, y_hash: bytes, box_digest: bytes) -> bytes:
    """SHA-256 of what the client signed for both servers: (C, HMAC_{ρ^A}(y), SHA-256(box))."""
    return digest(commitment.to_bytes() + y_hash + box_digest)


class _Server(ABC):
    """Registration and the checks both servers apply to a client's message."""

    message_type: type[ToA] | type[ToB]  # set by each server
    role = ""  # "a" or "b": which key of the enrolment is this server's

    def __init__(self, params: JanusParams, keys: ServerKeys, round_id: int = 1, *, enrolment=None):
        if not isinstance(params, JanusParams):
            raise TypeError(f"`params` must be a JanusParams, got {type(params).__name__}")
        if not isinstance(keys, ServerKeys):
            raise TypeError(f"`keys` must be a ServerKeys, got {type(keys).__name__}")
        check_scalar(round_id, "round_id", kind=numbers.Integral, low=0, high=2**64 - 1)
        self.params, self.keys, self.round_id = params, keys, int(round_id)
        self._state: ResultStore | None = None
        self._lock: IO[str] | None = None
        self.model_pin: ModelPin | None = None
        self.clients: dict[int, ClientPublicKey] = {}
        self.outputs: dict[int, object] = {}
        self._inbox: dict[int, tuple] = {}  # client id -> what the round keeps of its message
        self.enrolment = enrolment
        if enrolment is not None:
            self._check_enrolment(enrolment)
            self.clients = {c.client_id: c for c in enrolment.clients}

    def _check_enrolment(self, enrolment) -> None:
        if not isinstance(enrolment, Enrolment):
            raise TypeError(f"`enrolment` must be an Enrolment, got {type(enrolment).__name__}")
        if enrolment.params != self.params:
            raise ValueError("`params` differ from the enrolment's JanusParams")
        if getattr(enrolment, self.role).sign != self.keys.public.sign:
            raise ValueError(
                f"`keys` are not server {self.role.upper()}'s keys on the enrolment list"
            )

    @property
    def public(self) -> ServerPublicKeys:
        return self.keys.public

    def register(self, client: ClientPublicKey) -> int:
        """Register a client's verify key (once, out of band); returns its id.

        A server made with an ``enrolment`` has registered every enrolled key already and
        refuses any other (``NotEnrolledError``): only the operator adds clients.
        """
        if not isinstance(client, ClientPublicKey):
            raise TypeError(f"`client` must be a ClientPublicKey, got {type(client).__name__}")
        if self.enrolment is not None:
            return self.enrolment.check_client(client)
        self.clients[client.client_id] = client
        return client.client_id

    @property
    @abstractmethod
    def a_verify_key(self) -> bytes:
        """Server A's Ed25519 verify key (this server's own for A)."""

    def check_authorization(self, authorization, request: str) -> None:
        """Refuse `request` ("close", "received", "bindings") unless `authorization` is A's
        signature on it for the open round (``messages.Authorization``; issue 16).

        Raises
        ------
        UnauthorizedError
            If `authorization` is not an ``Authorization`` for `request` and the open round
            signed by server A.
        """
        if not isinstance(authorization, Authorization) or authorization.request != request:
            raise UnauthorizedError(f"`{request}` needs server A's signed Authorization")
        if authorization.round_id != self.round_id:
            raise UnauthorizedError(
                f"`{request}` is authorized for round {authorization.round_id}, the open round "
                f"is {self.round_id}"
            )
        payload = authorization.payload(self.params.context)
        if not verify_signature(self.a_verify_key, payload, authorization.signature):
            raise UnauthorizedError(
                f"`{request}` is not signed by server A: only A's operator may close a round "
                "or read who submitted"
            )

    @property
    def received(self) -> list[int]:
        """Sorted ids of the clients whose message for the open round was accepted."""
        return sorted(self._inbox)

    @abstractmethod
    def _binding_of(self, msg) -> bytes:
        """SHA-256 of what the client signed for both servers, from its message to this one."""

    def _admit(self, msg) -> bool:
        """Check a client's message for the open round; True if the very same message was
        accepted before (a resend after a lost reply or a server restart: nothing to do)."""
        if not isinstance(msg, self.message_type):
            raise TypeError(f"`msg` must be a {self.message_type.__name__}")
        if msg.round_id < self.round_id:
            raise ReplayError(f"message of round {msg.round_id} after it closed")
        if msg.round_id != self.round_id:
            raise ProtocolError(f"message for round {msg.round_id}, open round {self.round_id}")
        client = self.clients.get(msg.client_id)
        if client is None and self.enrolment is not None:
            raise NotEnrolledError(f"client {msg.client_id} is not on the enrolment list")
        if client is None:
            raise ProtocolError(f"client {msg.client_id} is not registered")
        if not verify_signature(client.sign, msg.payload(self.params.context), msg.signature):
            raise ProtocolError(
                f"client {msg.client_id}: missing or invalid signature (a tampered message, or "
                "the client's JanusParams differ from this server's)"
            )
        if msg.client_id in self._inbox:
            if self._inbox[msg.client_id][2] == self._binding_of(msg):
                return True
            raise ProtocolError(
                f"client {msg.client_id} already sent another message in round {msg.round_id} "
                "(resend the same one: a new prepare is refused)"
            )
        return False

    def _open_state(self, path, output_cls, config: dict) -> ResultStore:
        """Open this server's record of published rounds (``state=``), locked against a second
        process, and restore it: the outputs come back and the round after the last opens."""
        path = Path(path)
        if path.exists() and not path.is_file():
            raise ValueError(f"`state` {path} is not a regular file")
        if not path.parent.is_dir():
            raise ValueError(f"`state` {path}: directory {path.parent} does not exist")
        lock = open(path, "a")  # noqa: SIM115 - held for the server's lifetime
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            raise ValueError(
                f"`state` {path} is in use by another server process: two servers on one "
                "record would both answer a round"
            ) from None
        self._lock = lock
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            log.warning("%s: dropped an unfinished last record (never sent: it is written "
                        "before its answer); if nothing crashed, check who edits the file",
                        path)  # fmt: skip
        for number, line in enumerate(data.split(b"\n")[:-1], 1):  # the complete lines
            try:
                json.loads(line)
            except ValueError:
                raise ValueError(
                    f"`state` {path} line {number} is damaged; restore the file from a copy or "
                    "enrol a new deployment (a server on an empty record would repeat rounds)"
                ) from None
        try:
            store = ResultStore(path, config={**config, "context": self.params.context.hex()})
        except ValueError as error:
            raise ValueError(
                f"`state` {path}: {error}. Use this server's own record (restore it from a "
                "copy), or enrol a new deployment; never start on an empty one by mistake"
            ) from None
        for key in store:
            raw = bytes.fromhex(store.get(key))
            if key == "model-pin":
                self.model_pin = ModelPin.from_bytes(raw)
                continue
            output = output_cls.from_bytes(raw)
            self.outputs[output.round_id] = output
        if self.outputs:
            self.round_id = max(self.round_id, max(self.outputs) + 1)
        return store

    def close(self) -> None:
        """Release the `state` file's lock (a server process holds it until it exits): after
        this, another server may open the record, e.g. a restart in the same process."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _close(self, output) -> None:
        if self._state is not None:  # on disk before anyone sees the output
            self._state.put(f"round-{self.round_id}", output.to_bytes().hex())
        self.outputs[self.round_id] = output
        self._inbox = {}
        self.round_id += 1

    def _sign_aggregate(self, cls, ids, vector, blinding):
        commitment = Commitment.zero()
        for i in ids:
            commitment = commitment + self._inbox[i][-1]
        unsigned = cls(self.round_id, tuple(ids), commitment, vector, blinding, b"")
        signature = self.keys.sign(unsigned.payload(self.params.context))
        return cls(self.round_id, tuple(ids), commitment, vector, blinding, signature)


class ServerA(_Server):
    """Server A: receives (y, ρ^A, C) from every client, fixes U, publishes (Y, P_A, C_U).

    Parameters
    ----------
    params : JanusParams
    keys : ServerKeys
        A's Ed25519 key.
    round_id : int, default=1
        The first open round.
    enrolment : Enrolment, optional
        The operator-signed list: A then accepts exactly its clients (``NotEnrolledError``).
    state : str or Path, optional
        File of A's published rounds (one signed ``AggA`` per round, fsync'd, locked against a
        second process): a restarted A serves the old aggregates and opens the round after
        the last one, in step with B.

    Raises
    ------
    ValueError
        If `params` or `keys` differ from the enrolment's, or `state` is another A's record or
        in use by another process.
    """

    message_type = ToA
    role = "a"

    def __init__(self, params: JanusParams, keys: ServerKeys, round_id: int = 1, *,
                 enrolment=None, state=None):  # fmt: skip
        super().__init__(params, keys, round_id, enrolment=enrolment)
        self._participants: ParticipantSet | None = None
        if state is not None:
            config = {"server": "janus-a", "a": self.public.to_bytes().hex()}
            self._state = self._open_state(state, AggA, config)

    @property
    def a_verify_key(self) -> bytes:
        """A's own Ed25519 verify key."""
        return self.keys.public.sign

    def authorize(self, request: str) -> Authorization:
        """A's signed `request` ("close", "received" or "bindings") for the open round: what
        B asks before it reports its bindings (``Remote.bindings``)."""
        return Authorization.sign(self.keys, self.params.context, request, self.round_id)

    def sign_model(self, layout: bytes, model: bytes, round_id: int = 1) -> ModelPin:
        """A's half of the first-round model pin (B adds its signature: ``ServerB.pin_model``);
        B's signature is 64 zero bytes until then.

        Parameters
        ----------
        layout, model : bytes
            32-byte digests (``janus_secagg.flower.model_digests``).
        round_id : int, default=1
            The first round the model is trained in.
        """
        for value, name in ((layout, "layout"), (model, "model")):
            if not isinstance(value, bytes) or len(value) != 32:
                raise ValueError(f"`{name}` must be a 32-byte digest")
        check_scalar(round_id, "round_id", kind=numbers.Integral, low=0, high=2**64 - 1)
        unsigned = ModelPin(int(round_id), layout, model, b"", b"")
        return ModelPin(int(round_id), layout, model,
                        self.keys.sign(unsigned.payload(self.params.context)),
                        bytes(SIGNATURE_BYTES))  # fmt: skip

    def receive(self, msg: ToA) -> None:
        """Accept client i's ``ToA`` for the open round.

        Raises
        ------
        ReplayError
            If `msg` is for a closed round.
        ProtocolError
            If it is for another round, from an unregistered client, unsigned or mis-signed
            (the signature covers ρ^A and the parameters), a duplicate, of the wrong length, or
            has ρ^A outside [0, r).
        """
        if isinstance(msg, ToA) and not (
            isinstance(msg.rho_a, numbers.Integral) and 0 <= msg.rho_a < GROUP_ORDER
        ):
            raise ProtocolError(f"client {msg.client_id}: rho_a is not in [0, r)")
        if isinstance(msg, ToA) and len(msg.y) != self.params.length:
            raise ProtocolError(f"client {msg.client_id}: y has length {len(msg.y)}")
        if self._admit(msg):
            return
        self._inbox[msg.client_id] = (msg.y, msg.rho_a, self._binding_of(msg), msg.commitment)
        self._participants = None

    def _binding_of(self, msg) -> bytes:
        return _binding(msg.commitment, y_digest(msg.rho_a, msg.y), msg.box_digest)

    def adopt(self, agg_b: AggB) -> ParticipantSet:
        """Fix U from B's published answer for the open round, when B answered it but its
        reply never reached A (a lost connection, or A restarted in the close window).

        B's signed ``AggB`` is the one answer of the round, so A aggregates over its U; A
        checks B's signature (the enrolment's key), the round, that it holds every client of U
        and that its own C_U equals B's.

        Raises
        ------
        ProtocolError
            If A has no enrolment, the answer is not B's for the open round, or A lacks some
            client of U (it lost its submissions) or disagrees on C_U.
        """
        if self.enrolment is None:
            raise ProtocolError("adopting B's answer needs the enrolment (B's key)")
        if not isinstance(agg_b, AggB) or agg_b.round_id != self.round_id:
            raise ProtocolError(f"not B's answer for the open round {self.round_id}")
        payload = agg_b.payload(self.params.context)
        if not verify_signature(self.enrolment.b.sign, payload, agg_b.signature):
            raise ProtocolError("the answer is not signed by server B")
        missing = set(agg_b.ids) - set(self._inbox)
        if missing:
            raise ProtocolError(
                f"B answered round {self.round_id} over {len(missing)} clients whose messages A "
                "no longer holds (A lost its submissions of that round)"
            )
        commitment = Commitment.zero()
        for i in agg_b.ids:
            commitment = commitment + self._inbox[i][-1]
        if commitment != agg_b.commitment:
            raise ProtocolError("B's C_U differs from A's over the same U")
        unsigned = ParticipantSet(self.round_id, agg_b.ids, b"")
        self._participants = ParticipantSet(
            self.round_id, agg_b.ids, self.keys.sign(unsigned.payload(self.params.context))
        )
        return self._participants

    def skip_to(self, round_id: int) -> None:
        """Open `round_id` (> the open round), dropping the open round's submissions: B
        answered the rounds in between while A lost their messages, so they get no aggregate."""
        check_scalar(round_id, "round_id", kind=numbers.Integral, low=self.round_id + 1)
        log.warning("rounds %d to %d were answered by B while A had lost their submissions; "
                    "they get no aggregate: opening round %d", self.round_id, round_id - 1,
                    round_id)  # fmt: skip
        self._inbox, self._participants, self.round_id = {}, None, int(round_id)

    def participants(self, u_b) -> ParticipantSet:
        """Fix U = U_A ∩ U_B for the open round and sign it (spec §2 step 5).

        Parameters
        ----------
        u_b : mapping of int to bytes, or iterable of int
            What B reports: best ``ServerB.bindings`` (id → digest of the client's signed
            (C, HMAC_{ρ^A}(y), SHA-256(box))), so that a client whose two messages come from
            different ``prepare`` calls (a retry, or a cheat) is left out instead of making
            the round fail verification for everyone; or just B's ids (``ServerB.received``).

        Raises
        ------
        TypeError, ValueError
            If `u_b` is not a mapping or iterable of ids in [0, 2^64).
        """
        if isinstance(u_b, str | bytes) or not isinstance(u_b, Iterable):
            raise TypeError(
                f"`u_b` must be ServerB.bindings (a dict) or a list of client ids, got "
                f"{type(u_b).__name__}"
            )
        if not isinstance(u_b, Mapping):
            u_b = list(u_b)
        for i in u_b:
            if (
                isinstance(i, bool)
                or not isinstance(i, numbers.Integral)
                or not 0 <= int(i) < 2**64
            ):
                raise ValueError(f"`u_b` must hold client ids (ints in [0, 2^64)), got {i!r:.40}")
        common = set(self.received) & {int(i) for i in u_b}
        if isinstance(u_b, Mapping):
            common = {i for i in common if u_b[i] == self._inbox[i][2]}
        ids = tuple(sorted(common))
        unsigned = ParticipantSet(self.round_id, ids, b"")
        pset = ParticipantSet(
            self.round_id, ids, self.keys.sign(unsigned.payload(self.params.context))
        )
        self._participants = pset
        return pset

    def aggregate(self, round_id: int) -> AggA:
        """Y = Σ_U y mod 2^64, P_A = Σ_U ρ^A mod r, C_U = Σ_U C; signed; closes the round.

        Raises
        ------
        ProtocolError
            If `round_id` is not the open round, U was not fixed, or |U| < min_clients.
        """
        if round_id != self.round_id:
            raise ProtocolError(f"round {round_id} is not the open round {self.round_id}")
        pset = self._participants
        if pset is None:
            raise ProtocolError("call participants(u_b) before aggregate")
        ids = pset.ids
        if len(ids) < self.params.min_clients:
            raise ProtocolError(f"|U| = {len(ids)} < min_clients = {self.params.min_clients}")
        Y = np.sum([self._inbox[i][0] for i in ids], axis=0, dtype=np.uint64)
        P = sum(self._inbox[i][1] for i in ids) % GROUP_ORDER
        out = self._sign_aggregate(AggA, ids, Y, P)
        self._participants = None
        self._close(out)
        return out


class ServerB(_Server):
    """Server B: opens each sealed box to (seed, ρ^B), expands r, publishes (R, P_B, C_U).

    Parameters
    ----------
    params : JanusParams
    keys : ServerKeys
        B's Ed25519 key and X25519 box key (``ServerKeys.generate(box=True)``).
    a_pub : ServerPublicKeys
        A's verify key, to check the participant set.
    round_id : int, default=1
    state : str or Path, optional
        File of B's answered rounds (one signed ``AggB`` per round; append-only JSON lines,
        fsync'd per answer: ``icml25_core.ResultStore``). A restarted B reads it back, refuses
        every round it answered before the restart and opens the round after the last one.
        Without it the record lives in memory and a restart would answer a round twice. The
        first-round model pin (``pin_model``) is kept there too.
    enrolment : Enrolment, optional
        The operator-signed list: B then accepts exactly its clients (``NotEnrolledError``),
        so A cannot add sybils to U.

    Raises
    ------
    ValueError
        If `keys` have no box key, `state` holds the record of another B (other keys, other
        A or other ``JanusParams``), or `params`, `keys` or `a_pub` differ from the
        enrolment's.
    """

    message_type = ToB
    role = "b"

    def __init__(
        self, params, keys: ServerKeys, a_pub: ServerPublicKeys, round_id: int = 1, *,
        state=None, enrolment=None,
    ):  # fmt: skip
        super().__init__(params, keys, round_id, enrolment=enrolment)
        if keys.box is None:
            raise ValueError("`keys` of server B need a box key: ServerKeys.generate(box=True)")
        if not isinstance(a_pub, ServerPublicKeys):
            raise TypeError(f"`a_pub` must be a ServerPublicKeys, got {type(a_pub).__name__}")
        if enrolment is not None and enrolment.a.sign != a_pub.sign:
            raise ValueError("`a_pub` is not server A's key on the enrolment list")
        self.a_pub = a_pub
        self._unbox = SealedBox(keys.box)
        if state is not None:
            config = {"server": "janus-b", "b": self.public.to_bytes().hex(),
                      "a": a_pub.to_bytes().hex()}  # fmt: skip
            self._state = self._open_state(state, AggB, config)

    @property
    def a_verify_key(self) -> bytes:
        """A's Ed25519 verify key (`a_pub`)."""
        return self.a_pub.sign

    def receive(self, msg: ToB) -> None:
        """Accept client i's ``ToB``: check it, open the box, expand the mask.

        Raises
        ------
        ReplayError, ProtocolError
            As for ``ServerA.receive``; also if the box does not open.
        """
        if self._admit(msg):
            return
        try:
            opened = self._unbox.decrypt(msg.box)
        except CryptoError:
            raise ProtocolError(f"client {msg.client_id}: sealed box does not open") from None
        seed, rho_b = opened[:SEED_BYTES], int.from_bytes(opened[SEED_BYTES:], "little")
        if len(opened) != SEED_BYTES + 32 or rho_b >= GROUP_ORDER:
            raise ProtocolError(f"client {msg.client_id}: malformed box content")
        r = mask(seed, msg.round_id, self.params.length, self.params.domain)
        self._inbox[msg.client_id] = (r, rho_b, self._binding_of(msg), msg.commitment)

    def _binding_of(self, msg) -> bytes:
        return _binding(msg.commitment, msg.y_digest, digest(msg.box))

    @property
    def bindings(self) -> dict[int, bytes]:
        """U_B with, per client, SHA-256 of its signed (C, HMAC_{ρ^A}(y), SHA-256(box)).

        Pass it to ``ServerA.participants``: A keeps only the clients whose message to A carries
        the same triple, i.e. both halves of one ``prepare`` call. It tells A nothing A does
        not already hold.
        """
        return {i: self._inbox[i][2] for i in sorted(self._inbox)}

    def aggregate(self, participants: ParticipantSet) -> AggB:
        """R = Σ_U r mod 2^64, P_B = Σ_U ρ^B mod r, C_U; signed; closes the round.

        Raises
        ------
        ProtocolError
            If A's signature is invalid, the round was already answered or is not open,
            U ⊄ U_B, or |U| < min_clients.
        """
        if not isinstance(participants, ParticipantSet):
            raise TypeError("`participants` must be a ParticipantSet")
        t = participants.round_id
        if t in self.outputs:
            raise ProtocolError(f"round {t} was already answered (one answer per round)")
        if t != self.round_id:
            raise ProtocolError(f"round {t} is not the open round {self.round_id}")
        payload = participants.payload(self.params.context)
        if not verify_signature(self.a_pub.sign, payload, participants.signature):
            raise ProtocolError("the participant set is not signed by server A")
        ids = participants.ids
        missing = set(ids) - set(self._inbox)
        if missing:
            raise ProtocolError(f"U is not a subset of U_B: {len(missing)} unknown ids")
        if len(ids) < self.params.min_clients:
            raise ProtocolError(f"|U| = {len(ids)} < min_clients = {self.params.min_clients}")
        R = np.sum([self._inbox[i][0] for i in ids], axis=0, dtype=np.uint64)
        P = sum(self._inbox[i][1] for i in ids) % GROUP_ORDER
        out = self._sign_aggregate(AggB, ids, R, P)
        self._close(out)
        return out

    def pin_model(self, pin: ModelPin) -> ModelPin:
        """Add B's signature to A's first-round model pin, once per deployment (issue 16,
        hole 1).

        B signs one model only: asked again with the same digests it returns the same pin,
        with others it refuses, so A cannot start different clients on different models. The
        pin is written to the `state` file before it is returned.

        Raises
        ------
        ProtocolError
            If A's signature is invalid, or B already pinned another model.
        """
        if not isinstance(pin, ModelPin):
            raise TypeError(f"`pin` must be a ModelPin, got {type(pin).__name__}")
        payload = pin.payload(self.params.context)
        if not verify_signature(self.a_pub.sign, payload, pin.a_signature):
            raise ProtocolError("the model pin is not signed by server A")
        done = self.model_pin
        if done is not None:
            if (done.round_id, done.layout, done.model) != (pin.round_id, pin.layout, pin.model):
                raise ProtocolError(
                    "B already pinned another first-round model (one model per deployment)"
                )
            return done
        signed = ModelPin(pin.round_id, pin.layout, pin.model, pin.a_signature,
                          self.keys.sign(payload))  # fmt: skip
        if self._state is not None:
            self._state.put("model-pin", signed.to_bytes().hex())
        self.model_pin = signed
        return signed
