"""Protocol parameters of Janus-style secure aggregation (spec §2, "Parameters").

Pu et al., "Janus: Dual-server Multi-Round Secure Aggregation with Verifiability for Federated
Learning", ICML 2025 (OpenReview HdS6tZwwa7). The paper body was not available: the parameters
below are this library's reconstruction, with the sources given per field.
"""

import hashlib
import math
import numbers
import secrets
import struct
from dataclasses import dataclass

from icml25_core import check_scalar

#: Masks live in the ring Z_{2^64} (spec §2); sums must stay below 2^63 so they never wrap.
RING_BITS = 64
#: Order r of the BLS12-381 G1 subgroup (the scalar field of the commitments).
GROUP_ORDER = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
#: Largest 2C · 2^f: float64 then computes u + C to within 2^-10 of one code (52-bit mantissa).
MAX_CODE_BITS = 44


def deployment_domain() -> bytes:
    """A ``JanusParams.domain`` for one deployment: the library's tag and 8 random bytes
    (``secrets``). Every signature covers it, so messages, authorizations and aggregates of one
    deployment are void in any other (``janus-secagg enrol`` uses it; pass it to
    ``JanusParams(domain=...)`` when you enrol in Python)."""
    return b"JANUS-SECAGG-v1/" + secrets.token_hex(8).encode()


@dataclass(frozen=True)
class JanusParams:
    """Parameters shared by the clients and both servers.

    Parameters
    ----------
    dim : int
        l, the length of one model update (number of float parameters), in [1, 2^32 - 2]
        (the wire format's 4-byte vector length holds l + 1).
    clip : float, default=8.0
        C: updates are clipped to [-C, C] before encoding (Flower SecAgg+'s default clipping
        range, spec §2).
    frac_bits : int, default=16
        f, fractional bits of the fixed-point encoding; the weighted mean is exact to
        2^-(f+1) (spec §2).
    min_clients : int, default=3
        t, the fewest participants a round may aggregate over; with fewer, B refuses and the
        clients reject the result (spec §2, step 5).
    max_total_weight : int, default=2**20
        W_max, the largest total weight Σ w_i of one round (spec §2).
    domain : bytes, default=b"JANUS-SECAGG-v1"
        Domain-separation string of the PRG, the generators and every signature.

    Raises
    ------
    TypeError
        If a field has the wrong type.
    ValueError
        If a field is out of range, 2C · 2^f < 1 (every update encodes to one code), or
        W_max · 2C · 2^f >= 2^63 (the encoded sum could wrap the 2^64 ring; fedbiomed
        issue #1210): the message names max_total_weight, clip and frac_bits; or
        2C · 2^f > 2^44 (float64 could not encode u + C to the promised 2^-(f+1)): the
        message names clip and frac_bits.

    Notes
    -----
    Source: spec §2 (reconstruction, "Janus-style"). Exactness needs
    W_max · 2C · 2^f < 2^63: every coordinate of Σ x_i is then below 2^63 < r, so the sum is
    the same integer in Z_{2^64} and in Z_r. Every signature covers ``context``, a digest of
    all the fields, so a client or server with other parameters is rejected instead of
    producing a verified but wrongly decoded mean.
    """

    dim: int
    clip: float = 8.0
    frac_bits: int = 16
    min_clients: int = 3
    max_total_weight: int = 2**20
    domain: bytes = b"JANUS-SECAGG-v1"

    def __post_init__(self):
        check_scalar(self.dim, "dim", kind=numbers.Integral, low=1, high=2**32 - 2)
        check_scalar(self.clip, "clip", kind=numbers.Real, low=0.0, inclusive="neither")
        check_scalar(self.frac_bits, "frac_bits", kind=numbers.Integral, low=0, high=62)
        check_scalar(self.min_clients, "min_clients", kind=numbers.Integral, low=2)
        check_scalar(self.max_total_weight, "max_total_weight", kind=numbers.Integral, low=1)
        if not isinstance(self.domain, bytes) or not self.domain:
            raise TypeError(f"`domain` must be non-empty bytes, got {self.domain!r}")
        codes = 2 * float(self.clip) * 2**self.frac_bits
        if codes < 1:
            raise ValueError(
                f"2 * `clip` * 2**`frac_bits` must be >= 1, got 2 * {self.clip} * "
                f"2**{self.frac_bits}: every update in [-C, C] would encode to one code"
            )
        if codes > 2**MAX_CODE_BITS:
            raise ValueError(
                f"2 * `clip` * 2**`frac_bits` must be <= 2**{MAX_CODE_BITS} so that float64 "
                f"encodes u + C to 2^-(f+1), got 2 * {self.clip} * 2**{self.frac_bits} = "
                f"2**{math.log2(codes):.2f}; lower clip or frac_bits"
            )
        headroom = self.max_total_weight * 2 * float(self.clip) * 2**self.frac_bits
        if headroom >= 2 ** (RING_BITS - 1):
            raise ValueError(
                "`max_total_weight` * 2 * `clip` * 2**`frac_bits` must be < 2**63 so that sums "
                f"never wrap, got {self.max_total_weight} * 2 * {self.clip} * "
                f"2**{self.frac_bits} = 2**{math.log2(headroom):.2f}"
            )

    @property
    def length(self) -> int:
        """l + 1: the encoded vector carries the weight as its last coordinate."""
        return self.dim + 1

    @property
    def context(self) -> bytes:
        """What every signature is bound to: ``domain`` plus a SHA-256 of all the fields.

        Clients and servers whose ``JanusParams`` differ in any field (l, C, f, t, W_max) then
        reject each other's messages instead of decoding a verified but wrong mean.
        """
        fields = struct.pack(
            ">QdQQQ", self.dim, float(self.clip), self.frac_bits, self.min_clients,
            self.max_total_weight,
        )  # fmt: skip
        return self.domain + b"|params|" + hashlib.sha256(self.domain + fields).digest()[:16]

    @property
    def max_code(self) -> int:
        """Largest encoded coordinate per unit weight: rint(2C · 2^f)."""
        return round(2 * float(self.clip) * 2**self.frac_bits)
