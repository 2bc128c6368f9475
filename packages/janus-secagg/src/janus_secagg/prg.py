"""The mask generator (spec §2, step 2): HKDF-SHA256 then a ChaCha20 keystream.

k = HKDF-SHA256(seed, salt=None, info = domain ‖ t as 8-byte big-endian), r = ChaCha20
keystream under k with a 16-byte zero nonce, read as little-endian uint64. Both primitives come
from `cryptography` (never Flower's ``pseudo_rand_gen``, which folds the seed to 32 bits).
"""

import numbers

import numpy as np
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from icml25_core import check_scalar

SEED_BYTES = 32
_NONCE = bytes(16)  # cryptography's ChaCha20 nonce: 4-byte block counter + 12-byte nonce, all 0


def round_key(seed: bytes, round_id: int, domain: bytes) -> bytes:
    """k = HKDF-SHA256(seed, salt=None, info=domain ‖ round_id (8-byte big-endian)), 32 bytes.

    Source: spec §2 step 2 (RFC 5869 through ``cryptography``).
    """
    if not isinstance(seed, bytes) or len(seed) != SEED_BYTES:
        raise ValueError(f"`seed` must be {SEED_BYTES} bytes, got {seed!r:.40}")
    check_scalar(round_id, "round_id", kind=numbers.Integral, low=0, high=2**64 - 1)
    if not isinstance(domain, bytes) or not domain:
        raise TypeError(f"`domain` must be non-empty bytes, got {domain!r}")
    info = domain + int(round_id).to_bytes(8, "big")
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(seed)


def mask(seed: bytes, round_id: int, length: int, domain: bytes) -> np.ndarray:
    """The client's one-round mask r ∈ Z_{2^64}^length.

    Parameters
    ----------
    seed : bytes of length 32
        The client's fresh secret seed of this round (from ``secrets``).
    round_id : int
        t, 0 <= t < 2^64.
    length : int
        Number of uint64 words, >= 1 (l + 1 in the protocol).
    domain : bytes
        Domain-separation string (``JanusParams.domain``).

    Returns
    -------
    numpy.ndarray of shape (length,), uint64
        The ChaCha20 keystream under ``round_key(seed, round_id, domain)``, 8 bytes per word,
        little-endian.

    Raises
    ------
    ValueError
        If `seed` is not 32 bytes or `round_id`/`length` are out of range.
    TypeError
        If `domain` is not bytes.

    Notes
    -----
    Source: spec §2 step 2 (Janus-style reconstruction); ChaCha20 of RFC 8439 via
    ``cryptography``. The mask is uniform on Z_{2^64}^length given a uniform seed.
    """
    check_scalar(length, "length", kind=numbers.Integral, low=1)
    key = round_key(seed, round_id, domain)
    encryptor = Cipher(algorithms.ChaCha20(key, _NONCE), mode=None).encryptor()
    stream = encryptor.update(bytes(8 * int(length)))
    return np.frombuffer(stream, dtype="<u8").astype(np.uint64)
