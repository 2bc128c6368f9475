"""What the README's blocks compute, on the user's files of tests/conftest.py."""

import json


def test_readme_blocks_compute_what_they_say(readme):
    ns = readme.namespace
    assert ns["stego"].score == 2.6
    assert ns["stego"].level == "moderate"
    index = json.loads((readme.folder / "wqa" / "index.json").read_text())
    assert len(index) == 8
    assert all((readme.folder / "wqa" / r["image"]).is_file() for r in index)
    assert ns["table"].acc == 0.5  # "visible" != "faint" (exact match)
    assert (round(ns["paper"].bleu1, 4), round(ns["paper"].rouge_l, 4)) == (0.4242, 0.418)
    assert ns["psnr"](ns["photo"], ns["marked"]) > 35
