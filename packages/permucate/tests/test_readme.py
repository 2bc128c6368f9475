"""Replays the README's Python blocks, on a CSV written from the paper's Hines DGP 3."""

import re
from pathlib import Path

import pytest
from permucate import datasets

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_a_short_usage_block():
    blocks = python_blocks()
    assert blocks, "the README lost its usage example"
    assert len(blocks[0].strip().splitlines()) <= 15


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_block_runs(index, tmp_path, monkeypatch):
    data = datasets.hines(600, random_state=0)
    data.X.assign(treated=data.T, outcome=data.Y).to_csv(tmp_path / "trial.csv", index=False)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(python_blocks()[index], f"README block {index}", "exec"), namespace)
    summary = namespace["est"].summary()
    assert list(summary.index) == ["x1", "x2", "x3", "x4", "x5", "x6"]
    assert summary.loc["x2", "significant"]  # ψ_2 = 3: found at n = 600
