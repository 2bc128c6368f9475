"""The client's side of one round (spec §2 steps 1-4 and 7): mask, commit, send, verify.

Per round a client runs one PRG stream, two multi-scalar multiplications of length l + 1 (commit,
then check the aggregate's opening) and O(1) signatures; it sends 8(l+1) + O(1) bytes and
receives 16(l+1) + O(1), whatever the number of clients n.
"""

import numbers
import secrets
import warnings

import numpy as np
from nacl.public import SealedBox

from icml25_core import check_array, check_scalar

from .commitment import CommitmentKey, PedersenBLS12381, SeparableCommitment
from .enrolment import Enrolment
from .errors import ExcludedError, UnverifiedModelError, VerificationError
from .keys import ClientKeys, ServerPublicKeys, box_public, verify_signature
from .messages import AggA, AggB, ModelPin, ToA, ToB, digest, y_digest
from .params import GROUP_ORDER, JanusParams
from .prg import SEED_BYTES, mask
from .quantize import dequantize, quantize


def mask_and_commit(params, ck, scheme, x, seed, round_id, rho_a, rho_b):
    """y = x + PRG(seed, t) mod 2^64 and C = commit(x, ρ^A, ρ^B) (spec §2 steps 2-3).

    Returns
    -------
    y : numpy.ndarray of shape (l + 1,), uint64
    C : Commitment
    """
    r = mask(seed, round_id, params.length, params.domain)
    y = np.asarray(x, dtype=np.int64).astype(np.uint64) + r  # uint64 addition wraps mod 2^64
    return y, scheme.commit(ck, x, rho_a, rho_b)


def _check_aggregates(agg_a, agg_b) -> None:
    if not isinstance(agg_a, AggA) or not isinstance(agg_b, AggB):
        raise TypeError(
            f"`agg_a`, `agg_b` must be AggA, AggB; got {type(agg_a).__name__}, "
            f"{type(agg_b).__name__}"
        )


def verify_aggregate(
    params, ck, a_pub, b_pub, agg_a, agg_b, scheme=None, round_id=None, *, enrolled=None,
    client_id=None,
) -> np.ndarray:  # fmt: skip
    """Check both servers' outputs and return the exact sum X = (Y − R) mod 2^64.

    Anyone holding the public keys and the commitment key can run it (clients, server A to
    rebuild the global model, an auditor).

    Parameters
    ----------
    params : JanusParams
    ck : CommitmentKey
    a_pub, b_pub : ServerPublicKeys
    agg_a, agg_b : AggA, AggB
        The two servers' signed outputs of one round.
    scheme : SeparableCommitment, default=PedersenBLS12381()
    round_id : int, optional
        The round the caller expects; an aggregate of any other round (a stale or replayed,
        though validly signed, result) is rejected. Pass it whenever it is known.
    enrolled : collection of int, optional
        The enrolled client ids (``Enrolment.client_ids``): a U holding any other id is
        rejected.
    client_id : int, optional
        The id of a client that submitted to both servers in this round: a U without it is
        rejected with ``ExcludedError`` (silent exclusion by A, issue 16 hole 2).

    Returns
    -------
    numpy.ndarray of shape (l + 1,), uint64
        Σ_U x_i; X[l] is the total weight.

    Raises
    ------
    TypeError
        If the arguments are not ``AggA`` / ``AggB``.
    VerificationError
        If a signature is invalid, A's and B's (t, U, C_U) differ, t is not `round_id`,
        |U| < t, U holds an id not in `enrolled`, the sum is out of range, or
        Σ_j X_j · G_j + (P_A + P_B) · H != C_U.
    ExcludedError
        If `client_id` is not in U.

    Notes
    -----
    Source: spec §2 step 7.
    """
    _check_aggregates(agg_a, agg_b)
    p = params
    scheme = PedersenBLS12381() if scheme is None else scheme
    if not verify_signature(a_pub.sign, agg_a.payload(p.context), agg_a.signature):
        raise VerificationError("server A's signature on its aggregate is invalid")
    if not verify_signature(b_pub.sign, agg_b.payload(p.context), agg_b.signature):
        raise VerificationError("server B's signature on its aggregate is invalid")
    for field in ("round_id", "ids", "commitment"):
        if getattr(agg_a, field) != getattr(agg_b, field):
            raise VerificationError(f"servers A and B disagree on {field}")
    if enrolled is not None and not set(agg_a.ids) <= set(enrolled):
        raise VerificationError("U holds ids that are not on the enrolment list (sybils)")
    if round_id is not None and agg_a.round_id != round_id:
        raise VerificationError(
            f"the aggregate is of round {agg_a.round_id}, not of the expected `round_id` "
            f"{round_id}: a stale or replayed result"
        )
    if agg_a.count < p.min_clients:
        raise VerificationError(f"|U| = {agg_a.count} < min_clients = {p.min_clients}")
    if len(agg_a.vector) != p.length or len(agg_b.vector) != p.length:
        raise VerificationError(f"aggregate vectors must have length {p.length}")
    X = agg_a.vector.astype(np.uint64) - agg_b.vector.astype(np.uint64)  # wraps mod 2^64
    total = int(X[-1])
    if not 1 <= total <= p.max_total_weight:
        raise VerificationError(
            f"the unmasked total weight {total} is outside [1, max_total_weight = "
            f"{p.max_total_weight}]: the participants' weights sum to more than W_max, or a "
            "server cheated"
        )
    if (X[:-1] > np.uint64(total * p.max_code)).any():
        raise VerificationError("the unmasked sum is out of range: not a sum of encodings")
    blinding = (agg_a.blinding + agg_b.blinding) % GROUP_ORDER
    if not scheme.check_opening(ck, agg_a.commitment, X, blinding):
        raise VerificationError("the aggregate does not open the aggregated commitment C_U")
    if client_id is not None and int(client_id) not in agg_a.ids:
        raise ExcludedError(
            f"client {client_id} prepared round {agg_a.round_id} but is not in the participant "
            f"set U (|U| = {agg_a.count}): server A left it out, or one of its two messages "
            "never reached its server (then pass submitted=False)"
        )
    return X


def verify_model_pin(params, a_pub, b_pub, pin, layout: bytes, model=None) -> None:
    """Check the first-round model pin both servers signed (issue 16, hole 1).

    Parameters
    ----------
    params : JanusParams
    a_pub, b_pub : ServerPublicKeys
    pin : ModelPin
    layout : bytes
        SHA-256 of the received model's layout (names, dtypes, shapes); checked every round.
    model : bytes, optional
        SHA-256 of the received model (layout and values); checked in the pinned round.

    Raises
    ------
    UnverifiedModelError
        If a signature is invalid, or the layout or the model differs from the pinned one.
    """
    if not isinstance(pin, ModelPin):
        raise TypeError(f"`pin` must be a ModelPin, got {type(pin).__name__}")
    payload = pin.payload(params.context)
    for keys, signature, name in ((a_pub, pin.a_signature, "A"), (b_pub, pin.b_signature, "B")):
        if not verify_signature(keys.sign, payload, signature):
            raise UnverifiedModelError(f"the model pin is not signed by server {name}")
    if layout != pin.layout:
        raise UnverifiedModelError(
            "the model's arrays (names, dtypes, shapes) differ from the pinned model's"
        )
    if model is not None and model != pin.model:
        raise UnverifiedModelError(
            f"the round-{pin.round_id} model differs from the one both servers pinned "
            "(model-inconsistency attack)"
        )


class JanusClient:
    """One federated client: ``prepare`` its masked update, ``finalize`` a verified aggregate.

    Parameters
    ----------
    params : JanusParams
    keys : ClientKeys
        The client's Ed25519 key, registered with both servers.
    a_pub, b_pub : ServerPublicKeys
        Server A's verify key; server B's verify key and X25519 box key.
    ck : CommitmentKey
        The generators (``CommitmentKey.derive(params)``).
    scheme : SeparableCommitment, default=PedersenBLS12381()
        The commitment scheme (pluggable).
    enrolment : Enrolment, optional
        The operator-signed list: aggregates whose U holds other ids are rejected, and
        `params`, `a_pub`, `b_pub` must equal its own (``from_enrolment`` takes them from it).

    Raises
    ------
    TypeError, ValueError
        On arguments of the wrong type, or that differ from the enrolment's.
    NotEnrolledError
        If `keys` are not on the enrolment list.

    Notes
    -----
    Source: spec §2 (Janus-style reconstruction of Pu et al., ICML 2025).
    """

    def __init__(
        self,
        params: JanusParams,
        keys: ClientKeys,
        a_pub: ServerPublicKeys,
        b_pub: ServerPublicKeys,
        ck: CommitmentKey,
        scheme: SeparableCommitment | None = None,
        *,
        enrolment: Enrolment | None = None,
    ):
        for value, name, kind in (
            (params, "params", JanusParams),
            (keys, "keys", ClientKeys),
            (a_pub, "a_pub", ServerPublicKeys),
            (b_pub, "b_pub", ServerPublicKeys),
            (ck, "ck", CommitmentKey),
        ):
            if not isinstance(value, kind):
                raise TypeError(f"`{name}` must be a {kind.__name__}, got {type(value).__name__}")
        if ck.length != params.length or ck.domain != params.domain:
            raise ValueError(f"`ck` has {ck.length} generators, params need {params.length}")
        self.params, self.keys, self.a_pub, self.b_pub, self.ck = params, keys, a_pub, b_pub, ck
        self.scheme = PedersenBLS12381() if scheme is None else scheme
        self._box = SealedBox(box_public(b_pub))
        self.round_id: int | None = None  # the last round this client prepared
        self.enrolment = enrolment
        if enrolment is not None:
            if not isinstance(enrolment, Enrolment):
                raise TypeError(f"`enrolment` must be an Enrolment, got {type(enrolment)}")
            if (params, a_pub, b_pub) != (enrolment.params, enrolment.a, enrolment.b):
                raise ValueError("`params`, `a_pub`, `b_pub` differ from the enrolment's")
            enrolment.check_client(keys.public)

    @classmethod
    def from_enrolment(cls, enrolment: Enrolment, keys: ClientKeys, ck=None, scheme=None):
        """A client with the parameters and server keys of an ``Enrolment``.

        `ck` defaults to ``CommitmentKey.derive(enrolment.params)`` (slow for large l: pass
        a cached one).
        """
        if not isinstance(enrolment, Enrolment):
            raise TypeError(f"`enrolment` must be an Enrolment, got {type(enrolment).__name__}")
        ck = CommitmentKey.derive(enrolment.params) if ck is None else ck
        return cls(enrolment.params, keys, enrolment.a, enrolment.b, ck, scheme,
                   enrolment=enrolment)  # fmt: skip

    @property
    def client_id(self) -> int:
        """The client's id: its key's ``ClientPublicKey.client_id``."""
        return self.keys.client_id

    def prepare(self, u, weight, round_id: int) -> tuple[ToA, ToB]:
        """Encode, mask and commit the update; return the two signed messages.

        Parameters
        ----------
        u : array_like of shape (l,), real, finite
            The update (e.g. local minus global model, flattened).
        weight : int
            w in [1, W_max], e.g. the number of local examples.
        round_id : int
            t >= 0, the round.

        Returns
        -------
        (ToA, ToB)
            Send the first to server A, the second to server B.

        Raises
        ------
        TypeError, ValueError
            On bad `u`, `weight` or `round_id` (the message names the argument).

        Warns
        -----
        UserWarning
            If some of `u` lies beyond ±C: those values are clipped, and the aggregate is the
            mean of the clipped updates (with ``JanusFedAvg``, of clipped models).

        Notes
        -----
        Source: spec §2 steps 1-4. Seed from ``secrets``; ρ^A, ρ^B uniform in Z_r.
        """
        check_scalar(round_id, "round_id", kind=numbers.Integral, low=0, high=2**64 - 1)
        if np.ma.isMaskedArray(u) and np.ma.getmaskarray(u).any():
            raise ValueError("`u` has masked entries; fill them (u.filled(...)) before encoding")
        u = check_array(u, "u", ndim=1, shape=(self.params.dim,), cast=np.float64)
        beyond = int(np.count_nonzero(np.abs(u) > self.params.clip))
        if beyond:
            warnings.warn(
                f"`u`: {beyond} of {u.size} values lie beyond ±clip = {self.params.clip} "
                f"(max |u| = {np.abs(u).max():.4g}) and are clipped; raise JanusParams.clip "
                "if they are not meant to be",
                UserWarning,
                stacklevel=2,
            )
        x = quantize(u, weight, self.params)
        seed = secrets.token_bytes(SEED_BYTES)
        rho_a, rho_b = secrets.randbelow(GROUP_ORDER), secrets.randbelow(GROUP_ORDER)
        return self.seal(x, seed, int(round_id), rho_a, rho_b)

    def seal(self, x, seed: bytes, round_id: int, rho_a: int, rho_b: int) -> tuple[ToA, ToB]:
        """``prepare`` for an encoded vector `x` with explicit randomness (used by ``prepare``
        and by tests that replay a view)."""
        for value, name in ((rho_a, "rho_a"), (rho_b, "rho_b")):
            check_scalar(value, name, kind=numbers.Integral, low=0, high=GROUP_ORDER - 1)
        if not isinstance(seed, bytes) or len(seed) != SEED_BYTES:
            raise ValueError(f"`seed` must be {SEED_BYTES} bytes")
        check_scalar(round_id, "round_id", kind=numbers.Integral, low=0, high=2**64 - 1)
        rho_a, rho_b, round_id = int(rho_a), int(rho_b), int(round_id)
        y, C = mask_and_commit(self.params, self.ck, self.scheme, x, seed, round_id, rho_a, rho_b)
        box = self._box.encrypt(seed + rho_b.to_bytes(32, "little"))
        y_hash, box_digest = y_digest(rho_a, y), digest(bytes(box))
        to_a = ToA(round_id, self.client_id, y, rho_a, C, box_digest, b"")
        signature = self.keys.sign(to_a.payload(self.params.context))
        to_a = ToA(round_id, self.client_id, y, rho_a, C, box_digest, signature)
        to_b = ToB(round_id, self.client_id, bytes(box), C, y_hash, signature)
        self.round_id = round_id
        return to_a, to_b

    def verify(
        self, agg_a: AggA, agg_b: AggB, round_id: int | None = None, *, submitted=None
    ) -> np.ndarray:
        """Check both servers' outputs; return the exact sum X (``verify_aggregate``).

        `round_id` defaults to the last round this client prepared: an aggregate of another
        round is rejected. A client that prepared nothing must pass it. `submitted` (default:
        this client prepared `round_id`) says its messages reached both servers: a U without
        it raises ``ExcludedError``; pass False for a client whose message did not go out.
        """
        _check_aggregates(agg_a, agg_b)
        if round_id is None:
            round_id = self.round_id
        if round_id is None:
            raise ValueError(
                "`round_id` is required: this client prepared no round, so it cannot tell "
                "a stale aggregate from the current one"
            )
        check_scalar(round_id, "round_id", kind=numbers.Integral, low=0, high=2**64 - 1)
        if submitted is None:
            submitted = self.round_id == round_id
        return verify_aggregate(
            self.params, self.ck, self.a_pub, self.b_pub, agg_a, agg_b, self.scheme,
            round_id=int(round_id),
            enrolled=None if self.enrolment is None else self.enrolment.client_ids,
            client_id=self.client_id if submitted else None,
        )  # fmt: skip

    def finalize(
        self, agg_a: AggA, agg_b: AggB, round_id: int | None = None, *, submitted=None
    ) -> np.ndarray:
        """Verify the round's outputs and return the weighted mean update.

        Parameters
        ----------
        agg_a, agg_b : AggA, AggB
            The two servers' signed outputs.
        round_id : int, optional
            The round expected; default: the last round this client prepared. Required for a
            client that prepared nothing.
        submitted : bool, optional
            Whether this client's messages of that round reached both servers (default: it
            prepared that round); then a U without it is refused.

        Returns
        -------
        numpy.ndarray of shape (l,), float64
            X[:l] / (2^f · X[l]) − C: the weighted mean of the participants' clipped updates,
            exact to 2^-(f+1).

        Raises
        ------
        TypeError, VerificationError
            As for ``verify_aggregate``; VerificationError also for an aggregate of another
            round than `round_id`.
        ExcludedError
            If the client submitted but U leaves it out.
        ValueError
            If `round_id` is missing for a client that prepared nothing.
        """
        return dequantize(self.verify(agg_a, agg_b, round_id, submitted=submitted), self.params)
