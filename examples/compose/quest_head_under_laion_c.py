"""quest-qat inside a model scored by laion-c: does a QuEST W4A4 classifier head keep a
pretrained model's predictions on real photos, clean and under the LAION-C distortions?

The pretrained EfficientNet-Lite0 of ``laion-c[model]`` gets its classifier (1280 -> 1000) turned
into a QuEST W4A4 layer by ``quest_qat.prepare_`` (post-training: no QAT step). Both models then
score nine real photos (scikit-image and the Debian package opencv-doc), clean and under the six
LAION-C distortions at levels 1, 3 and 5, with laion-c's official 16-superclass rule.
Needs ``laion-c[model,images]``, ``quest-qat`` and opencv-doc; about 20 s on one CPU thread.
"""

import copy
import os
from pathlib import Path

import laion_c
import numpy as np
import skimage.data
import torch
from laion_c.models import efficientnet_lite0
from PIL import Image
from quest_qat import QuESTConfig, QuESTLinear, prepare_

OPENCV_DATA = Path(os.environ.get("LAION_C_OPENCV_DOC", "/usr/share/doc/opencv-doc/examples"))
PHOTOS = {  # source -> LAION-C superclass
    "skimage:chelsea": "cat",
    "data/baboon.jpg": "primate",
    "data/butterfly.jpg": "butterfly",
    "dnn_superres/butterfly.png": "butterfly",
    "data/fruits.jpg": "fruit",
    "data/apple.jpg": "fruit",
    "data/orange.jpg": "fruit",
    "data/messi5.jpg": "ball",
    "data/licenseplate_motion.jpg": "car_truck",
}
TILE_PHOTOS = ("astronaut", "coffee", "rocket")  # mosaic / sticker tiles; no evaluation photo
LEVELS = (1, 3, 5)


def load(source: str) -> Image.Image:
    if source.startswith("skimage:"):
        return Image.fromarray(getattr(skimage.data, source.split(":", 1)[1])()).convert("RGB")
    with Image.open(OPENCV_DATA / source) as image:
        return image.convert("RGB")


def batch(images) -> torch.Tensor:
    """224 x 224 RGB PIL images -> (N, 3, 224, 224) float32 in [0, 1]."""
    return torch.stack([torch.from_numpy(np.array(i)).permute(2, 0, 1) for i in images]) / 255.0


@torch.no_grad()
def superclasses(heads: dict, images) -> dict[str, np.ndarray]:
    x = batch(images)
    return {name: head(x).argmax(dim=1).numpy() for name, head in heads.items()}


def main() -> None:
    torch.manual_seed(0)
    photos = [load(source) for source in PHOTOS]
    truth = np.array([list(laion_c.SUPERCLASSES).index(c) for c in PHOTOS.values()])
    tiles = laion_c.build_tiles([load(f"skimage:{n}") for n in TILE_PHOTOS], crops_per_image=50)

    full = efficientnet_lite0()
    quantized = prepare_(copy.deepcopy(full), QuESTConfig(w_bits=4, a_bits=4))
    swapped = [n for n, m in quantized.named_modules() if isinstance(m, QuESTLinear)]
    assert swapped == ["_fc"], f"prepare_ should swap the classifier alone, swapped {swapped}"
    heads = {
        "fp32": laion_c.SuperclassHead(full, normalize="imagenet"),
        "QuEST W4A4 head": laion_c.SuperclassHead(quantized, normalize="imagenet"),
    }

    clean = superclasses(heads, [laion_c.Preprocess()(photo) for photo in photos])
    accuracy = {name: {"clean": np.mean(p == truth)} for name, p in clean.items()}
    agree = []
    for level in LEVELS:
        hits = {name: [] for name in heads}
        for distortion in laion_c.DISTORTIONS:
            images = [
                laion_c.corrupt(photo, distortion, level, tiles=tiles, rng=k)
                for k, photo in enumerate(photos)
            ]
            predicted = superclasses(heads, images)
            for name, p in predicted.items():
                hits[name].extend(p == truth)
            agree.extend(predicted["fp32"] == predicted["QuEST W4A4 head"])
        for name in heads:
            accuracy[name][f"L{level}"] = np.mean(hits[name])
    agreement = np.mean(agree)

    columns = ["clean", *(f"L{level}" for level in LEVELS)]
    print(
        f"superclass accuracy, {len(photos)} real photos x {len(laion_c.DISTORTIONS)} distortions"
    )
    print(f"{'':16}" + "".join(f"{c:>7}" for c in columns))
    for name, row in accuracy.items():
        print(f"{name:16}" + "".join(f"{row[c]:7.2f}" for c in columns))
    print(f"QuEST head agrees with fp32 on {agreement:.0%} of the distorted photos")

    fp, quest = accuracy["fp32"], accuracy["QuEST W4A4 head"]
    assert fp["clean"] >= 8 / 9, "the pretrained model misreads the clean photos: inputs broken?"
    assert quest["clean"] >= fp["clean"] - 1 / 9, "the QuEST head loses the clean photos"
    assert agreement >= 0.7, f"the QuEST head agrees with fp32 on only {agreement:.0%}"
    for name, row in accuracy.items():  # LAION-C's claim: far out of distribution at level 5
        assert row["L5"] <= row["clean"] - 0.4, f"{name}: no collapse at level 5 ({row})"


if __name__ == "__main__":
    main()
