"""The operator-signed enrolment list (issue 16, hole 3): who may take part, and the servers'
keys and TLS certificates every party trusts.

Registration is authorised out of band: the operator signs, with an Ed25519 key (PyNaCl), one
file naming the ``JanusParams``, server A's and B's public keys, each server's TLS certificate
(optional) and every client's verify key. Both servers and every client load it, checked
against the operator's public key, which each party receives out of band. Servers refuse keys
that are not on it (``NotEnrolledError``), so server A cannot register sybil clients with B and
set U = {victim, sybils} to recover the victim's update; clients take A's and B's keys and B's
certificate from it instead of trusting them on first use.

File: JSON ``{"enrolment": {...}, "operator": hex, "signature": hex}``; the signature covers
``b"janus-secagg enrolment v1\\n"`` followed by the body as canonical JSON (sorted keys, no
spaces).
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from nacl.signing import SigningKey

from .errors import EnrolmentError, NotEnrolledError
from .keys import ClientPublicKey, ServerPublicKeys, verify_signature
from .params import JanusParams

FORMAT = "janus-secagg-enrolment/1"
_DOMAIN = b"janus-secagg enrolment v1\n"
_PARAM_FIELDS = ("dim", "clip", "frac_bits", "min_clients", "max_total_weight")


def certificate_pem(data, name: str = "certificate") -> str:
    """A PEM X.509 certificate, parsed by ``cryptography`` and re-encoded canonically.

    Parameters
    ----------
    data : str or bytes
        PEM text (one certificate).
    name : str
        The argument's name, for the error message.

    Raises
    ------
    ValueError
        If `data` is not a PEM certificate.
    """
    raw = data.encode("ascii") if isinstance(data, str) else data
    try:
        cert = x509.load_pem_x509_certificate(bytes(raw))
    except (ValueError, TypeError) as error:
        raise ValueError(f"`{name}` is not a PEM X.509 certificate: {error}") from None
    return cert.public_bytes(Encoding.PEM).decode("ascii")


def _canonical(body: dict) -> bytes:
    return _DOMAIN + json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def _operator_bytes(operator) -> bytes:
    if isinstance(operator, str):
        try:
            operator = bytes.fromhex(operator.strip())
        except ValueError:
            raise EnrolmentError(
                f"`operator` must be a hex verify key, got {operator!r:.80}"
            ) from None
    if not isinstance(operator, bytes | bytearray) or len(operator) != 32:
        raise EnrolmentError("`operator` must be the operator's 32-byte Ed25519 verify key")
    return bytes(operator)


@dataclass(frozen=True)
class Enrolment:
    """A signed enrolment list; make one with ``create``, read one with ``load``.

    Attributes
    ----------
    params : JanusParams
        The deployment's parameters (every party's must equal them).
    a, b : ServerPublicKeys
        Server A's verify key; server B's verify key and box key.
    clients : tuple of ClientPublicKey
        The enrolled clients, sorted by id.
    a_certificate, b_certificate : str or None
        PEM certificates the servers' TLS listeners present; clients and A pin them. None:
        that server is reached over plain TCP.
    operator, signature : bytes
        The operator's Ed25519 verify key (32 bytes) and its signature (64 bytes).
    """

    params: JanusParams
    a: ServerPublicKeys
    b: ServerPublicKeys
    clients: tuple[ClientPublicKey, ...]
    a_certificate: str | None
    b_certificate: str | None
    operator: bytes
    signature: bytes = field(repr=False)

    @classmethod
    def create(
        cls, operator_key: SigningKey, params: JanusParams, a: ServerPublicKeys,
        b: ServerPublicKeys, clients, *, a_certificate=None, b_certificate=None,
    ) -> "Enrolment":  # fmt: skip
        """Sign an enrolment list with the operator's key.

        Parameters
        ----------
        operator_key : nacl.signing.SigningKey
            The operator's Ed25519 key (``janus-secagg keygen --role operator``).
        params : JanusParams
        a, b : ServerPublicKeys
            B's must hold a box key.
        clients : iterable of ClientPublicKey
            At least ``params.min_clients`` distinct keys.
        a_certificate, b_certificate : str or bytes, optional
            PEM certificates of the servers' TLS listeners.

        Raises
        ------
        TypeError
            If an argument has the wrong type.
        ValueError
            If B has no box key, a key repeats, fewer than ``min_clients`` clients are
            enrolled, or a certificate is not PEM.
        """
        if not isinstance(operator_key, SigningKey):
            raise TypeError(f"`operator_key` must be a nacl SigningKey, got {type(operator_key)}")
        body = _body(params, a, b, clients, a_certificate, b_certificate)
        if bytes(operator_key.verify_key).hex() in body["clients"]:
            raise ValueError("`clients` holds the operator's own key: keep roles apart")
        signature = operator_key.sign(_canonical(body)).signature
        return cls._from_body(body, bytes(operator_key.verify_key), signature)

    @classmethod
    def _from_body(cls, body: dict, operator: bytes, signature: bytes) -> "Enrolment":
        p = body["params"]
        params = JanusParams(**{k: p[k] for k in _PARAM_FIELDS}, domain=bytes.fromhex(p["domain"]))
        return cls(
            params,
            ServerPublicKeys.from_bytes(bytes.fromhex(body["a"])),
            ServerPublicKeys.from_bytes(bytes.fromhex(body["b"])),
            tuple(ClientPublicKey.from_bytes(bytes.fromhex(c)) for c in body["clients"]),
            body["a_certificate"],
            body["b_certificate"],
            operator,
            signature,
        )

    def to_json(self) -> str:
        """The file's text (``load`` reads it back)."""
        body = _body(self.params, self.a, self.b, self.clients, self.a_certificate,
                     self.b_certificate)  # fmt: skip
        record = {"enrolment": body, "operator": self.operator.hex(),
                  "signature": self.signature.hex()}  # fmt: skip
        return json.dumps(record, indent=1, sort_keys=True) + "\n"

    def save(self, path) -> None:
        """Write the signed list to `path` (public data: no secret in it)."""
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def load(cls, path, operator) -> "Enrolment":
        """Read an enrolment file and check the operator's signature.

        Parameters
        ----------
        path : str or Path
        operator : bytes or str
            The operator's Ed25519 verify key (32 bytes, or hex), received out of band.

        Raises
        ------
        EnrolmentError
            If the file cannot be read or parsed, or is not signed by `operator` (a changed
            list, or another operator's); the message names `path`.
        """
        operator = _operator_bytes(operator)
        try:
            record = json.loads(Path(path).read_text(encoding="utf-8"))
            body, signature = record["enrolment"], bytes.fromhex(record["signature"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise EnrolmentError(f"`path` {path} is not an enrolment file: {error}") from None
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            raise EnrolmentError(f"`path` {path}: not a {FORMAT} enrolment")
        if not verify_signature(operator, _canonical(body), signature):
            raise EnrolmentError(
                f"`path` {path} is not signed by the operator key {operator.hex()[:16]}...: the "
                "list was changed after signing, or another operator signed it"
            )
        try:
            enrolment = cls._from_body(body, operator, signature)
            _body(enrolment.params, enrolment.a, enrolment.b, enrolment.clients,
                  enrolment.a_certificate, enrolment.b_certificate)  # fmt: skip
        except (ValueError, TypeError, KeyError) as error:
            raise EnrolmentError(f"`path` {path}: malformed enrolment: {error}") from None
        return enrolment

    @property
    def client_ids(self) -> frozenset[int]:
        """The enrolled clients' ids."""
        return frozenset(c.client_id for c in self.clients)

    def check_client(self, key) -> int:
        """The id of `key` if it is enrolled.

        Raises
        ------
        NotEnrolledError
            If `key` (a ``ClientPublicKey``) or the id (int) is not on the list.
        """
        client_id = key.client_id if isinstance(key, ClientPublicKey) else int(key)
        if client_id not in self.client_ids:
            raise NotEnrolledError(
                f"client {client_id} is not on the operator's enrolment list (an unknown or "
                "sybil key); the operator enrols keys with `janus-secagg enrol`"
            )
        return client_id


def _body(params, a, b, clients, a_certificate, b_certificate) -> dict:
    if not isinstance(params, JanusParams):
        raise TypeError(f"`params` must be a JanusParams, got {type(params).__name__}")
    for value, name in ((a, "a"), (b, "b")):
        if not isinstance(value, ServerPublicKeys):
            raise TypeError(f"`{name}` must be ServerPublicKeys, got {type(value).__name__}")
    if b.box is None:
        raise ValueError("`b` must hold server B's box key (ServerKeys.generate(box=True))")
    clients = list(clients)
    for c in clients:
        if not isinstance(c, ClientPublicKey):
            raise TypeError(f"`clients` must hold ClientPublicKey, got {type(c).__name__}")
    seen: set[bytes] = set()
    for c in clients:
        if c.sign in seen:
            raise ValueError(f"`clients` holds the key {c.sign.hex()} twice")
        if c.sign in (a.sign, b.sign):
            raise ValueError(f"`clients` holds server {'A' if c.sign == a.sign else 'B'}'s key")
        seen.add(c.sign)
    ids = [c.client_id for c in clients]
    if len(ids) < params.min_clients:
        raise ValueError(
            f"`clients`: {len(ids)} enrolled < min_clients = {params.min_clients}: no round "
            "could ever be aggregated"
        )
    if a_certificate is not None and a_certificate == b_certificate:
        raise ValueError("`a_certificate` and `b_certificate` are the same: one per server")
    ordered = sorted(clients, key=lambda c: c.client_id)
    return {
        "format": FORMAT,
        "params": {**{k: getattr(params, k) for k in _PARAM_FIELDS}, "domain": params.domain.hex()},
        "a": a.to_bytes().hex(),
        "b": b.to_bytes().hex(),
        "clients": [c.to_bytes().hex() for c in ordered],
        "a_certificate": None
        if a_certificate is None
        else certificate_pem(a_certificate, "a_certificate"),
        "b_certificate": None
        if b_certificate is None
        else certificate_pem(b_certificate, "b_certificate"),
    }
