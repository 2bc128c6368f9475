"""UniMC-style condition tokens for DiTs, and keypoint AP per class.

Guo et al., "UniMC: Taming Diffusion Transformer for Unified Keypoint-Guided Multi-Class Image
Generation", ICML 2025, arXiv:2507.02713 (https://arxiv.org/abs/2507.02713). The paper's method
section and code are unpublished: the token layout and injection here are a labelled
reconstruction ("UniMC-style"); see the README.
"""

from ._version import __version__
from .data import collate, load_coco_keypoints, normalize
from .fourier import fourier_embed
from .inject import (
    GatedConditionAttention,
    InjectionHandle,
    JointConditionProjection,
    condition_dropout,
    inject_conditions,
)
from .metrics import (
    STAT_NAMES,
    KeypointAP,
    area_from_keypoints,
    count_error,
    fid_kid,
    keypoint_ap,
    oks_matrix,
)
from .render import render_skeleton
from .skeletons import AP10K17, COCO17, Skeleton, get_skeleton
from .tinydit import TinyDiT, euler_sample, flow_matching_loss
from .tokens import ConditionTokenizer, ConditionTokens, validate_conditions

__all__ = [
    "__version__",
    # condition tokens and injection (main API)
    "ConditionTokenizer",
    "ConditionTokens",
    "inject_conditions",
    "InjectionHandle",
    "GatedConditionAttention",
    "JointConditionProjection",
    "condition_dropout",
    "fourier_embed",
    "validate_conditions",
    # skeletons
    "Skeleton",
    "COCO17",
    "AP10K17",
    "get_skeleton",
    # data
    "load_coco_keypoints",
    "normalize",
    "collate",
    "render_skeleton",
    # metrics
    "oks_matrix",
    "keypoint_ap",
    "KeypointAP",
    "STAT_NAMES",
    "area_from_keypoints",
    "count_error",
    "fid_kid",
    # small DiT and flow matching
    "TinyDiT",
    "flow_matching_loss",
    "euler_sample",
]
