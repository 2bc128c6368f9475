"""The protocol's exceptions (spec §3; issue 16): a refused message, a replay, a failed
verification, an unauthorised key or request, an excluded client, an unverified model, a
wrong TLS peer."""


class ProtocolError(Exception):
    """A message or request breaks the protocol: unsigned or mis-signed, unknown client,
    wrong round, duplicate, too few participants, or a second answer in one round."""


class ReplayError(ProtocolError):
    """A message signed for an earlier round arrived after that round closed."""


class UnauthorizedError(ProtocolError):
    """A request only server A may make (close a round, read who submitted or B's bindings)
    lacks A's signature for the open round."""


class NotEnrolledError(ProtocolError):
    """A client key or id is not on the operator-signed enrolment list (a sybil)."""


class EnrolmentError(ValueError):
    """An enrolment file is unreadable, malformed, or not signed by the expected operator."""


class VerificationError(Exception):
    """The servers' aggregate does not verify: signatures, consistency of A's and B's outputs,
    the participant count, the range of the sum, or the commitment opening."""


class ExcludedError(VerificationError):
    """The aggregate's participant set U leaves out a client that submitted to both servers
    (silent exclusion by server A)."""


class UnverifiedModelError(VerificationError):
    """A client was asked to train on a model it cannot verify: no previous aggregate from a
    round after the first, or a first-round model that differs from the one both servers
    signed."""


class CertificatePinError(ConnectionError):
    """A server's TLS certificate is not the one pinned by the enrolment file."""
