"""Replays the README's Python blocks."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_a_short_usage_block():
    blocks = python_blocks()
    assert blocks, "the README lost its usage example"
    assert len(blocks[0].strip().splitlines()) <= 15


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_block_runs(index, capsys):
    namespace = {}
    exec(compile(python_blocks()[index], f"README block {index}", "exec"), namespace)
    history = namespace["history"]
    assert len(history.records) == 3
    assert 0.0 <= history.accuracy[-1] <= 1.0
    # 3 rounds of FSL-SAGE: model traffic and smashed data were counted
    assert history.official_bytes[-1] > 3 * 2 * 3 * 4 * (64 * 32 + 32)
    acc, sent = capsys.readouterr().out.split()
    assert float(acc) == history.accuracy[-1]
    assert int(sent) == history.official_bytes[-1]
