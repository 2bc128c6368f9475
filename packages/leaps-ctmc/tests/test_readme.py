"""Replay the README's usage block (the card must run as written)."""

import re
from pathlib import Path

import pytest
import torch

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.slow
def test_readme_usage_runs(capsys):
    blocks = python_blocks()
    assert len(blocks) == 1
    assert len(blocks[0].strip().splitlines()) <= 15
    torch.manual_seed(0)
    namespace = {}
    exec(compile(blocks[0], str(README), "exec"), namespace)
    res = namespace["res"]
    assert res.x.shape == (1024, 16)
    assert res.log_w.shape == (1024,)
    assert 0 < res.ess <= 1
    assert torch.isfinite(namespace["m_abs"])
    assert len(capsys.readouterr().out.splitlines()) == 2
