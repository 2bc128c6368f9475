"""TCP transport, TLS where the enrolment pins a certificate: the asyncio service of one
server, length-prefixed frames, a blocking client stub (``Remote``).

Frame: 4-byte big-endian length, then the payload. Request payload: one op byte and a body;
response: one status byte (0 ok, 1 ProtocolError, 2 ReplayError, 3 ValueError,
4 NotEnrolledError, 5 UnauthorizedError) and a body. There is no registration request: the
servers take their clients from the operator-signed enrolment file (issue 16). Closing a round,
reading who submitted and reading B's bindings need A's signature (``Authorization``): who
closes a round chooses |U|. A request frame may be no longer than the largest message of the
enrolment's parameters, and a server serves at most ``max_connections`` connections at once.
Running the servers as processes: :mod:`janus_secagg.serving`.
"""

import asyncio
import collections
import logging
import numbers
import signal
import socket
import ssl
import struct

from icml25_core import check_scalar

from .enrolment import Enrolment
from .errors import NotEnrolledError, ProtocolError, ReplayError, UnauthorizedError
from .keys import ServerPublicKeys
from .messages import AggA, AggB, Authorization, ModelPin, ParticipantSet, ToA, ToB
from .server import ServerA, ServerB
from .tls import PinnedTLS

KEYS, SUBMIT, RECEIVED, PARTICIPANTS, CLOSE, FETCH, BINDINGS, PIN, ROUND = range(1, 10)
_OP_NAMES = dict(enumerate(
    ("keys", "submit", "received", "participants", "close", "fetch", "bindings", "pin", "round"),
    1,
))  # fmt: skip
#: Seconds from connecting to a request's length header (TLS handshake included).
READ_TIMEOUT = 15.0
#: Slowest accepted upload after the header, bytes per second (a body of n bytes may take
#: READ_TIMEOUT + n / MIN_RATE seconds: 8 MB, a ToA at l = 10^6, gets 140 s).
MIN_RATE = 64 * 1024
#: Frame bytes allowed beyond 8 bytes per vector entry and per enrolled client.
FRAME_SLACK = 4096
_LEN = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_ERRORS = {
    1: ProtocolError,
    2: ReplayError,
    3: ValueError,
    4: NotEnrolledError,
    5: UnauthorizedError,
}
log = logging.getLogger("janus_secagg.net")


def max_frame(params, n_clients: int) -> int:
    """Longest request a server reads: 8 bytes per vector entry and per client, plus
    ``FRAME_SLACK`` (a ``ToA`` is 8(l+1) + 260 bytes, a ``ParticipantSet`` 8|U| + 78)."""
    return FRAME_SLACK + 8 * (params.length + n_clients)


async def _read_frame(reader: asyncio.StreamReader, limit: int, timeout: float) -> bytes:
    """A request: its length header within `timeout`, then the body at >= MIN_RATE bytes/s."""
    async with asyncio.timeout(timeout):
        (n,) = _LEN.unpack(await reader.readexactly(_LEN.size))
    if n > limit:
        raise ValueError(f"frame of {n} bytes is longer than the {limit} this server reads")
    async with asyncio.timeout(timeout + n / MIN_RATE):
        return await reader.readexactly(n)


def _frame(payload: bytes) -> bytes:
    return _LEN.pack(len(payload)) + payload


def _ids(ids) -> bytes:
    return _LEN.pack(len(ids)) + b"".join(_U64.pack(i) for i in ids)


def _bindings(bindings: dict) -> bytes:
    return _LEN.pack(len(bindings)) + b"".join(_U64.pack(i) + d for i, d in bindings.items())


def _read_bindings(body: bytes) -> dict[int, bytes]:
    (n,) = _LEN.unpack(body[:4])
    if len(body) != 4 + 40 * n:
        raise ValueError("malformed binding list")
    rows = (body[4 + 40 * k : 44 + 40 * k] for k in range(n))
    return {_U64.unpack(row[:8])[0]: row[8:] for row in rows}


def _read_ids(body: bytes) -> list[int]:
    (n,) = _LEN.unpack(body[:4])
    if len(body) != 4 + 8 * n:
        raise ValueError("malformed id list")
    return [_U64.unpack(body[4 + 8 * k : 12 + 8 * k])[0] for k in range(n)]


class Remote:
    """Blocking client stub of a served ``ServerA`` or ``ServerB`` (one connection per call).

    Parameters
    ----------
    host : str
    port : int
    timeout : float, default=60.0
        Seconds per call (connect, send, receive).
    tls : PinnedTLS, optional
        Speak TLS and require the pinned certificate (``Remote.to_server`` sets it from the
        enrolment); None: plain TCP.
    """

    def __init__(self, host: str, port: int, timeout: float = 60.0, tls=None):
        if not isinstance(host, str) or not host:
            raise TypeError(f"`host` must be a non-empty str, got {host!r}")
        check_scalar(port, "port", kind=numbers.Integral, low=1, high=65535)
        check_scalar(timeout, "timeout", kind=numbers.Real, low=0.0, inclusive="neither")
        if tls is not None and not isinstance(tls, PinnedTLS):
            raise TypeError(f"`tls` must be a PinnedTLS or None, got {type(tls).__name__}")
        self.host, self.port, self.timeout, self.tls = host, int(port), float(timeout), tls

    @classmethod
    def to_server(
        cls, enrolment: Enrolment, role: str, host: str, port: int, *, client_cert=None,
        client_key=None, timeout: float = 60.0,
    ) -> "Remote":  # fmt: skip
        """A stub of server `role` ("a" or "b") of an enrolment: TLS pinned to that server's
        certificate when the enrolment holds one, else plain TCP.

        Raises
        ------
        TypeError, ValueError
            On a bad argument; `client_cert` without `client_key`.
        """
        if not isinstance(enrolment, Enrolment):
            raise TypeError(f"`enrolment` must be an Enrolment, got {type(enrolment).__name__}")
        if role not in ("a", "b"):
            raise ValueError(f"`role` must be 'a' or 'b', got {role!r}")
        pem = enrolment.a_certificate if role == "a" else enrolment.b_certificate
        tls = None if pem is None else PinnedTLS(pem, client_cert, client_key)
        return cls(host, port, timeout, tls)

    def _connect(self) -> socket.socket:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        except OSError as error:
            raise ConnectionError(f"cannot reach {host_port(self)}: {error}") from error
        return sock if self.tls is None else self.tls.wrap(sock, self.host, self.port)

    def call(self, op: int, body: bytes = b"") -> bytes:
        """Send one request; return the body of an ok response, raise the server's error.

        Raises
        ------
        ProtocolError, ReplayError, NotEnrolledError, UnauthorizedError, ValueError
            The server's refusal.
        CertificatePinError
            If the server's TLS certificate is not the pinned one.
        ConnectionError, OSError
            If the server cannot be reached.
        """
        with self._connect() as sock:
            try:
                sock.sendall(_frame(bytes([op]) + body))
                head = self._recv(sock, _LEN.size)
                payload = self._recv(sock, _LEN.unpack(head)[0])
            except ssl.SSLError as error:  # e.g. the server refused our client certificate
                raise ConnectionError(
                    f"TLS session with {host_port(self)} failed ({error}): the server may "
                    "require a client certificate (--tls-client-ca)"
                ) from error
            except ConnectionError as error:
                hint = (
                    "; a TLS server drops plain connections: make the stub with "
                    "Remote.to_server(enrolment, ...) or tls=PinnedTLS(...)"
                    if self.tls is None
                    else "; a server started with --tls-client-ca drops clients without a "
                    "client certificate it accepts (client_cert=, client_key=)"
                ) + "; or the server is at its connection limit (its log says so)"
                raise ConnectionError(f"{host_port(self)}: {error}{hint}") from error
        status, rest = payload[0], payload[1:]
        if status:
            raise _ERRORS.get(status, ProtocolError)(rest.decode("utf-8", "replace"))
        return rest

    @staticmethod
    def _recv(sock: socket.socket, n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            chunk = sock.recv(min(n - got, 1 << 20))
            if not chunk:
                raise ConnectionError("server closed the connection")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def keys(self) -> ServerPublicKeys:
        """The server's public keys as it states them (a check: trust the enrolment's)."""
        return ServerPublicKeys.from_bytes(self.call(KEYS))

    def submit(self, msg) -> None:
        """Send a ``ToA`` (to A) or ``ToB`` (to B); raises the server's ``ProtocolError``."""
        if not isinstance(msg, ToA | ToB):
            raise TypeError(f"`msg` must be a ToA or ToB, got {type(msg).__name__}")
        self.call(SUBMIT, msg.to_bytes())

    def received(self, authorization: Authorization) -> list[int]:
        """Sorted ids of the clients whose message of the open round the server accepted
        (U_A or U_B); `authorization` is A's signed "received" for that round."""
        return _read_ids(self.call(RECEIVED, _authorization(authorization, "received")))

    def bindings(self, authorization: Authorization) -> dict[int, bytes]:
        """B's ``ServerB.bindings``: U_B with each client's message digest (A's call, with
        A's signed "bindings" for the open round: ``ServerA.authorize``)."""
        return _read_bindings(self.call(BINDINGS, _authorization(authorization, "bindings")))

    def aggregate(self, participants: ParticipantSet) -> AggB:
        """Send A's signed participant set to B; B's signed ``AggB`` (server A's call)."""
        return AggB.from_bytes(self.call(PARTICIPANTS, participants.to_bytes()))

    def pin_model(self, pin: ModelPin) -> ModelPin:
        """Send A's signed model pin to B; the pin with B's signature (``ServerB.pin_model``)."""
        return ModelPin.from_bytes(self.call(PIN, pin.to_bytes()))

    def close_round(self, authorization: Authorization) -> AggA:
        """Ask A to close its open round: fix U with B, have B answer, publish A's aggregate.

        Only A's operator may: `authorization` is ``Authorization.sign(a_keys,
        params.context, "close", round_id)`` with A's keys (``ServerKeys.load`` of A's key
        file); anyone else gets ``UnauthorizedError``.
        """
        return AggA.from_bytes(self.call(CLOSE, _authorization(authorization, "close")))

    def fetch(self, round_id: int, cls):
        """The published aggregate (``AggA`` from A, ``AggB`` from B) of a round.

        Raises
        ------
        TypeError, ValueError
            If `round_id` is not an int in [0, 2^64) or `cls` is not ``AggA`` / ``AggB``.
        """
        check_scalar(round_id, "round_id", kind=numbers.Integral, low=0, high=2**64 - 1)
        if cls not in (AggA, AggB):
            raise TypeError(f"`cls` must be AggA (from A) or AggB (from B), got {cls!r}")
        return cls.from_bytes(self.call(FETCH, _U64.pack(round_id)))

    def open_round(self) -> int:
        """The round the server accepts messages for now (public: clients prepare for it)."""
        return _U64.unpack(self.call(ROUND))[0]


def host_port(remote: Remote) -> str:
    """``host:port`` of a stub, for messages."""
    return f"{remote.host}:{remote.port}"


def _authorization(authorization, request: str) -> bytes:
    if not isinstance(authorization, Authorization) or authorization.request != request:
        raise TypeError(
            f"`authorization` must be A's Authorization for {request!r} "
            f"(Authorization.sign(a_keys, params.context, {request!r}, round_id))"
        )
    return authorization.to_bytes()


def _out_of_step(a_round: int, b_round: int) -> str:
    if b_round < a_round:
        return (
            f"server B is at round {b_round}, behind A's {a_round}: B lost its record (its state "
            "file); restore it or enrol a new deployment"
        )
    return f"server B is at round {b_round}, A at {a_round}: A lost its record (its state file)"


def sync_with_b(server: ServerA, peer: Remote) -> None:
    """At A's start: ask B for its open round; open it when B answered rounds A has no record
    of (A without its state file, or killed in a close), log a warning when B is behind."""
    try:
        b_round = peer.open_round()
    except (OSError, ProtocolError) as error:
        log.warning("cannot reach server B at %s at start (%s): checked again at the first close",
                    host_port(peer), error)  # fmt: skip
        return
    if b_round > server.round_id:
        server.skip_to(b_round)
    elif b_round < server.round_id:
        log.error(_out_of_step(server.round_id, b_round))


def _error_reply(error: Exception) -> bytes:
    """The status byte and text of a refused request (``_ERRORS`` on the client's side);
    3 (ValueError) for a malformed request."""
    kinds = ((5, UnauthorizedError), (2, ReplayError), (4, NotEnrolledError), (1, ProtocolError))
    status = next((code for code, kind in kinds if isinstance(error, kind)), 3)
    return bytes([status]) + str(error).encode()


class Service:
    """Serves one ``ServerA`` or ``ServerB`` over asyncio TCP.

    Parameters
    ----------
    server : ServerA or ServerB
    peer : Remote, optional
        Server B, for A (called when a round is closed).
    rounds : int, optional
        Stop `linger` seconds after this many rounds have closed.
    linger : float, default=10.0
    max_connections : int, default=64
        Connections served at once, counted from the TCP accept (before any TLS handshake);
        more are dropped. Each holds at most one request frame (``max_frame`` bytes), so a
        server buffers at most ``max_connections × max_frame`` bytes of requests.
    max_per_peer : int, default=32
        Connections one peer address may hold at once (clients behind one NAT address share
        it: raise it for them).
    read_timeout : float, default=READ_TIMEOUT
        Seconds from the accept to the request's header (TLS handshake included); the body
        then gets ``read_timeout + n / MIN_RATE`` seconds.
    """

    def __init__(self, server, peer=None, rounds=None, linger: float = 10.0,
                 max_connections: int = 64, max_per_peer: int = 32,
                 read_timeout: float = READ_TIMEOUT):  # fmt: skip
        check_scalar(max_connections, "max_connections", kind=numbers.Integral, low=1)
        check_scalar(max_per_peer, "max_per_peer", kind=numbers.Integral, low=1)
        check_scalar(read_timeout, "read_timeout", kind=numbers.Real, low=0.0, high=3600.0,
                     inclusive="right")  # fmt: skip
        self.server, self.peer, self.rounds, self.linger = server, peer, rounds, linger
        self.max_connections, self.active = int(max_connections), 0
        self.max_per_peer, self.read_timeout = int(max_per_peer), float(read_timeout)
        self.per_peer: collections.Counter[str] = collections.Counter()
        self.tls: ssl.SSLContext | None = None
        self.closed_rounds = 0
        self.stop: asyncio.Event | None = None  # made by run(), in its event loop

    async def _peer_call(self, op: int, body: bytes) -> bytes:
        if self.peer is None:
            raise ProtocolError("this server has no peer")
        try:
            return await asyncio.to_thread(self.peer.call, op, body)
        except ProtocolError as error:
            raise type(error)(f"server B refused: {error}") from error
        except OSError as error:
            log.error("cannot reach server B at %s: %s", host_port(self.peer), error)
            raise ProtocolError(
                f"server A could not reach server B at {host_port(self.peer)}: {error}"
            ) from error

    async def _dispatch(self, op: int, body: bytes) -> bytes:
        s = self.server
        if op == KEYS:
            return s.public.to_bytes()
        if op == ROUND:
            return _U64.pack(s.round_id)
        if op == SUBMIT:
            s.receive((ToA if isinstance(s, ServerA) else ToB).from_bytes(body))
            return b""
        if op == RECEIVED:
            s.check_authorization(Authorization.from_bytes(body), "received")
            return _ids(s.received)
        if op == BINDINGS and isinstance(s, ServerB):
            s.check_authorization(Authorization.from_bytes(body), "bindings")
            return _bindings(s.bindings)
        if op == FETCH:
            t = _U64.unpack(body)[0]
            if t not in s.outputs:
                raise ProtocolError(f"round {t} has no published aggregate")
            return s.outputs[t].to_bytes()
        if op == PIN and isinstance(s, ServerB):
            return s.pin_model(ModelPin.from_bytes(body)).to_bytes()
        if op == PARTICIPANTS and isinstance(s, ServerB):
            answer = s.aggregate(ParticipantSet.from_bytes(body))
            self._round_closed(answer)
            return answer.to_bytes()
        if op == CLOSE and isinstance(s, ServerA):
            t = s.round_id
            s.check_authorization(Authorization.from_bytes(body), "close")
            b_round = _U64.unpack(await self._peer_call(ROUND, b""))[0]
            if b_round == t + 1:  # B answered t, but its reply never reached A
                try:
                    s.adopt(AggB.from_bytes(await self._peer_call(FETCH, _U64.pack(t))))
                except ProtocolError:
                    s.skip_to(b_round)
                    raise ProtocolError(
                        f"round {t} was answered by B while A had lost its submissions; A opened "
                        f"round {b_round}: prepare again for it"
                    ) from None
            elif b_round != t:
                raise ProtocolError(_out_of_step(t, b_round))
            else:
                bindings = await self._peer_call(BINDINGS, s.authorize("bindings").to_bytes())
                pset = s.participants(_read_bindings(bindings))
                AggB.from_bytes(await self._peer_call(PARTICIPANTS, pset.to_bytes()))
            out = s.aggregate(t)
            self._round_closed(out)
            return out.to_bytes()
        raise ProtocolError(f"unknown request {op} for {type(s).__name__}")

    def _round_closed(self, out) -> None:
        log.info("round %d closed: |U| = %d", out.round_id, out.count)
        self.closed_rounds += 1
        if self.rounds is not None and self.closed_rounds >= self.rounds:
            assert self.stop is not None  # requests are served only inside run()
            asyncio.get_running_loop().call_later(self.linger, self.stop.set)

    @property
    def max_frame(self) -> int:
        """The longest request frame this server reads (``max_frame`` of its parameters)."""
        return max_frame(self.server.params, len(self.server.clients))

    async def _handle(self, reader, writer) -> None:
        peer = writer.get_extra_info("peername")
        address = peer[0] if isinstance(peer, tuple) else str(peer)
        if self.active >= self.max_connections or self.per_peer[address] >= self.max_per_peer:
            log.warning("dropped a connection from %s: %d open (%d from that address)", peer,
                        self.active, self.per_peer[address])  # fmt: skip
            writer.close()
            return
        self.active += 1
        self.per_peer[address] += 1
        try:
            if self.tls is not None:  # after counting: a handshake costs memory
                async with asyncio.timeout(self.read_timeout):
                    await writer.start_tls(self.tls)
            request = await _read_frame(reader, self.max_frame, self.read_timeout)
            name = _OP_NAMES.get(request[0], "unknown") if request else "empty"
            try:
                if not request:
                    raise ValueError("empty request: no op byte")
                reply = b"\x00" + await self._dispatch(request[0], request[1:])
            except (ProtocolError, ValueError, TypeError, struct.error) as error:
                reply = _error_reply(error)
                log.warning("%s request from %s refused: %s", name, peer, error)
            writer.write(_frame(reply))
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, TimeoutError,
                OSError) as error:  # fmt: skip
            log.warning("connection from %s dropped: %s", peer, str(error) or type(error).__name__)
        finally:
            self.active -= 1
            self.per_peer[address] -= 1
            if not self.per_peer[address]:
                del self.per_peer[address]
            writer.close()

    async def run(self, host: str, port: int, announce=print, tls=None) -> None:
        """Listen on (host, port), over TLS with the ``ssl.SSLContext`` `tls` if given;
        announce ``LISTENING <port>``; serve until stopped."""
        stop = self.stop = asyncio.Event()
        self.tls = tls
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        server = await asyncio.start_server(self._handle, host, port)  # TLS in _handle
        announce(f"LISTENING {server.sockets[0].getsockname()[1]}")
        async with server:
            await stop.wait()
