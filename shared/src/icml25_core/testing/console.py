"""Run a console script the way a user does (a subprocess) or its ``main`` in-process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

__all__ = ["ConsoleResult", "call_main", "run_console"]


class ConsoleResult(NamedTuple):
    """What a command left: its exit status and its two output streams."""

    code: int
    out: str
    err: str

    def usage_error(self) -> str:
        """The one error line of a usage error (``prog: error: message``), checked.

        Raises
        ------
        AssertionError
            Unless the exit status is 2 and stderr holds exactly one error line and no
            traceback.
        """
        lines = [line for line in self.err.splitlines() if ": error:" in line]
        assert self.code == 2, f"exit status {self.code}, not 2; stderr:\n{self.err}"
        assert "Traceback" not in self.err, f"a traceback, not a usage error:\n{self.err}"
        assert len(lines) == 1, f"{len(lines)} error lines, not 1:\n{self.err}"
        return lines[0]


def _script(name: str) -> str:
    """The installed console script `name`: beside the running interpreter first, then PATH."""
    beside = shutil.which(name, path=str(Path(sys.executable).parent))
    found = beside or shutil.which(name)
    if found is None:
        raise FileNotFoundError(
            f"console script {name!r} is not installed in this environment "
            f"(looked in {Path(sys.executable).parent} and PATH); install its library, "
            f"e.g. pip install -e packages/{name}"
        )
    return found


def run_console(
    command: str,
    *args: object,
    module: bool = False,
    timeout: float = 300,
    cwd: str | os.PathLike | None = None,
) -> ConsoleResult:
    """Run an installed console script, or ``python -m <module>``, in a subprocess.

    Parameters
    ----------
    command : str
        The console script's name (``"fedswa"``), or a module's dotted name with ``module=True``.
    *args : object
        Its arguments, each turned into a str (paths may be given as they are).
    module : bool, default=False
        Run ``python -m command`` with the running interpreter instead of a script.
    timeout : float, default=300
        Seconds before the subprocess is killed (``subprocess.TimeoutExpired``).
    cwd : path-like, optional
        Its working folder (default: the current one).

    Returns
    -------
    ConsoleResult
        Exit status, stdout and stderr (text).

    Raises
    ------
    FileNotFoundError
        If the console script is not installed.
    subprocess.TimeoutExpired
        If it runs longer than `timeout`.
    """
    program = [sys.executable, "-m", command] if module else [_script(command)]
    done = subprocess.run(
        [*program, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        check=False,
    )
    return ConsoleResult(done.returncode, done.stdout, done.stderr)


def call_main(
    main: Callable[[list[str]], int | None], capsys: pytest.CaptureFixture, *args: object
) -> ConsoleResult:
    """Call a console script's ``main(argv)`` in-process and return what a subprocess would.

    ``SystemExit`` is caught as the interpreter would take it: ``None`` is status 0, an int is
    the status, any other value (``sys.exit("message")``) is printed to stderr with status 1.
    Output printed before the call is discarded. Other exceptions propagate.

    Parameters
    ----------
    main : callable
        The script's entry point, called with the list of `args` as strs.
    capsys : pytest.CaptureFixture
        The requesting test's ``capsys``.
    *args : object
        The arguments (paths may be given as they are).
    """
    capsys.readouterr()
    code: object
    try:
        code = main([str(arg) for arg in args])
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    if code is not None and not isinstance(code, int):
        err, code = f"{err}{code}\n", 1
    return ConsoleResult(code or 0, out, err)
