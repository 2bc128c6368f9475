"""Multi-process runs: starting a command in a process group of its own and ending that whole
group, a free local port for a run's rendezvous, waiting for a server to listen, and ending a
finished worker."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from typing import NoReturn


def end_process(code: int = 0) -> NoReturn:
    """Flush stdout and stderr, then end this process at once with exit status `code`.

    For the last line of a ``torch.distributed`` (gloo) worker whose results are already written
    and whose process group is destroyed: with torch 2.13, gloo's C++ threads can abort the
    interpreter's own teardown now and then ("terminate called without an active exception",
    SIGABRT, after all work is done; the mechanism is described in pytorch/pytorch PR 179291), so
    that ``torchrun`` or a test sees a failed rank. ``os._exit`` skips that teardown: no atexit
    handlers, no finalisers — call it only when nothing is left to save.

    Parameters
    ----------
    code : int, default=0
        Exit status, 0-255.

    Raises
    ------
    TypeError
        If `code` is not an int.
    ValueError
        If `code` is not in 0-255.
    """
    if isinstance(code, bool) or not isinstance(code, int):
        raise TypeError(f"`code` must be an int in 0-255, got {type(code).__name__} {code!r}")
    if not 0 <= code <= 255:
        raise ValueError(f"`code` must be an int in 0-255, got {code!r}")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that is free now (the OS picks it), e.g. for ``MASTER_PORT``.

    Another process may take it before it is used; that race is accepted by torchrun's
    ``--standalone`` mode too.

    Raises
    ------
    TypeError
        If `host` is not a str.
    """
    if not isinstance(host, str):
        raise TypeError(f"`host` must be a str, got {type(host).__name__}")
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_listening(port: int, host: str = "127.0.0.1") -> bool:
    """True iff a TCP connection to (`host`, `port`) is accepted now."""
    with socket.socket() as sock:
        return sock.connect_ex((host, port)) == 0


def wait_until(predicate, timeout: float, what: str, interval: float = 0.5) -> None:
    """Call `predicate()` every `interval` seconds until it is true.

    Raises
    ------
    TimeoutError
        After `timeout` seconds; the message names `what` was awaited (e.g. "the SuperLink").
    """
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout} s waiting for {what}")


@contextlib.contextmanager
def process_group(
    command: Sequence[str], *, grace: float = 15.0, log=None, **popen_kwargs
) -> Iterator[subprocess.Popen]:
    """Run `command` as the leader of a new process group; on leaving the block, end the group.

    Everything the command starts (torchrun's ranks, Ray's raylet and workers, Flower's
    SuperExec) inherits the group, so ending it by its id leaves nothing behind and touches no
    other process — processes are never ended by name. On exit: SIGTERM to the group, up to
    `grace` seconds for the leader to end, then SIGKILL to whatever of the group is left.

    Parameters
    ----------
    command : sequence of str
        The program and its arguments, as for :class:`subprocess.Popen`.
    grace : float, default=15.0
        Seconds between SIGTERM and SIGKILL, >= 0.
    log : str or Path, default=None
        A file that receives the command's stdout and stderr (truncated first); read it for the
        command's messages when it fails.
    **popen_kwargs
        Passed to :class:`subprocess.Popen` (``env``, ``stdout``, ``text``, ...), except
        ``start_new_session``, which is always True.

    Yields
    ------
    subprocess.Popen
        The leader; wait for it (``proc.wait(timeout=...)``) inside the block.

    Raises
    ------
    TypeError
        If `command` is a str, ``start_new_session`` is given, or `log` comes with ``stdout`` or
        ``stderr``.
    ValueError
        If `command` is empty or `grace` is negative.
    """
    if isinstance(command, str) or not isinstance(command, Sequence):
        raise TypeError(f"`command` must be a sequence of str, got {type(command).__name__}")
    if not command:
        raise ValueError("`command` must not be empty")
    if not grace >= 0:
        raise ValueError(f"`grace` must be >= 0, got {grace!r}")
    if "start_new_session" in popen_kwargs:
        raise TypeError("`start_new_session` is always True here; do not pass it")
    if log is not None and {"stdout", "stderr"} & popen_kwargs.keys():
        raise TypeError("`log` receives stdout and stderr; do not pass them too")
    with contextlib.ExitStack() as stack:
        if log is not None:
            sink = stack.enter_context(open(log, "wb"))
            popen_kwargs.update(stdout=sink, stderr=subprocess.STDOUT)
        proc = subprocess.Popen(list(command), start_new_session=True, **popen_kwargs)
        try:
            yield proc
        finally:
            for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
                with contextlib.suppress(ProcessLookupError):  # the group is already gone
                    os.killpg(proc.pid, sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=wait)
