"""The six LAION-C distortions and their five severity levels, with the official constants.

Source: ``distortions/apply_distortions.py`` of the official repository
(github.com/FanfeiLi/LAION-C) and Table 1 / App. A of Li et al., ICML 2025 (arXiv:2506.16950).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

#: Evaluation names of the distortions, in the official order (``laionc/evaluation.py``).
DISTORTIONS: tuple[str, ...] = (
    "mosaic",
    "glitched",
    "vertical_lines",
    "geometric_shapes",
    "stickers",
    "luminance_checkerboard",
)

#: Severity levels; the released data set calls them ``intensity_level_1`` ... ``_5``.
LEVELS: tuple[int, ...] = (1, 2, 3, 4, 5)

#: Generator-script names accepted as aliases of the evaluation names.
ALIASES: dict[str, str] = {"sticker": "stickers", "luminance": "luminance_checkerboard"}

#: ``PARAMS[name][level]``: mosaic tile side t; glitch amount g; vertical lines (l, step);
#: number of shapes; number of 16-px stickers; luminance offset range [a, b] (0-255 units).
PARAMS: dict[str, dict[int, Any]] = {  # int or (int, int), per distortion
    "mosaic": {1: 4, 2: 6, 3: 8, 4: 16, 5: 28},
    "glitched": {1: 2, 2: 4, 3: 5, 4: 8, 5: 10},
    "vertical_lines": {1: (224, 1), 2: (178, 2), 3: (112, 4), 4: (84, 6), 5: (60, 8)},
    "geometric_shapes": {1: 150, 2: 300, 3: 600, 4: 800, 5: 1000},
    "stickers": {1: 100, 2: 200, 3: 400, 4: 600, 5: 1200},
    "luminance_checkerboard": {
        1: (0, 50),
        2: (50, 100),
        3: (100, 125),
        4: (125, 150),
        5: (150, 255),
    },
}

#: Side of the sticker tiles, in pixels (official: stickers are 16 x 16 tiles).
STICKER_SIZE = 16
#: Side of a luminance-checkerboard square, in pixels (official constant).
CHECKER_SIZE = 14
#: torchvision ``Resize`` / ``CenterCrop`` sizes of the official preprocessing.
RESIZE = 256
CROP = 224


def resolve(name) -> str:
    """The evaluation name of distortion `name` (aliases accepted).

    Raises
    ------
    TypeError
        If `name` is not a str.
    ValueError
        If `name` is no distortion or alias; the message lists the valid names.
    """
    if not isinstance(name, str):
        raise TypeError(f"`name` must be a str, got {type(name).__name__}")
    name = ALIASES.get(name, name)
    if name not in DISTORTIONS:
        valid = ", ".join((*DISTORTIONS, *ALIASES))
        raise ValueError(f"`name` must be one of {valid}; got {name!r}")
    return name


def check_level(level, name: str = "level") -> int:
    """`level` as an int in 1..5.

    Raises
    ------
    TypeError
        If `level` is not an integer.
    ValueError
        If `level` is a bool or not in 1..5.
    """
    if isinstance(level, bool | np.bool_):
        raise ValueError(f"`{name}` must be an int in 1..5, got the bool {level}")
    if not isinstance(level, numbers.Integral):
        raise TypeError(f"`{name}` must be an int in 1..5, got {type(level).__name__}")
    if int(level) not in LEVELS:
        raise ValueError(f"`{name}` must be in 1..5, got {level}")
    return int(level)


def preprocess_sizes(name: str, level: int) -> tuple[int, int]:
    """``(resize, crop)`` of the official preprocessing of distortion `name` at `level`.

    Every distortion uses torchvision ``Resize(256)`` + ``CenterCrop(224)``; mosaic resizes the
    shorter side to ``s = 256 - 256 mod t`` and crops 224, except t = 6 where 224 is not a
    multiple of t: it uses ``s = c = 252`` and a final 224 centre crop after the mosaic
    (``apply_distortions.py``).
    """
    name, level = resolve(name), check_level(level)
    if name != "mosaic":
        return RESIZE, CROP
    t = PARAMS["mosaic"][level]
    side = RESIZE - RESIZE % t
    return (side, side) if CROP % t else (side, CROP)


def crop_margin(name: str, level: int) -> int:
    """Pixels the official pipeline crops from every side *after* distortion `name` at `level`.

    ``(c - 224) / 2`` with ``c`` from :func:`preprocess_sizes`: 14 for mosaic at t = 6 (built at
    252 x 252, then torchvision ``CenterCrop(224)``, whose offset ``round((252 - 224) / 2)`` is
    14), 0 for every other cell (``apply_distortions.py``).
    """
    return (preprocess_sizes(name, level)[1] - CROP) // 2
