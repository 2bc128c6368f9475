"""Replays the README's Python usage block."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_a_short_usage_block():
    blocks = python_blocks()
    assert blocks, "the README lost its usage example"
    assert len(blocks[0].strip().splitlines()) <= 15


def test_readme_usage_block_runs():
    namespace = {}
    exec(compile(python_blocks()[0], "README usage", "exec"), namespace)
    assert namespace["exact"].shape == (32, 16, 128)
    assert namespace["net"][0].weight.grad is not None
