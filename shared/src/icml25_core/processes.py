"""Ending a worker process of a multi-process run."""

import os
import sys
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
