"""Test setup: one thread per process (2 shared cores)."""

import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).parent))  # tiny_llava, shared by tests and ddp_stage.py

try:
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover - torch comes with the [train] extra of [test]
    pass


import json

import numpy as np
import pytest


@pytest.fixture(scope="session")
def readme_folder(readme_folder):
    """What a user of the README has: photos in covers/, an RGBA logo, answers and truth."""
    from PIL import Image
    from skimage import data

    (readme_folder / "covers").mkdir(exist_ok=True)
    (readme_folder / "logos").mkdir(exist_ok=True)
    Image.fromarray(data.astronaut()).save(readme_folder / "covers" / "photo0.png")
    Image.fromarray(data.coffee()).save(readme_folder / "covers" / "photo1.png")
    logo = np.zeros((60, 160, 4), np.uint8)
    logo[10:50, 10:150] = (250, 250, 250, 255)
    logo[20:40, 30:130, 3] = 0  # a frame: the hole is transparent
    Image.fromarray(logo).save(readme_folder / "logos" / "mylogo.png")
    levels = ["faint", "obvious"]
    gt = [
        {
            "image": f"{k}.png",
            "visibility": v,
            "conversations": [
                {"from": "human", "value": "<image>\nDescribe the watermark."},
                {
                    "from": "gpt",
                    "value": f"A logo near the edge. The watermark visibility is: {v}.",
                },
            ],
        }
        for k, v in enumerate(levels)
    ]
    answers = [
        {
            "image": f"{k}.png",
            "conversations": [
                {"from": "gpt", "value": f"A text logo. The watermark visibility is: {v}."}
            ],
        }
        for k, v in enumerate(["faint", "visible"])
    ]
    (readme_folder / "gt.json").write_text(json.dumps(gt))
    (readme_folder / "answers.json").write_text(json.dumps(answers))
    return readme_folder
