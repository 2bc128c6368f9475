"""Replays the README's Python block on the README's own toy model."""

import re
from pathlib import Path

import torch
from quest_qat import QuESTInt4Linear

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_a_short_usage_block():
    blocks = python_blocks()
    assert blocks, "the README lost its usage example"
    assert len(blocks[0].strip().splitlines()) <= 15


def test_readme_blocks_run_in_order():
    namespace = {}
    for index, block in enumerate(python_blocks()):
        exec(compile(block, f"README block {index}", "exec"), namespace)
    model = namespace["model"]
    assert isinstance(model[0], QuESTInt4Linear)
    assert torch.isfinite(namespace["loss"])
    assert model(torch.randn(3, 256)).shape == (3, 256)
