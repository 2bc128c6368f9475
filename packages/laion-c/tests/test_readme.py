"""Replays the README's Python usage block on real photos laid out as a user's folders."""

import re
from pathlib import Path

import pytest
import skimage.data
from PIL import Image

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_a_short_usage_block():
    blocks = python_blocks()
    assert blocks, "the README lost its usage example"
    assert len(blocks[0].strip().splitlines()) <= 15


@pytest.mark.slow
def test_readme_usage_runs(tmp_path, monkeypatch):
    (tmp_path / "my_photos").mkdir()
    for name in ("astronaut", "coffee", "rocket"):
        Image.fromarray(getattr(skimage.data, name)()).save(tmp_path / "my_photos" / f"{name}.jpg")
    (tmp_path / "my_images" / "cat").mkdir(parents=True)
    Image.fromarray(skimage.data.chelsea()).save(tmp_path / "my_images" / "cat" / "chelsea.png")
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(python_blocks()[0], "README usage", "exec"), namespace)
    assert namespace["stats"] == {"images": 1, "written": 30, "skipped": 0}
    results = namespace["results"]
    assert len(results.accuracy) == 30
    assert 0 <= results.mean() <= 1
    assert namespace["transform"](Image.fromarray(skimage.data.coffee())).size == (224, 224)
