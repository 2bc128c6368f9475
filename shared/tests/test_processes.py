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


@pytest.mark.parametrize("code", [-1, 256, 1.0, True, "0"])
def test_end_process_rejects_bad_codes(code):
    with pytest.raises(ValueError, match="`code`"):
        end_process(code)
