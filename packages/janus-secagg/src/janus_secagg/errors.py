"""The protocol's exceptions (spec §3): a refused message, a replay, a failed verification."""


class ProtocolError(Exception):
    """A message or request breaks the protocol: unsigned or mis-signed, unknown client,
    wrong round, duplicate, too few participants, or a second answer in one round."""


class ReplayError(ProtocolError):
    """A message signed for an earlier round arrived after that round closed."""


class VerificationError(Exception):
    """The servers' aggregate does not verify: signatures, consistency of A's and B's outputs,
    the participant count, the range of the sum, or the commitment opening."""
