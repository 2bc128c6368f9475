"""janus-secagg: "Janus-style" dual-server, multi-round, verifiable secure aggregation.

A reconstruction of Pu et al., "Janus: Dual-server Multi-Round Secure Aggregation with
Verifiability for Federated Learning", ICML 2025 (OpenReview HdS6tZwwa7): the paper's body and
code were not available, so the protocol follows the properties stated in its abstract (two
non-colluding servers, no pairwise masks or secret sharing, a separable homomorphic commitment,
per-client cost constant in n); see the README for which parts are ours.
"""

from ._version import __version__
from .client import JanusClient
from .commitment import (
    Commitment,
    CommitmentKey,
    PedersenBLS12381,
    SeparableCommitment,
)
from .enrolment import Enrolment
from .errors import (
    CertificatePinError,
    EnrolmentError,
    ExcludedError,
    NotEnrolledError,
    ProtocolError,
    ReplayError,
    UnauthorizedError,
    UnverifiedModelError,
    VerificationError,
)
from .keys import ClientKeys, ClientPublicKey, ServerKeys, ServerPublicKeys
from .messages import AggA, AggB, Authorization, ModelPin, ParticipantSet, ToA, ToB
from .params import JanusParams, deployment_domain
from .prg import mask
from .quantize import dequantize, quantize
from .server import ServerA, ServerB
from .tls import PinnedTLS

__all__ = [
    "__version__",
    # main API: parameters, the client, the two servers
    "JanusParams",
    "deployment_domain",
    "JanusClient",
    "ServerA",
    "ServerB",
    # keys, the operator's enrolment list, TLS pinning
    "Enrolment",
    "PinnedTLS",
    "ClientKeys",
    "ClientPublicKey",
    "ServerKeys",
    "ServerPublicKeys",
    # encoding, masking, commitment
    "quantize",
    "dequantize",
    "mask",
    "Commitment",
    "CommitmentKey",
    "PedersenBLS12381",
    "SeparableCommitment",
    # messages
    "ToA",
    "ToB",
    "ParticipantSet",
    "AggA",
    "AggB",
    "ModelPin",
    "Authorization",
    # errors
    "ProtocolError",
    "ReplayError",
    "VerificationError",
    "NotEnrolledError",
    "EnrolmentError",
    "ExcludedError",
    "UnverifiedModelError",
    "CertificatePinError",
    "UnauthorizedError",
]
