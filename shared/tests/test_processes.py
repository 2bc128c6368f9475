import os
import socket
import subprocess
import sys
import time

import pytest

from icml25_core import end_process, free_port, port_listening, process_group, wait_until


def test_end_process_flushes_and_exits_with_the_code_skipping_atexit():
    script = (
        "import atexit, sys\n"
        "from icml25_core import end_process\n"
        "atexit.register(lambda: print('ATEXIT'))\n"
        "print('out', end='')\n"
        "print('err', end='', file=sys.stderr)\n"
        "end_process(3)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out", "err")


@pytest.mark.parametrize(
    ("code", "error"),
    [(-1, ValueError), (256, ValueError), (1.0, TypeError), (True, TypeError), ("0", TypeError)],
)
def test_end_process_rejects_bad_codes(code, error):
    with pytest.raises(error, match=r"^`code` must be an int in 0-255"):
        end_process(code)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie (ended, not yet reaped) counts as ended
        return fh.read().split(")")[-1].split()[0] != "Z"


# The leader starts a grandchild that ignores SIGTERM, prints its pid, then waits on it.
STUBBORN = (
    "import signal, subprocess, sys\n"
    "child = subprocess.Popen([sys.executable, '-c', "
    "'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)'])\n"
    "print(child.pid, flush=True)\n"
    "child.wait()\n"
)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc to tell zombies apart")
def test_process_group_ends_the_whole_group_even_what_ignores_sigterm():
    start = time.monotonic()
    with process_group([sys.executable, "-c", STUBBORN], grace=0.5, stdout=subprocess.PIPE) as p:
        child = int(p.stdout.readline())
        assert os.getpgid(child) == p.pid  # the grandchild is in the leader's group
        assert os.getpgid(p.pid) != os.getpgid(0)  # and that group is not ours
    deadline = time.monotonic() + 10  # SIGKILL is delivered asynchronously
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _alive(child)
    assert p.poll() is not None
    assert time.monotonic() - start < 30


def test_process_group_leaves_a_finished_command_alone():
    with process_group([sys.executable, "-c", "print('done')"], stdout=subprocess.PIPE) as p:
        assert p.wait(timeout=30) == 0
        assert p.stdout.read() == b"done\n"


def test_process_group_log_receives_stdout_and_stderr(tmp_path):
    script = "import sys; print('out', flush=True); print('err', file=sys.stderr)"
    with process_group([sys.executable, "-c", script], log=tmp_path / "run.log") as p:
        assert p.wait(timeout=30) == 0
    assert sorted((tmp_path / "run.log").read_text().split()) == ["err", "out"]


@pytest.mark.parametrize(
    ("command", "kwargs", "error", "match"),
    [
        ("echo hi", {}, TypeError, "`command` must be a sequence"),
        ([], {}, ValueError, "`command` must not be empty"),
        (["true"], {"grace": -1}, ValueError, "`grace` must be >= 0"),
        (["true"], {"start_new_session": False}, TypeError, "start_new_session"),
        (["true"], {"log": "x.log", "stdout": None}, TypeError, "`log` receives stdout"),
    ],
)
def test_process_group_rejects_bad_arguments(command, kwargs, error, match):
    with pytest.raises(error, match=match), process_group(command, **kwargs):
        pass


def test_free_port_can_be_bound():
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
    with pytest.raises(TypeError, match="`host` must be a str"):
        free_port(1)


def test_port_listening_and_wait_until():
    port = free_port()
    assert not port_listening(port)
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))
        server.listen()
        wait_until(lambda: port_listening(port), 5, "the test socket")
    calls = []
    with pytest.raises(TimeoutError, match="waiting for nothing"):
        wait_until(lambda: calls.append(1), 0.2, "nothing", interval=0.05)
    assert len(calls) >= 2
