import json

import numpy as np
import pytest
import torch
from unimc import AP10K17, COCO17, ConditionTokenizer, TinyDiT

SKEL = {0: COCO17, 1: AP10K17}


def random_conditions(b=2, n=3, k=17, seed=0, mask=None):
    g = torch.Generator().manual_seed(seed)
    classes = torch.randint(0, 2, (b, n), generator=g)
    xy = torch.rand(b, n, 2, 2, generator=g).sort(-2).values
    boxes = torch.cat([xy[..., 0, :], xy[..., 1, :]], -1)
    kp = torch.cat(
        [
            torch.rand(b, n, k, 2, generator=g),
            torch.randint(0, 3, (b, n, k, 1), generator=g).float(),
        ],
        -1,
    )
    if mask is None:
        mask = torch.ones(b, n, dtype=torch.bool)
    return classes, boxes, kp, mask


@pytest.fixture
def conds():
    return random_conditions


@pytest.fixture
def tokenizer():
    torch.manual_seed(0)
    return ConditionTokenizer(2, 32, skeleton_of_class=SKEL)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def make_live_dit(seed=0, **kw):
    """A TinyDiT whose zero-initialised parts (adaLN-Zero, final layer) are random, so its
    output depends on every input."""
    torch.manual_seed(seed)
    cfg = {"image_size": 16, "patch_size": 4, "d_model": 32, "depth": 2, "n_heads": 4, **kw}
    dit = TinyDiT(**cfg)
    for name, p in dit.named_parameters():
        if ("ada" in name or name.startswith("out")) and p.abs().sum() == 0:
            torch.nn.init.normal_(p, std=0.2)
    return dit


@pytest.fixture
def live_dit():
    return make_live_dit


@pytest.fixture(scope="session")
def readme_folder(readme_folder):
    """What a README user has: COCO keypoint annotations and a detector's results."""
    from icml25_core import data_path

    gt = json.loads(data_path("unimc", "data", "fixtures.json").read_text())
    (readme_folder / "keypoints.json").write_text(json.dumps(gt))
    dets = []
    for a in gt["annotations"]:
        kp = np.asarray(a["keypoints"], dtype=float).reshape(-1, 3)
        kp[:, :2] += 3.0 * (kp[:, 2:] > 0)
        dets.append({"image_id": a["image_id"], "category_id": a["category_id"],
                     "keypoints": kp.ravel().tolist(), "score": 0.9})  # fmt: skip
    (readme_folder / "detections.json").write_text(json.dumps(dets))
    return readme_folder
