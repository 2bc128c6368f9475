"""Long-term keys (spec §2 "Setup"): Ed25519 signing keys for A, B and every client, and B's
X25519 box key, all from PyNaCl (libsodium).

A client joins with the servers' public keys only: no pairwise keys, no secret sharing.
"""

import errno
import hashlib
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from nacl.exceptions import BadSignatureError
from nacl.public import PrivateKey, PublicKey
from nacl.signing import SigningKey, VerifyKey

KEY_BYTES = 32
SIGNATURE_BYTES = 64


def verify_signature(public: bytes, message: bytes, signature: bytes) -> bool:
    """True iff `signature` is a valid Ed25519 signature of `message` under `public`."""
    try:
        VerifyKey(public).verify(message, signature)
    except (BadSignatureError, ValueError, TypeError):
        return False
    return True


#: What each role's key file holds (its first line names the role: ``janus-secagg key: a``).
KEY_ROLES = {
    "operator": "the operator's signing key",
    "a": "server A's keys",
    "b": "server B's keys",
    "client": "a client key",
}
_HEADER = "janus-secagg key: "


def write_secret(path, secret: bytes, role: str) -> None:
    """Write `secret` to `path`, mode 0600: a line naming `role`, then the hex. An existing
    file is replaced; a symbolic link is refused, not followed.

    Raises
    ------
    ValueError
        If `path` is a symbolic link (dangling or not).
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    try:
        fd = os.open(Path(path), flags, 0o600)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ValueError(
                f"`path` {path} is a symbolic link; write keys to a plain file"
            ) from None
        raise
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        os.chmod(fd, 0o600)
        handle.write(f"{_HEADER}{role}\n{secret.hex()}\n")


def read_secret(path, sizes: tuple[int, ...], roles: tuple[str, ...], name: str = "path"):
    """The role and bytes of a key file written by ``write_secret``; warns (``UserWarning``) if
    other users may read it.

    Raises
    ------
    ValueError
        If the file cannot be read, is not a key file, holds another role's key than `roles`,
        or its key is not hex of a length in `sizes` (the message names `name` and the path).
    """
    expected = " or ".join(KEY_ROLES[r] for r in roles)
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"`{name}` must be a path to a key file, got {type(path).__name__}")
    try:
        lines = Path(path).read_text(encoding="ascii").splitlines()
        mode = os.stat(path).st_mode
    except OSError as error:
        raise ValueError(f"`{name}` {path}: cannot read the key file: {error}") from None
    except ValueError:  # not ASCII
        raise ValueError(f"`{name}` {path} is not a janus-secagg key file") from None
    if len(lines) != 2 or not lines[0].startswith(_HEADER):
        raise ValueError(
            f"`{name}` {path} is not a janus-secagg key file (a line '{_HEADER}<role>', then "
            "the key in hex): make one with `janus-secagg keygen`"
        )
    role = lines[0][len(_HEADER) :].strip()
    if role not in roles:
        held = KEY_ROLES.get(role, f"a key of unknown role {role!r}")
        raise ValueError(f"`{name}` {path} holds {held}, not {expected}")
    try:
        secret = bytes.fromhex(lines[1].strip())
    except ValueError:
        raise ValueError(f"`{name}` {path} does not hold hex-encoded {expected}") from None
    if len(secret) not in sizes:
        raise ValueError(f"`{name}` {path} does not hold {expected} ({len(secret)} bytes)")
    if mode & 0o077:
        warnings.warn(
            f"`{name}` {path} may be read by other users (mode {mode & 0o777:o}): chmod 600 it",
            UserWarning,
            stacklevel=2,
        )
    return role, secret


def _check_key_bytes(data, name: str) -> bytes:
    if not isinstance(data, bytes | bytearray) or len(data) != KEY_BYTES:
        raise ValueError(f"`{name}` must be {KEY_BYTES} bytes, got {data!r:.60}")
    return bytes(data)


@dataclass(frozen=True)
class ServerPublicKeys:
    """A server's public half: Ed25519 verify key, and for B its X25519 box key.

    ``to_bytes()`` is 33 or 65 bytes: a flag byte (1 if a box key follows), then the keys.
    """

    sign: bytes
    box: bytes | None = None

    def __post_init__(self):
        _check_key_bytes(self.sign, "sign")
        if self.box is not None:
            _check_key_bytes(self.box, "box")

    def to_bytes(self) -> bytes:
        """The encoding ``from_bytes`` reads: the verify key, then the box key if any."""
        return bytes([self.box is not None]) + self.sign + (self.box or b"")

    @classmethod
    def from_bytes(cls, data: bytes) -> "ServerPublicKeys":
        """Decode ``to_bytes()``'s output.

        Raises
        ------
        ValueError
            On a bad flag or length.
        """
        if len(data) not in (1 + KEY_BYTES, 1 + 2 * KEY_BYTES) or data[0] != (len(data) > 33):
            raise ValueError(f"`data` is not a server public key ({len(data)} bytes)")
        return cls(bytes(data[1:33]), bytes(data[33:]) if data[0] else None)


class ServerKeys:
    """A server's long-term keys: Ed25519 for signing its outputs, X25519 for B's sealed boxes.

    Create with ``ServerKeys.generate(box=True)`` for B, ``box=False`` for A.
    """

    def __init__(self, signing: SigningKey, box: PrivateKey | None = None):
        if not isinstance(signing, SigningKey):
            raise TypeError(f"`signing` must be a nacl SigningKey, got {type(signing).__name__}")
        if box is not None and not isinstance(box, PrivateKey):
            raise TypeError(f"`box` must be a nacl PrivateKey, got {type(box).__name__}")
        self.signing = signing
        self.box = box

    @classmethod
    def generate(cls, box: bool = False) -> "ServerKeys":
        """Fresh keys from libsodium's CSPRNG; `box` adds an X25519 key (server B)."""
        return cls(SigningKey.generate(), PrivateKey.generate() if box else None)

    def save(self, path) -> None:
        """Write the private keys to a file readable by its owner only (mode 0600), tagged as
        server B's if they hold a box key, else A's; an existing file is replaced.

        Raises
        ------
        ValueError
            If `path` is a symbolic link.
        """
        secret = bytes(self.signing) + (bytes(self.box) if self.box is not None else b"")
        write_secret(path, secret, "a" if self.box is None else "b")

    @classmethod
    def load(cls, path, name: str = "path") -> "ServerKeys":
        """Read keys written by ``save`` (or ``janus-secagg keygen --role a|b``).

        Raises
        ------
        ValueError
            If the file cannot be read, is not a server key file (another role's, such as a
            client's), or its key has the wrong length (the message names `name`).
        """
        role, secret = read_secret(path, (KEY_BYTES, 2 * KEY_BYTES), ("a", "b"), name)
        if len(secret) != (KEY_BYTES if role == "a" else 2 * KEY_BYTES):
            raise ValueError(f"`{name}` {path} does not hold {KEY_ROLES[role]}")
        box = PrivateKey(secret[KEY_BYTES:]) if role == "b" else None
        return cls(SigningKey(secret[:KEY_BYTES]), box)

    @property
    def public(self) -> ServerPublicKeys:
        """The public half (``ServerPublicKeys``) clients and the other server are given."""
        box = bytes(self.box.public_key) if self.box is not None else None
        return ServerPublicKeys(bytes(self.signing.verify_key), box)

    def sign(self, message: bytes) -> bytes:
        """The 64-byte Ed25519 signature of `message`."""
        return self.signing.sign(message).signature


@dataclass(frozen=True)
class ClientPublicKey:
    """A client's Ed25519 verify key (32 bytes); its id is derived from it."""

    sign: bytes

    def __post_init__(self):
        _check_key_bytes(self.sign, "sign")

    def to_bytes(self) -> bytes:
        """The 32-byte Ed25519 verify key."""
        return self.sign

    @classmethod
    def from_bytes(cls, data: bytes) -> "ClientPublicKey":
        """The key from its 32 bytes.

        Raises
        ------
        TypeError, ValueError
            If `data` is not 32 bytes.
        """
        return cls(_check_key_bytes(data, "data"))

    @property
    def client_id(self) -> int:
        """First 8 bytes of SHA-256(verify key), big-endian: a self-certifying client id."""
        return int.from_bytes(hashlib.sha256(self.sign).digest()[:8], "big")


class ClientKeys:
    """A client's Ed25519 signing key, on the operator's enrolment list (spec §2 "Setup")."""

    def __init__(self, signing: SigningKey):
        if not isinstance(signing, SigningKey):
            raise TypeError(f"`signing` must be a nacl SigningKey, got {type(signing).__name__}")
        self.signing = signing

    @classmethod
    def generate(cls) -> "ClientKeys":
        """A fresh random Ed25519 signing key (PyNaCl ``SigningKey.generate``)."""
        return cls(SigningKey.generate())

    def save(self, path, role: str = "client") -> None:
        """Write the 32-byte Ed25519 seed to `path`, mode 0600, tagged with `role` ("client",
        or "operator" for the operator's signing key).

        Raises
        ------
        ValueError
            If `role` is neither, or `path` is a symbolic link.
        """
        if role not in ("client", "operator"):
            raise ValueError(f"`role` must be 'client' or 'operator', got {role!r}")
        write_secret(path, bytes(self.signing), role)

    @classmethod
    def load(cls, path, role: str = "client", name: str = "path") -> "ClientKeys":
        """Read a key written by ``save`` (or ``janus-secagg keygen --role client|operator``).

        Raises
        ------
        ValueError
            If the file cannot be read, holds another role's key than `role`, or is not a
            32-byte key (the message names `name`).
        """
        return cls(SigningKey(read_secret(path, (KEY_BYTES,), (role,), name)[1]))

    @property
    def public(self) -> ClientPublicKey:
        """The verify key the servers register (``ClientPublicKey``)."""
        return ClientPublicKey(bytes(self.signing.verify_key))

    @property
    def client_id(self) -> int:
        """The self-certifying id of the verify key (``ClientPublicKey.client_id``)."""
        return self.public.client_id

    def sign(self, message: bytes) -> bytes:
        """The 64-byte Ed25519 signature of `message` (detached)."""
        return self.signing.sign(message).signature


def box_public(keys: ServerPublicKeys) -> PublicKey:
    """B's X25519 public key as a nacl ``PublicKey``; ValueError if `keys` has none."""
    if keys.box is None:
        raise ValueError("`b_pub` has no box key: pass server B's public keys")
    return PublicKey(keys.box)
