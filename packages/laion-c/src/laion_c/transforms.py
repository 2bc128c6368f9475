"""torchvision-style transforms: callables taking a PIL image or a CHW / BCHW float tensor and
returning the same type (DECISIONS 8: usable inside ``torchvision.transforms.Compose``).

Each call of a random distortion seeds a fresh ``numpy`` Generator from ``torch.randint``, so
``torch.manual_seed`` and the DataLoader's per-worker seeds govern it.
"""

from __future__ import annotations

import torch

from .functional import corrupt, preprocess
from .params import check_level, resolve

_RANDOM = ("geometric_shapes", "stickers", "luminance_checkerboard")


def _torch_seed() -> int:
    return int(torch.randint(0, 2**62, (), dtype=torch.int64))


class LaionC(torch.nn.Module):
    """The full LAION-C corruption of one (distortion, level): official preprocessing
    (``Resize`` + ``CenterCrop``), the distortion, the final 224 crop.

    Parameters
    ----------
    distortion : str
        Evaluation name or alias.
    level : int in 1..5
    tiles : TileLibrary or dict of int to TileLibrary, optional
        Required for mosaic and stickers.

    Raises
    ------
    ValueError
        Unknown distortion, level outside 1..5 or a bool.
    TypeError
        Mosaic or stickers without `tiles`.
    """

    def __init__(self, distortion: str, level: int, tiles=None):
        super().__init__()
        self.distortion, self.level = resolve(distortion), check_level(level)
        if self.distortion in ("mosaic", "stickers") and tiles is None:
            raise TypeError(f"`tiles` is required for {self.distortion}")
        self.tiles = tiles

    def forward(self, img):
        """PIL image or float tensor (3, H, W) / (B, 3, H, W) in [0, 1] -> same type, 224 x 224."""
        rng = _torch_seed() if self.distortion in _RANDOM else None
        return corrupt(img, self.distortion, self.level, rng=rng, tiles=self.tiles)

    def extra_repr(self) -> str:
        return f"distortion={self.distortion!r}, level={self.level}"


class Preprocess(torch.nn.Module):
    """The official preprocessing alone (:func:`laion_c.functional.preprocess`)."""

    def __init__(self, distortion: str = "glitched", level: int = 1):
        super().__init__()
        self.distortion, self.level = resolve(distortion), check_level(level)

    def forward(self, img):
        """PIL image, uint8 ndarray (H, W, 3) or float tensor (3, H, W) / (B, 3, H, W) -> the
        same type, preprocessed (``laion_c.functional.preprocess``)."""
        return preprocess(img, self.distortion, self.level)


def _fixed(name: str, doc: str):
    def __init__(self, level: int, tiles=None):
        LaionC.__init__(self, name, level, tiles)

    return type(
        "".join(part.title() for part in name.split("_")),
        (LaionC,),
        {"__init__": __init__, "__doc__": doc, "__module__": __name__},
    )


Mosaic = _fixed("mosaic", "``LaionC('mosaic', level, tiles)``.")
Glitched = _fixed("glitched", "``LaionC('glitched', level)``.")
VerticalLines = _fixed("vertical_lines", "``LaionC('vertical_lines', level)``.")
GeometricShapes = _fixed("geometric_shapes", "``LaionC('geometric_shapes', level)``.")
Stickers = _fixed("stickers", "``LaionC('stickers', level, tiles)``.")
LuminanceCheckerboard = _fixed(
    "luminance_checkerboard", "``LaionC('luminance_checkerboard', level)``."
)
