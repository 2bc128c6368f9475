"""Running the servers: ``serve-a`` / ``serve-b`` options, the enrolment- and TLS-checked start
(``serve``), and starting and ending a server process from Python (``start_server``,
``stop_server``: own process group, ended by group id).

``janus-secagg serve-a|serve-b --enrolment FILE --operator HEX --key-file F (--tls-cert C
--tls-key K | --insecure) (--state-file F | --no-state-file)`` prints ``LISTENING <port>``, logs
to stderr, and exits on SIGTERM, or ``--linger`` seconds after ``--rounds`` rounds.
"""

import argparse
import asyncio
import collections
import logging
import numbers
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from icml25_core import check_scalar

from .enrolment import Enrolment, certificate_pem
from .keys import ServerKeys, ServerPublicKeys
from .net import MIN_RATE, READ_TIMEOUT, Remote, Service, sync_with_b
from .server import ServerA, ServerB
from .tls import server_context

log = logging.getLogger("janus_secagg.serving")


def add_server_arguments(parser: argparse.ArgumentParser, role: str | None = None) -> None:
    """Options of ``serve-a`` / ``serve-b``: enrolment, keys, TLS, address, stopping rule.

    `role` ("a" or "b") leaves out the other server's options; None adds both.
    """
    parser.add_argument(
        "--enrolment", required=True,
        help="the operator-signed enrolment file (janus-secagg enrol): parameters, server keys, "
        "TLS certificates and the clients this server accepts",
    )  # fmt: skip
    parser.add_argument(
        "--operator", required=True, help="the operator's Ed25519 verify key, hex (out of band)"
    )
    parser.add_argument(
        "--key-file", required=True,
        help="this server's private keys, as written by `janus-secagg keygen --role a|b`",
    )  # fmt: skip
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port; 0 picks a free one (default)")
    parser.add_argument("--tls-cert", default=None, help="PEM certificate this server presents")
    parser.add_argument("--tls-key", default=None, help="PEM private key of --tls-cert")
    parser.add_argument(
        "--tls-client-ca", default=None, help="require client certificates signed by this CA"
    )
    parser.add_argument(
        "--insecure", action="store_true",
        help="serve plain TCP (only for an enrolment that pins no certificate for this server)",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=None, help="exit after this many rounds")
    parser.add_argument("--linger", type=float, default=10.0, help="seconds served after --rounds")
    parser.add_argument(
        "--max-connections", type=int, default=64,
        help="connections served at once, counted before the TLS handshake (64)",
    )  # fmt: skip
    parser.add_argument(
        "--max-per-peer", type=int, default=32,
        help="connections one address may hold (32; raise it for many clients behind one NAT)",
    )  # fmt: skip
    parser.add_argument(
        "--read-timeout", type=float, default=READ_TIMEOUT,
        help=f"seconds from connect to a request's header, handshake included "
        f"({READ_TIMEOUT:g}); the body then gets this plus 1 s per {MIN_RATE // 1024} KiB",
    )  # fmt: skip
    parser.set_defaults(b_host="127.0.0.1", b_port=None, client_cert=None, client_key=None)
    if role in (None, "a"):
        parser.add_argument("--b-host", default="127.0.0.1", help="server B's host (serve-a)")
        parser.add_argument("--b-port", type=int, default=None, help="server B's port (serve-a)")
        parser.add_argument(
            "--client-cert", default=None, help="A's PEM certificate for B (if B requires one)"
        )
        parser.add_argument("--client-key", default=None, help="the key of --client-cert")
    parser.add_argument(
        "--state-file", default=None,
        help="this server's record of its rounds (required unless --no-state-file): a restarted "
        "server continues at the next round, and B never answers a round twice; its directory "
        "must exist, and one process at a time holds it",
    )  # fmt: skip
    parser.add_argument(
        "--no-state-file", action="store_true",
        help="keep the record in memory only: a restarted A starts again at round 1 and a "
        "restarted B would answer a round twice (tests and throwaway runs)",
    )  # fmt: skip


def make_honest_server(role: str, enrolment: Enrolment, keys: ServerKeys, state=None):
    """The honest ``ServerA`` (role "a") or ``ServerB`` (role "b"), keeping its rounds in the
    file `state` when given, accepting the enrolment's clients only."""
    if role == "a":
        return ServerA(enrolment.params, keys, enrolment=enrolment, state=state)
    return ServerB(enrolment.params, keys, enrolment.a, state=state, enrolment=enrolment)


def _listener_tls(role: str, args: argparse.Namespace, enrolment: Enrolment):
    """The server's ``SSLContext`` (None with ``--insecure``), checked against the pin."""
    pinned = enrolment.a_certificate if role == "a" else enrolment.b_certificate
    if args.insecure:
        if args.tls_cert or pinned is not None:
            raise ValueError(
                "--insecure: the enrolment pins a TLS certificate for this server (or "
                "--tls-cert is given); serve TLS instead"
            )
        return None
    if not args.tls_cert or not args.tls_key:
        raise ValueError("pass --tls-cert and --tls-key (or --insecure for plain TCP)")
    context = server_context(args.tls_cert, args.tls_key, args.tls_client_ca)
    with open(args.tls_cert, "rb") as handle:
        presented = certificate_pem(handle.read(), "--tls-cert")
    if pinned != presented:
        raise ValueError(
            "--tls-cert is not the certificate the enrolment pins for this server: clients "
            "would refuse it"
        )
    return context


def serve(role: str, args: argparse.Namespace, make_server=make_honest_server) -> int:
    """Run server `role` ("a" or "b") until SIGTERM or ``--rounds``; returns the exit status.

    Both servers load the operator-signed ``--enrolment`` (checked with ``--operator``) and
    their ``--key-file``; A also needs ``--b-port`` (B's address), and reaches B over TLS when
    the enrolment pins B's certificate. `make_server(role, enrolment, keys, state)` builds the
    server (tests inject faulty ones).
    """
    try:
        if role == "a" and args.b_port is None:
            raise ValueError("serve-a needs --b-port (server B's port)")
        _check_state_file(args, role)
        check_scalar(args.port, "--port", kind=numbers.Integral, low=0, high=65535)
        check_scalar(args.max_connections, "--max-connections", kind=numbers.Integral, low=1)
        check_scalar(args.max_per_peer, "--max-per-peer", kind=numbers.Integral, low=1)
        check_scalar(args.read_timeout, "--read-timeout", kind=numbers.Real, low=0.0,
                     high=3600.0, inclusive="right")  # fmt: skip
        if args.rounds is not None:
            check_scalar(args.rounds, "--rounds", kind=numbers.Integral, low=1)
        check_scalar(args.linger, "--linger", kind=numbers.Real, low=0.0)
        enrolment = with_flags(lambda: Enrolment.load(args.enrolment, args.operator),
                               path="--enrolment", operator="--operator")  # fmt: skip
        keys = ServerKeys.load(args.key_file, "--key-file")
        if (keys.box is None) != (role == "a"):
            held = "server B's keys" if keys.box is not None else "server A's keys"
            raise ValueError(f"--key-file {args.key_file} holds {held}; serve-{role} needs its own")
        tls = with_flags(lambda: _listener_tls(role, args, enrolment), cert_file="--tls-cert",
                         key_file="--tls-key", client_ca="--tls-client-ca")  # fmt: skip
        peer = None
        if role == "a":
            check_scalar(args.b_port, "--b-port", kind=numbers.Integral, low=1, high=65535)
            peer = with_flags(lambda: Remote.to_server(
                enrolment, "b", args.b_host, args.b_port, client_cert=args.client_cert,
                client_key=args.client_key,
            ), host="--b-host", client_cert="--client-cert", client_key="--client-key")  # fmt: skip
        server = with_flags(
            lambda: make_server(role, enrolment, keys, args.state_file),
            state="--state-file", path="--state-file", keys="--key-file",
        )  # fmt: skip
    except (ValueError, TypeError) as error:
        print(f"janus-secagg serve-{role}: error: {error}", file=sys.stderr)
        return 2
    if peer is not None:
        sync_with_b(server, peer)
    service = Service(server, peer=peer, rounds=args.rounds, linger=args.linger,
                      max_connections=args.max_connections, max_per_peer=args.max_per_peer,
                      read_timeout=args.read_timeout)  # fmt: skip
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO,
        format=f"%(asctime)s serve-{role} %(levelname)s %(message)s",
    )  # fmt: skip

    def announce(line: str) -> None:
        print(line, flush=True)
        log.info(
            "%s: round %d open, %d enrolled clients, %s, requests up to %d bytes", line,
            server.round_id, len(server.clients), "TLS" if tls else "plain TCP",
            service.max_frame,
        )  # fmt: skip

    try:
        asyncio.run(service.run(args.host, args.port, announce, tls))
    except (OSError, OverflowError) as error:  # bind: address in use, unknown host, ...
        print(
            f"janus-secagg serve-{role}: error: cannot listen on --host {args.host} --port "
            f"{args.port}: {error}",
            file=sys.stderr,
        )
        return 2
    return 0


def _check_state_file(args: argparse.Namespace, role: str) -> None:
    """``--state-file`` (a regular file, or a new one in an existing directory), or an explicit
    ``--no-state-file``."""
    if args.no_state_file:
        if args.state_file:
            raise ValueError("pass --state-file or --no-state-file, not both")
        return
    if not args.state_file:
        why = ("a restarted B answers a round twice" if role == "b"
               else "a restarted A starts again at round 1, out of step with B")  # fmt: skip
        raise ValueError(
            f"serve-{role} needs --state-file (the record of its rounds: without it {why}) or "
            "an explicit --no-state-file"
        )
    path = Path(args.state_file)
    if path.exists() and not path.is_file():
        raise ValueError(f"--state-file {args.state_file} is not a regular file")
    if not path.resolve().parent.is_dir():
        raise ValueError(
            f"--state-file {args.state_file}: directory {path.resolve().parent} does not exist"
        )


def with_flags(call, **flags):
    """``call()``, with the argument names in a ``ValueError`` / ``TypeError`` message replaced
    by the command-line flags that carry them (``path="--enrolment"``)."""
    try:
        return call()
    except (ValueError, TypeError) as error:
        text = str(error)
        for name, flag in flags.items():
            text = text.replace(f"`{name}`", f"`{flag}`")
        raise type(error)(text) from None


def parse_public_key(text: str, name: str) -> ServerPublicKeys:
    """A server public key from hex: 32 bytes (Ed25519 verify key) or ``to_bytes()`` (33/65).

    Raises
    ------
    ValueError
        If `text` is not hex of one of these lengths (the message names `name`).
    """
    try:
        raw = bytes.fromhex(str(text).strip())
    except ValueError:
        raise ValueError(f"`{name}` must be hex, got {text!r:.80}") from None
    if len(raw) == 32:
        return ServerPublicKeys(raw)
    if len(raw) in (33, 65):
        return ServerPublicKeys.from_bytes(raw)
    raise ValueError(
        f"`{name}` must be a 32-byte verify key or ServerPublicKeys.to_bytes() (33 or 65 "
        f"bytes) in hex, got {len(raw)} bytes"
    )


def start_server(args, timeout: float = 60.0, log_file=None):
    """Start ``python <args>`` (a ``serve-a``/``serve-b`` command) in its own process group.

    Parameters
    ----------
    args : list of str
        Arguments after the interpreter, e.g. ``["-m", "janus_secagg", "serve-b", ...]``.
    timeout : float, default=60.0
        Seconds to wait for the ``LISTENING <port>`` line.
    log_file : str or Path, optional
        Where the server's log (its stderr) is appended; by default it is read and dropped.

    Returns
    -------
    (subprocess.Popen, int)
        The process and its port. End it with ``stop_server`` (by process group).

    Raises
    ------
    RuntimeError
        If the server did not announce its port in time (it is then ended).
    """
    proc = subprocess.Popen(
        [sys.executable, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    line: list[str] = []
    stdout, stderr = proc.stdout, proc.stderr
    assert stdout is not None  # a pipe
    assert stderr is not None  # a pipe
    tail: collections.deque[str] = collections.deque(maxlen=20)

    def drain() -> None:  # read the log as it comes: a full pipe would block the server
        with open(os.devnull if log_file is None else log_file, "a", encoding="utf-8") as out:
            for text in stderr:
                tail.append(text)
                out.write(text)
                out.flush()

    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()
    reader = threading.Thread(target=lambda: line.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not line or not line[0].startswith("LISTENING"):
        _end_group(proc, timeout=10.0)
        drainer.join(10.0)
        stop_server(proc)
        raise RuntimeError(f"server did not start: {line!r}; stderr: {''.join(tail)}")
    return proc, int(line[0].split()[1])


def _end_group(proc, timeout: float) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout)
    except ProcessLookupError:
        pass


def stop_server(proc, timeout: float = 10.0) -> None:
    """End a server's process group: SIGTERM, then SIGKILL after `timeout` seconds."""
    _end_group(proc, timeout)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
