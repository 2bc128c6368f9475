"""LAION-C: An Out-of-Distribution Benchmark for Web-Scale Vision Models.

Li et al., "LAION-C: An Out-of-Distribution Benchmark for Web-Scale Vision Models", ICML 2025,
arXiv:2506.16950 (https://arxiv.org/abs/2506.16950). The six LAION-C distortions at five levels
with the official constants, the dataset builder and the official 16-superclass evaluation.
"""

from ._version import __version__
from .build import build_dataset
from .evaluate import Results, evaluate
from .functional import (
    corrupt,
    distort,
    geometric_shapes,
    glitch,
    luminance_checkerboard,
    mosaic,
    preprocess,
    stickers,
    vertical_lines,
)
from .params import ALIASES, DISTORTIONS, LEVELS, PARAMS
from .reference import Reference, compare_markdown, reference_accuracies
from .superclass import SUPERCLASSES, SuperclassHead, aggregate, predict, superclass_matrix
from .tiles import TileLibrary, build_tiles, load_tiles, save_tiles
from .transforms import (
    GeometricShapes,
    Glitched,
    LaionC,
    LuminanceCheckerboard,
    Mosaic,
    Preprocess,
    Stickers,
    VerticalLines,
)
from .uncertainty import mean_interval, wilson_interval

__all__ = [
    "__version__",
    # the paper's distortions, then the evaluation
    "corrupt",
    "distort",
    "preprocess",
    "mosaic",
    "glitch",
    "vertical_lines",
    "geometric_shapes",
    "stickers",
    "luminance_checkerboard",
    "evaluate",
    "Results",
    "wilson_interval",
    "mean_interval",
    # the published accuracies, for comparison
    "reference_accuracies",
    "compare_markdown",
    "Reference",
    "build_dataset",
    # transforms
    "LaionC",
    "Preprocess",
    "Mosaic",
    "Glitched",
    "VerticalLines",
    "GeometricShapes",
    "Stickers",
    "LuminanceCheckerboard",
    # tiles
    "TileLibrary",
    "build_tiles",
    "save_tiles",
    "load_tiles",
    # superclass scoring
    "SUPERCLASSES",
    "superclass_matrix",
    "aggregate",
    "predict",
    "SuperclassHead",
    # constants
    "DISTORTIONS",
    "LEVELS",
    "PARAMS",
    "ALIASES",
]
