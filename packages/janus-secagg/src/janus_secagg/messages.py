"""Wire messages of one round (spec §2 steps 4-6): binary, versioned, length-checked.

Layout of every message: version byte, type byte, round t (8-byte big-endian), then the fields
below; integers of Z_r as 32 bytes little-endian, vectors as uint64 little-endian with a 4-byte
length, points as 48-byte compressed G1 decoded with subgroup checks.

=================  ==========================================================================
``ToA``            i (8), y (4 + 8(l+1)), ρ^A (32), C (48), SHA-256(box) (32), σ (64)
``ToB``            i (8), SealedBox_B(seed ‖ ρ^B) (112), C (48), HMAC_{ρ^A}(y) (32), σ (64)
``ParticipantSet`` |U| (4), sorted ids (8 each), A's signature (64)
``AggA``/``AggB``  |U| (4), sorted U (8 each), C_U (48), vector (4 + 8(l+1)), P (32), sig (64)
``ModelPin``       digest of the model's layout (32), of its values (32), A's and B's sig (64 each)
``Authorization``  request code (1), A's signature (64)
=================  ==========================================================================

Version 2 (issue 16) sends U itself in both aggregates, 8 bytes per participant, so that every
client can check that it was not left out; version 1 sent SHA-256(sorted U) only.
"""

import hashlib
import numbers
import struct
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
from cryptography.hazmat.primitives import hashes, hmac

from icml25_core import check_scalar

from .commitment import POINT_BYTES, Commitment
from .keys import SIGNATURE_BYTES
from .params import GROUP_ORDER

VERSION = 2
BOX_BYTES = 32 + 32 + 48  # seed ‖ ρ^B sealed: ephemeral X25519 key (32) + Poly1305 tag (16)
_HEAD = struct.Struct(">BBQ")
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")


def digest(data: bytes) -> bytes:
    """SHA-256 (``hashlib``)."""
    return hashlib.sha256(data).digest()


def participants_digest(ids) -> bytes:
    """SHA-256 of the sorted participant ids, each 8-byte big-endian (spec §2 step 6)."""
    return digest(b"".join(_U64.pack(i) for i in sorted(ids)))


def y_digest(rho_a: int, y) -> bytes:
    """HMAC-SHA256 keyed by ρ^A over y (RFC 2104, ``cryptography``'s ``hmac.HMAC``): binds y and
    ρ^A for A, and hides y from B.

    B knows the mask r, so a plain SHA-256(y) = SHA-256(x + r) would let B test guesses of x;
    keyed by ρ^A (uniform in Z_r, unknown to B) it is a PRF output that reveals nothing, and A's
    check of the signature also covers ρ^A. It replaces the ad-hoc SHA-256(ρ^A ‖ y): a keyed
    hash made by prefixing a key is not a vetted MAC construction.
    """
    mac = hmac.HMAC(_scalar_bytes(rho_a), hashes.SHA256())
    mac.update(np.asarray(y, dtype="<u8").tobytes())
    return mac.finalize()


def client_payload(domain, round_id, client_id, C: Commitment, y_digest, box_digest) -> bytes:
    """What a client signs: (context, t, i, C, HMAC_{ρ^A}(y), SHA-256(box)) (spec §2 step 4;
    ``domain`` is ``JanusParams.context``)."""
    return (
        domain + b"|client|" + _U64.pack(round_id) + _U64.pack(client_id) + C.to_bytes()
        + y_digest + box_digest
    )  # fmt: skip


def _scalar_bytes(value: int) -> bytes:
    return int(value).to_bytes(32, "little")


def _vector_bytes(vector: np.ndarray) -> bytes:
    return _U32.pack(len(vector)) + np.asarray(vector, dtype="<u8").tobytes()


class _Reader:
    """Cursor over a received message; every read is length-checked."""

    def __init__(self, data, kind: int, name: str):
        if not isinstance(data, bytes | bytearray):
            raise TypeError(f"`data` must be bytes, got {type(data).__name__}")
        self.data, self.pos, self.name = bytes(data), 0, name
        version, got, self.round_id = self.unpack(_HEAD)
        if version != VERSION:
            raise ValueError(f"{name}: unsupported version {version} (expected {VERSION})")
        if got != kind:
            raise ValueError(f"{name}: wrong message type {got} (expected {kind})")

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ValueError(f"{self.name}: truncated ({len(self.data)} bytes)")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: struct.Struct):
        return fmt.unpack(self.take(fmt.size))

    def u32(self) -> int:
        return self.unpack(_U32)[0]

    def u64(self) -> int:
        return self.unpack(_U64)[0]

    def vector(self) -> np.ndarray:
        n = self.u32()
        if n == 0:
            raise ValueError(f"{self.name}: empty vector")
        return np.frombuffer(self.take(8 * n), dtype="<u8").astype(np.uint64)

    def ids(self) -> tuple[int, ...]:
        count = self.u32()
        if 8 * count > len(self.data) - self.pos:
            raise ValueError(f"{self.name}: truncated ({len(self.data)} bytes)")
        ids = tuple(self.u64() for _ in range(count))
        if list(ids) != sorted(set(ids)):
            raise ValueError(f"{self.name}: ids must be sorted and distinct")
        return ids

    def scalar(self) -> int:
        value = int.from_bytes(self.take(32), "little")
        if value >= GROUP_ORDER:
            raise ValueError(f"{self.name}: scalar not reduced modulo r")
        return value

    def point(self) -> Commitment:
        return Commitment.from_bytes(self.take(POINT_BYTES))

    def end(self) -> None:
        if self.pos != len(self.data):
            raise ValueError(f"{self.name}: {len(self.data) - self.pos} trailing bytes")


class _Message(ABC):
    """Equality by encoding; frozen dataclasses holding numpy arrays compare by bytes."""

    @abstractmethod
    def to_bytes(self) -> bytes:
        """The message's wire encoding (each message class defines it)."""

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.to_bytes() == other.to_bytes()

    def __hash__(self) -> int:
        return hash(self.to_bytes())


@dataclass(frozen=True, eq=False)
class ToA(_Message):
    """Client i's message to server A: (t, i, y, ρ^A, C, SHA-256(box), σ).

    ``y`` is uint64 of shape (l + 1,), the masked encoding x + r mod 2^64.
    """

    round_id: int
    client_id: int
    y: np.ndarray
    rho_a: int
    commitment: Commitment
    box_digest: bytes
    signature: bytes

    KIND = 1

    def payload(self, domain: bytes) -> bytes:
        """The bytes σ signs."""
        return client_payload(
            domain, self.round_id, self.client_id, self.commitment,
            y_digest(self.rho_a, self.y), self.box_digest,
        )  # fmt: skip

    def to_bytes(self) -> bytes:
        """The wire encoding ``from_bytes`` reads (header, id, y, ρ^A, C, box digest, σ)."""
        return (
            _HEAD.pack(VERSION, self.KIND, self.round_id) + _U64.pack(self.client_id)
            + _vector_bytes(self.y) + _scalar_bytes(self.rho_a) + self.commitment.to_bytes()
            + self.box_digest + self.signature
        )  # fmt: skip

    @classmethod
    def from_bytes(cls, data: bytes) -> "ToA":
        """Decode; ValueError on a wrong version/type, truncation, trailing bytes, an
        unreduced scalar or an invalid (off-curve / non-subgroup) point."""
        r = _Reader(data, cls.KIND, "ToA")
        msg = cls(r.round_id, r.u64(), r.vector(), r.scalar(), r.point(), r.take(32),
                  r.take(SIGNATURE_BYTES))  # fmt: skip
        r.end()
        return msg


@dataclass(frozen=True, eq=False)
class ToB(_Message):
    """Client i's message to server B: (t, i, SealedBox_B(seed ‖ ρ^B), C, HMAC_{ρ^A}(y), σ)."""

    round_id: int
    client_id: int
    box: bytes
    commitment: Commitment
    y_digest: bytes
    signature: bytes

    KIND = 2

    def payload(self, domain: bytes) -> bytes:
        """The bytes σ signs: the same client payload as A's message (C, y digest, box digest)."""
        return client_payload(
            domain, self.round_id, self.client_id, self.commitment, self.y_digest,
            digest(self.box),
        )  # fmt: skip

    def to_bytes(self) -> bytes:
        """The wire encoding ``from_bytes`` reads (header, id, sealed box, C, y digest, σ)."""
        return (
            _HEAD.pack(VERSION, self.KIND, self.round_id) + _U64.pack(self.client_id) + self.box
            + self.commitment.to_bytes() + self.y_digest + self.signature
        )  # fmt: skip

    @classmethod
    def from_bytes(cls, data: bytes) -> "ToB":
        """Decode; ValueError as for ``ToA.from_bytes``."""
        r = _Reader(data, cls.KIND, "ToB")
        msg = cls(r.round_id, r.u64(), r.take(BOX_BYTES), r.point(), r.take(32),
                  r.take(SIGNATURE_BYTES))  # fmt: skip
        r.end()
        return msg


@dataclass(frozen=True, eq=False)
class ParticipantSet(_Message):
    """U = U_A ∩ U_B as fixed by A for round t, signed by A (spec §2 step 5)."""

    round_id: int
    ids: tuple
    signature: bytes

    KIND = 3

    def payload(self, domain: bytes) -> bytes:
        """The bytes A signs: the domain, round id, count and the sorted ids."""
        return (
            domain + b"|participants|" + _U64.pack(self.round_id) + _U32.pack(len(self.ids))
            + b"".join(_U64.pack(i) for i in self.ids)
        )  # fmt: skip

    def to_bytes(self) -> bytes:
        """The wire encoding ``from_bytes`` reads (header, count, ids, A's signature)."""
        return _HEAD.pack(VERSION, self.KIND, self.round_id) + _ids_bytes(self.ids) + self.signature

    @classmethod
    def from_bytes(cls, data: bytes) -> "ParticipantSet":
        """Decode ``to_bytes``'s output.

        Raises
        ------
        ValueError
            If the bytes are not a ParticipantSet, the ids are not sorted and distinct, or bytes
            are missing or trailing.
        """
        r = _Reader(data, cls.KIND, "ParticipantSet")
        msg = cls(r.round_id, r.ids(), r.take(SIGNATURE_BYTES))
        r.end()
        return msg


def _ids_bytes(ids) -> bytes:
    return _U32.pack(len(ids)) + b"".join(_U64.pack(i) for i in ids)


@dataclass(frozen=True, eq=False)
class _Aggregate(_Message):
    round_id: int
    ids: tuple
    commitment: Commitment
    vector: np.ndarray
    blinding: int
    signature: bytes

    KIND = 0
    ROLE = b""

    @property
    def count(self) -> int:
        """|U|, the number of participants."""
        return len(self.ids)

    @property
    def u_digest(self) -> bytes:
        """SHA-256 of the sorted participant ids (``participants_digest``)."""
        return participants_digest(self.ids)

    def payload(self, domain: bytes) -> bytes:
        """What the server signs: (t, |U|, SHA-256(sorted U), C_U, SHA-256(vector), P)."""
        return (
            domain + b"|aggregate-" + self.ROLE + b"|" + _U64.pack(self.round_id)
            + _U32.pack(self.count) + self.u_digest + self.commitment.to_bytes()
            + digest(np.asarray(self.vector, dtype="<u8").tobytes())
            + _scalar_bytes(self.blinding)
        )  # fmt: skip

    def to_bytes(self) -> bytes:
        return (
            _HEAD.pack(VERSION, self.KIND, self.round_id) + _ids_bytes(self.ids)
            + self.commitment.to_bytes() + _vector_bytes(self.vector)
            + _scalar_bytes(self.blinding) + self.signature
        )  # fmt: skip

    @classmethod
    def from_bytes(cls, data: bytes):
        """Decode; ValueError as for ``ToA.from_bytes``, and for ids that are not sorted and
        distinct."""
        r = _Reader(data, cls.KIND, cls.__name__)
        msg = cls(r.round_id, r.ids(), r.point(), r.vector(), r.scalar(), r.take(SIGNATURE_BYTES))
        r.end()
        return msg


@dataclass(frozen=True, eq=False)
class AggA(_Aggregate):
    """A's signed output: Y = Σ_U y mod 2^64 and P_A = Σ_U ρ^A mod r."""

    KIND = 4
    ROLE = b"A"


@dataclass(frozen=True, eq=False)
class AggB(_Aggregate):
    """B's signed output: R = Σ_U r mod 2^64 and P_B = Σ_U ρ^B mod r."""

    KIND = 5
    ROLE = b"B"


@dataclass(frozen=True, eq=False)
class ModelPin(_Message):
    """The first round's model, pinned by both servers (issue 16, hole 1).

    ``layout`` is SHA-256 of the model's array names, dtypes and shapes, ``model`` SHA-256 of
    the layout and the values (``janus_secagg.flower.model_digests``); A signs first, B adds
    its signature once per deployment, so every client starts from the same model and later
    rounds keep its layout. ``round_id`` is the first round it applies to.
    """

    round_id: int
    layout: bytes
    model: bytes
    a_signature: bytes
    b_signature: bytes

    KIND = 6

    def payload(self, domain: bytes) -> bytes:
        """The bytes both servers sign: domain, round, layout digest, model digest."""
        return domain + b"|model-pin|" + _U64.pack(self.round_id) + self.layout + self.model

    def to_bytes(self) -> bytes:
        """The wire encoding ``from_bytes`` reads (header, two digests, two signatures)."""
        return (
            _HEAD.pack(VERSION, self.KIND, self.round_id) + self.layout + self.model
            + self.a_signature + self.b_signature
        )  # fmt: skip

    @classmethod
    def from_bytes(cls, data: bytes) -> "ModelPin":
        """Decode; ValueError on a wrong version/type, truncation or trailing bytes."""
        r = _Reader(data, cls.KIND, "ModelPin")
        msg = cls(r.round_id, r.take(32), r.take(32), r.take(SIGNATURE_BYTES),
                  r.take(SIGNATURE_BYTES))  # fmt: skip
        r.end()
        return msg


#: Requests only server A's key holder may make (issue 16): close A's open round, read who
#: submitted to a server (U_A, U_B), read B's bindings (``ServerB.bindings``).
AUTHORIZED_REQUESTS = ("close", "received", "bindings")


@dataclass(frozen=True, eq=False)
class Authorization(_Message):
    """A's signature on one request for one round: "close", "received" or "bindings".

    Who closes a round chooses |U|: if anyone could, |U| - 1 colluding clients would close it
    right after one honest client submitted and read that client's update off the mean
    (README, threat model). The servers serve these requests for the open round only, and
    only with A's signature (``UnauthorizedError``); A makes them with its own key
    (``ServerA.authorize``, or ``Authorization.sign`` with A's key file elsewhere).
    """

    round_id: int
    request: str
    signature: bytes

    KIND = 7

    def __post_init__(self):
        if self.request not in AUTHORIZED_REQUESTS:
            raise ValueError(
                f"`request` must be one of {AUTHORIZED_REQUESTS}, got {self.request!r}"
            )

    @classmethod
    def sign(cls, keys, context: bytes, request: str, round_id: int) -> "Authorization":
        """`request` for round `round_id`, signed with A's ``ServerKeys`` `keys` under
        `context` (``JanusParams.context`` of the enrolment, not its ``domain``).

        Raises
        ------
        TypeError, ValueError
            If `keys` cannot sign, `context` is not a ``JanusParams.context``, `request` is
            unknown, or `round_id` is not an int in [1, 2^64).
        """
        if not callable(getattr(keys, "sign", None)):
            raise TypeError(f"`keys` must be server A's ServerKeys, got {type(keys).__name__}")
        if not isinstance(context, bytes) or b"|params|" not in context:
            raise TypeError(
                f"`context` must be JanusParams.context (bytes), not its domain; got "
                f"{context!r:.40}"
            )
        check_scalar(round_id, "round_id", kind=numbers.Integral, low=1, high=2**64 - 1)
        unsigned = cls(int(round_id), request, b"")
        return cls(int(round_id), request, keys.sign(unsigned.payload(context)))

    def payload(self, domain: bytes) -> bytes:
        """The bytes A signs: domain, the request's name, round."""
        return domain + b"|authorize|" + self.request.encode() + b"|" + _U64.pack(self.round_id)

    def to_bytes(self) -> bytes:
        """The wire encoding ``from_bytes`` reads (header, request code, A's signature)."""
        code = AUTHORIZED_REQUESTS.index(self.request)
        return _HEAD.pack(VERSION, self.KIND, self.round_id) + bytes([code]) + self.signature

    @classmethod
    def from_bytes(cls, data: bytes) -> "Authorization":
        """Decode; ValueError on a wrong version/type, unknown request, truncation or trailing
        bytes."""
        r = _Reader(data, cls.KIND, "Authorization")
        code = r.take(1)[0]
        if code >= len(AUTHORIZED_REQUESTS):
            raise ValueError(f"Authorization: unknown request code {code}")
        msg = cls(r.round_id, AUTHORIZED_REQUESTS[code], r.take(SIGNATURE_BYTES))
        r.end()
        return msg
