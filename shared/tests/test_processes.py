import subprocess
import sys

import pytest

from icml25_core import end_process


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
