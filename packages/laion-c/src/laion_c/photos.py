"""Real photos for ``laion-c reproduce``: scikit-image and scikit-learn sample images and the
OpenCV sample data of the Debian package ``opencv-doc`` (4.6.0, ``examples/data/``).

Evaluation set (9 photos, all classified correctly when clean, spec §4): skimage ``chelsea``
(cat), baboon (primate), butterfly.jpg and ``dnn_superres/butterfly.png`` (butterfly),
fruits / apple / orange (fruit), messi5 (ball), licenseplate_motion (car_truck). Tile sources:
the other photos listed below (the official tile source is not published).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from PIL import Image

OPENCV_DOC = Path("/usr/share/doc/opencv-doc/examples")
OPENCV_ENV = "LAION_C_OPENCV_DOC"

#: (superclass, source) of the evaluation photos; "skimage:<name>" or a path under examples/.
EVAL_PHOTOS: tuple[tuple[str, str], ...] = (
    ("cat", "skimage:chelsea"),
    ("primate", "data/baboon.jpg"),
    ("butterfly", "data/butterfly.jpg"),
    ("butterfly", "dnn_superres/butterfly.png"),
    ("fruit", "data/fruits.jpg"),
    ("fruit", "data/apple.jpg"),
    ("fruit", "data/orange.jpg"),
    ("ball", "data/messi5.jpg"),
    ("car_truck", "data/licenseplate_motion.jpg"),
)

#: Photos the tile libraries are cropped from (none of them is an evaluation photo).
TILE_PHOTOS: tuple[str, ...] = (
    "skimage:astronaut",
    "skimage:coffee",
    "skimage:rocket",
    "skimage:hubble_deep_field",
    "skimage:immunohistochemistry",
    "skimage:retina",
    "skimage:colorwheel",
    "skimage:stereo_motorcycle",
    "sklearn:china.jpg",
    "sklearn:flower.jpg",
    "data/aero1.jpg",
    "data/aero3.jpg",
    "data/building.jpg",
    "data/home.jpg",
    "data/HappyFish.jpg",
    "data/starry_night.jpg",
    "data/stuff.jpg",
    "data/graf1.png",
    "data/leuvenA.jpg",
    "data/board.jpg",
    "data/smarties.png",
    "data/rubberwhale1.png",
    "data/squirrel_cls.jpg",
    "data/ela_original.jpg",
    "data/Blender_Suzanne1.jpg",
    "data/pic1.png",
)


def opencv_doc_root() -> Path:
    """``$LAION_C_OPENCV_DOC`` if set, else ``/usr/share/doc/opencv-doc/examples``."""
    return Path(os.environ.get(OPENCV_ENV, OPENCV_DOC))


def missing_help(path: Path) -> str:
    return (
        f"{path} not found: the reproduce needs the Debian package opencv-doc (4.6.0). Install it "
        "with `sudo apt-get install opencv-doc`; where dpkg excludes /usr/share/doc (Docker "
        "images), run `apt-get download opencv-doc && dpkg-deb -x opencv-doc_*.deb /tmp/ocv` and "
        f"set {OPENCV_ENV}=/tmp/ocv/usr/share/doc/opencv-doc/examples"
    )


def load_photo(source: str) -> Image.Image:
    """An RGB PIL image from ``skimage:<name>``, ``sklearn:<file>`` or an opencv-doc path.

    Raises
    ------
    FileNotFoundError
        If an opencv-doc file is missing; the message says how to install ``opencv-doc``.
    """
    if source.startswith("skimage:"):
        import skimage.data

        array = getattr(skimage.data, source.split(":", 1)[1])()
        array = array[0] if isinstance(array, tuple) else array
        return Image.fromarray(np.asarray(array)).convert("RGB")
    if source.startswith("sklearn:"):
        from sklearn.datasets import load_sample_image

        return Image.fromarray(load_sample_image(source.split(":", 1)[1])).convert("RGB")
    path = opencv_doc_root() / source
    if not path.exists():
        raise FileNotFoundError(missing_help(path))
    from ._image import read_rgb

    return read_rgb(path, "source")
