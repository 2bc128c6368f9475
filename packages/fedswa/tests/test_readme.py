"""Replays the README's Python blocks in one namespace, in a temporary folder."""

import re
from pathlib import Path

import pytest
import torch

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_usage_block_is_short():
    blocks = python_blocks()
    assert blocks, "the README lost its usage example"
    assert len(blocks[0].strip().splitlines()) <= 15


def test_readme_blocks_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {}
    for index, block in enumerate(python_blocks()):
        exec(compile(block, f"README block {index}", "exec"), namespace)
    assert isinstance(namespace["model"], torch.nn.Module)
    assert len(namespace["history"].rounds) == 5
    assert namespace["state"].round == 1
    assert (tmp_path / "run.pt").exists()
    assert namespace["strategy"].config.name == "FedMoSWA"


@pytest.mark.parametrize("section", ["## Reproduction", "## Performance", "## Citation"])
def test_readme_has_the_card_sections(section):
    assert section in README.read_text(encoding="utf-8")
