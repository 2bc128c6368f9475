"""ReFrame: Layer Caching for Accelerated Inference in Real-Time Rendering.

Liu & Aamodt, "ReFrame: Layer Caching for Accelerated Inference in Real-Time Rendering", ICML
2025, arXiv:2506.13814 (https://arxiv.org/abs/2506.13814). Code:
github.com/ubc-aamodt-group/reframe-layer-caching.
"""

from ._version import __version__
from .bench import BenchReport, amdahl_bound
from .bench import run as bench_run
from .metrics import flip, psnr, sequence_psnr, smape
from .models import DoubleConv, TwoBranch, UNet, UNetPP
from .policies import Always, Delta, DeltaInOut, EveryN, Never, Policy, parse_policy
from .wrapper import FeatureCache, ReFrame, count_flops, split_graphs

__all__ = [
    "__version__",
    # Main API: the wrapper and its refresh policies
    "ReFrame",
    "FeatureCache",
    "Policy",
    "Always",
    "Never",
    "EveryN",
    "Delta",
    "DeltaInOut",
    "parse_policy",
    # cost and quality
    "count_flops",
    "split_graphs",
    "amdahl_bound",
    "bench_run",
    "BenchReport",
    "smape",
    "psnr",
    "flip",
    "sequence_psnr",
    # models with cache points
    "UNet",
    "UNetPP",
    "TwoBranch",
    "DoubleConv",
]
