"""Progress bars: tqdm when installed, else a few plain lines on stderr.

``ICML25_PROGRESS=0`` in the environment turns them off (e.g. in CI logs).
"""

import os
import sys
import time
from importlib.util import find_spec

from icml25_core.validation import check_scalar

_PROGRESS_ENV = "ICML25_PROGRESS"


class _TextProgress:
    """Stand-in for ``tqdm.tqdm``: prints ``desc: k/total unit`` at most every `interval` s."""

    def __init__(self, iterable, total, desc, unit, disable, leave, interval=2.0):
        self.iterable = iterable
        self.total = total
        self.desc = desc
        self.unit = unit
        self.disable = disable
        self.leave = leave
        self.interval = interval
        self.n = 0
        self.postfix = ""
        self._start = self._last_print = time.monotonic()
        self._closed = False

    def __iter__(self):
        if self.iterable is None:
            raise TypeError("this progress bar wraps no iterable; call update() instead")
        try:
            for item in self.iterable:
                yield item
                self.update()
        finally:
            self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def update(self, n=1):
        """Advance by `n` and print if the last line is older than the interval."""
        self.n += n
        now = time.monotonic()
        if not self.disable and now - self._last_print >= self.interval:
            self._last_print = now
            self._print(now)

    def set_postfix(self, **values):
        """Show ``key=value`` pairs after the count on the next line printed."""
        self.postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def close(self):
        """Print the final line (unless disabled or ``leave=False``); later calls do nothing."""
        if self._closed:
            return
        self._closed = True
        if not self.disable and self.leave:
            self._print(time.monotonic())

    def _print(self, now):
        prefix = f"{self.desc}: " if self.desc else ""
        total = "" if self.total is None else f"/{self.total}"
        postfix = f", {self.postfix}" if self.postfix else ""
        line = f"{prefix}{self.n}{total} {self.unit} [{now - self._start:.1f} s{postfix}]"
        print(line, file=sys.stderr, flush=True)


def progress(iterable=None, *, total=None, desc=None, unit="it", disable=None, leave=True):
    """Wrap `iterable` (or count by hand) with a progress bar.

    Parameters
    ----------
    iterable : iterable, optional
        Items to iterate over; omit it to call ``update()`` yourself.
    total : int, optional
        Expected number of steps; defaults to ``len(iterable)`` when it has one.
    desc : str, optional
        Label printed before the count.
    unit : str, default="it"
        Name of one step.
    disable : bool, optional
        Turn the bar off. ``None`` turns it off when the environment has ``ICML25_PROGRESS=0``.
    leave : bool, default=True
        Keep the final state on screen after closing.

    Returns
    -------
    tqdm.tqdm or a text fallback
        Both iterate, work as context managers and have ``update(n=1)``,
        ``set_postfix(**values)`` and ``close()``. Without tqdm the fallback prints
        ``desc: k/total unit [elapsed]`` to stderr at most every 2 s and once when closed.

    Raises
    ------
    TypeError
        If `iterable` is not iterable (an int there is usually meant as ``total=``), `total` is
        not a number, or `desc` / `unit` is not a str.
    ValueError
        If `total` is negative or NaN.

    Examples
    --------
    >>> for x in progress(range(3), desc="fit", disable=True):
    ...     pass
    >>> with progress(total=10, disable=True) as bar:
    ...     bar.update(10)
    """
    if iterable is not None and not hasattr(iterable, "__iter__"):
        hint = f"; for a count, pass total={iterable!r}" if isinstance(iterable, int) else ""
        raise TypeError(f"`iterable` must be iterable, got {type(iterable).__name__}{hint}")
    if total is not None:
        check_scalar(total, "total", low=0)
    for name, value, optional in (("desc", desc, True), ("unit", unit, False)):
        if not (isinstance(value, str) or (optional and value is None)):
            raise TypeError(f"`{name}` must be a str, got {type(value).__name__}")
    if disable is None:
        disable = os.environ.get(_PROGRESS_ENV) == "0"
    if find_spec("tqdm") is not None:
        from tqdm import tqdm

        return tqdm(iterable, total=total, desc=desc, unit=unit, disable=disable, leave=leave)
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)
    return _TextProgress(iterable, total, desc, unit, disable, leave)
