"""Separable homomorphic commitment: Pedersen vector commitment on BLS12-381 G1 (spec §2, step 3).

C = Σ_j x_j · G_j + (ρ^A + ρ^B) · H, with G_0..G_l and H = hash_to_curve(domain ‖ label ‖ j)
under a fixed DST (RFC 9380, ``BLS12381G1_XMD:SHA-256_SSWU_RO_``), so nobody knows a discrete-log
relation between them (no trapdoor). "Separable": the blinding splits into ρ^A (known to A) and
ρ^B (known to B), so each server sees a perfectly hiding commitment. All curve and field
arithmetic, hash-to-curve and the multi-scalar multiplication come from ``py-arkworks-bls12381``.
"""

import hashlib
import numbers
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
from py_arkworks_bls12381 import G1Point, Scalar

from icml25_core import check_array, check_scalar

from .params import GROUP_ORDER, JanusParams

#: Domain-separation tag of the generators' hash-to-curve (RFC 9380 §3.1).
DST = b"JANUS-SECAGG-V01-CS01-with-BLS12381G1_XMD:SHA-256_SSWU_RO_"
POINT_BYTES = 48
_CACHE_MAGIC = b"JANUSCK1"
_XY_BYTES = 96


def _generator(domain: bytes, label: bytes, index: int) -> G1Point:
    """hash_to_curve(domain ‖ label ‖ index as 8-byte big-endian, DST); in the subgroup."""
    return G1Point.hash_to_curve(domain + label + index.to_bytes(8, "big"), DST)


def _scalars(values: np.ndarray) -> list[Scalar]:
    """Non-negative integers below 2^64 as arkworks scalars (little-endian, 32 bytes each)."""
    words = np.zeros((len(values), 4), dtype="<u8")
    words[:, 0] = values.astype(np.uint64)
    raw = words.tobytes()
    return [Scalar.from_le_bytes(raw[32 * i : 32 * i + 32]) for i in range(len(values))]


@dataclass(frozen=True)
class Commitment:
    """A commitment: one point of BLS12-381 G1 (48 bytes compressed); commitments add.

    Use ``from_bytes`` for received data: it checks the point is on the curve and in the
    prime-order subgroup.
    """

    point: G1Point

    def to_bytes(self) -> bytes:
        """The 48-byte compressed encoding (ZCash/IETF format)."""
        return bytes(self.point.to_compressed_bytes())

    @classmethod
    def from_bytes(cls, data: bytes) -> "Commitment":
        """Decode 48 bytes, checking the point is on the curve and in the subgroup.

        Raises
        ------
        ValueError
            If `data` is not 48 bytes or not a valid subgroup point.
        """
        if not isinstance(data, bytes | bytearray) or len(data) != POINT_BYTES:
            raise ValueError(f"`commitment` must be {POINT_BYTES} bytes, got {len(data)}")
        try:
            return cls(G1Point.from_compressed_bytes(bytes(data)))
        except (ValueError, OverflowError) as error:
            raise ValueError(f"`commitment` is not a valid BLS12-381 G1 point: {error}") from None

    @classmethod
    def zero(cls) -> "Commitment":
        """The commitment to the zero vector with zero blinding (the identity point)."""
        return cls(G1Point.identity())

    def __add__(self, other: "Commitment") -> "Commitment":
        if not isinstance(other, Commitment):
            return NotImplemented
        return Commitment(self.point + other.point)

    def __eq__(self, other) -> bool:
        return isinstance(other, Commitment) and self.to_bytes() == other.to_bytes()

    def __hash__(self) -> int:
        return hash(self.to_bytes())


@dataclass(frozen=True, eq=False)
class CommitmentKey:
    """The public generators G_0..G_l (one per encoded coordinate) and H.

    Attributes
    ----------
    generators : tuple of G1Point, length l + 1
    h : G1Point
    domain : bytes
    """

    generators: tuple
    h: G1Point
    domain: bytes

    @property
    def length(self) -> int:
        """l + 1, the vector length this key commits to."""
        return len(self.generators)

    @classmethod
    def derive(cls, params: JanusParams, cache_dir=None) -> "CommitmentKey":
        """Derive the generators for ``params`` by hash-to-curve, optionally through a cache.

        Parameters
        ----------
        params : JanusParams
            l + 1 = ``params.length`` generators are derived under ``params.domain``.
        cache_dir : str or os.PathLike, optional
            Folder for a cache file (about 96 bytes per generator). A valid cache is loaded
            (hash-to-curve costs ~1-2 ms per point); otherwise the key is derived and written.

        Returns
        -------
        CommitmentKey

        Raises
        ------
        ValueError
            If the cache file exists but is corrupted: wrong magic, length or SHA-256, or a
            spot-checked generator differs from a fresh derivation.

        Notes
        -----
        Source: spec §2 "Setup" and §9 (derive once, cache points with a SHA-256). Points of the
        cache are decoded unchecked; the SHA-256 over the file body and a re-derivation of G_0,
        G_l and H guard against corruption, not against an attacker: whoever can write
        `cache_dir` can swap a generator for one with a known discrete log and so break the
        commitment's binding. Keep the folder writable by you only.
        """
        if not isinstance(params, JanusParams):
            raise TypeError(f"`params` must be a JanusParams, got {type(params).__name__}")
        if cache_dir is None:
            return cls._fresh(params)
        if Path(cache_dir).exists() and not Path(cache_dir).is_dir():
            raise ValueError(f"`cache_dir` {cache_dir} exists and is not a folder")
        path = Path(cache_dir) / cls.cache_name(params)
        if path.exists():
            return cls._load(path, params)
        key = cls._fresh(params)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(key._dump())
        os.replace(tmp, path)
        return key

    @staticmethod
    def cache_name(params: JanusParams) -> str:
        """File name of the cache for ``params`` (depends on the domain, DST and length)."""
        tag = hashlib.sha256(params.domain + DST + params.length.to_bytes(8, "big")).hexdigest()
        return f"janus-ck-{params.length}-{tag[:16]}.bin"

    @classmethod
    def _fresh(cls, params: JanusParams) -> "CommitmentKey":
        gens = tuple(_generator(params.domain, b"G", j) for j in range(params.length))
        return cls(gens, _generator(params.domain, b"H", 0), params.domain)

    def _dump(self) -> bytes:
        body = b"".join(bytes(p.to_xy_bytes_le()) for p in (*self.generators, self.h))
        return _CACHE_MAGIC + hashlib.sha256(body).digest() + body

    @classmethod
    def _load(cls, path: Path, params: JanusParams) -> "CommitmentKey":
        raw = path.read_bytes()
        head = len(_CACHE_MAGIC) + 32
        body = raw[head:]
        if (
            raw[: len(_CACHE_MAGIC)] != _CACHE_MAGIC
            or len(body) != _XY_BYTES * (params.length + 1)
            or hashlib.sha256(body).digest() != raw[len(_CACHE_MAGIC) : head]
        ):
            raise ValueError(f"corrupted commitment-key cache {path}: bad header or SHA-256")
        points = [
            G1Point.from_xy_bytes_unchecked_le(body[i : i + _XY_BYTES])
            for i in range(0, len(body), _XY_BYTES)
        ]
        key = cls(tuple(points[:-1]), points[-1], params.domain)
        last = params.length - 1
        if (
            key.generators[0] != _generator(params.domain, b"G", 0)
            or key.generators[last] != _generator(params.domain, b"G", last)
            or key.h != _generator(params.domain, b"H", 0)
        ):
            raise ValueError(f"corrupted commitment-key cache {path}: generators differ")
        return key


def _check_vector(x, name: str, length: int) -> np.ndarray:
    x = check_array(x, name, ndim=1, shape=(length,), dtype="integer")
    if x.dtype.kind == "i" and (x < 0).any():
        raise ValueError(f"`{name}` must be non-negative (offset-binary encoding)")
    return x


def _check_blinding(value, name: str) -> int:
    check_scalar(value, name, kind=numbers.Integral, low=0, high=GROUP_ORDER - 1)
    return int(value)


@runtime_checkable
class SeparableCommitment(Protocol):
    """A homomorphic vector commitment whose blinding splits between the two servers.

    Implementations must satisfy commit(x, a, b) + commit(x', a', b') ==
    commit(x + x', a + a', b + b') and be binding and perfectly hiding in the blinding.
    """

    def commit(self, key, x, rho_a: int, rho_b: int) -> Commitment:
        """The commitment to vector `x` with blinding ρ^A + ρ^B."""
        ...

    def check_opening(self, key, C: Commitment, X, P: int) -> bool:
        """Whether `C` opens to the vector `X` with total blinding `P`."""
        ...


class PedersenBLS12381:
    """Pedersen vector commitment on BLS12-381 G1 through ``py-arkworks-bls12381`` (spec §2).

    Notes
    -----
    Source: spec §2 step 3 and step 7; Pedersen (CRYPTO 1991). Binding under the discrete-log
    assumption in G1 (order r ≈ 2^255), perfectly hiding for a uniform blinding in Z_r.
    """

    def commit(self, key: CommitmentKey, x, rho_a: int, rho_b: int) -> Commitment:
        r"""C = Σ_j x_j · G_j + (ρ^A + ρ^B mod r) · H, one multi-scalar multiplication.

        $$
        C = \sum_{j=0}^{l} x_j G_j + \left(\rho^A + \rho^B \bmod r\right) H
        $$

        Parameters
        ----------
        key : CommitmentKey
        x : array_like of shape (l + 1,), integer, 0 <= x_j < 2^64
            The encoded vector (``quantize``'s output or a sum of them).
        rho_a, rho_b : int
            Blinding shares in [0, r).

        Returns
        -------
        Commitment

        Raises
        ------
        ValueError
            If `x` has the wrong length or negative entries, or a blinding is outside [0, r).

        Notes
        -----
        Zero coordinates are left out of the MSM (they add the identity).
        """
        x = _check_vector(x, "x", key.length)
        rho = (_check_blinding(rho_a, "rho_a") + _check_blinding(rho_b, "rho_b")) % GROUP_ORDER
        nonzero = np.flatnonzero(x)
        points = [key.generators[j] for j in nonzero] + [key.h]
        scalars = [*_scalars(x[nonzero]), Scalar(rho)]
        return Commitment(G1Point.multiexp_unchecked(points, scalars))

    def check_opening(self, key: CommitmentKey, C: Commitment, X, P: int) -> bool:
        """True iff Σ_j X_j · G_j + P · H == C (spec §2 step 7).

        Parameters
        ----------
        key : CommitmentKey
        C : Commitment
            The aggregated commitment C_U.
        X : array_like of shape (l + 1,), integer, 0 <= X_j < 2^64
            The claimed sum (Y − R) mod 2^64.
        P : int
            The claimed blinding P_A + P_B mod r.

        Raises
        ------
        TypeError, ValueError
            If `C` is not a Commitment, `X` is malformed or `P` is outside [0, r).
        """
        if not isinstance(C, Commitment):
            raise TypeError(f"`C` must be a Commitment, got {type(C).__name__}")
        return self.commit(key, X, P, 0) == C
