"""What If We Recaption Billions of Web Images with LLaMA-3?.

Li et al., "What If We Recaption Billions of Web Images with LLaMA-3?", ICML 2025,
arXiv:2406.08478 (https://arxiv.org/abs/2406.08478).

A resumable, sharded recaptioning pipeline (webdataset in, parquet out) and mixed-caption CLIP
training.
"""

from ._version import __version__
from .captioners import RECAP_PROMPT, Captioner, HFCaptioner, VLLMCaptioner
from .clip import HFCLIPBackend, OpenCLIPBackend, train_clip
from .distributed import assign_shards, run_ray, run_torchrun
from .merge import merge_recaptions
from .metrics import caption_stats, retrieval_from_scores, retrieval_metrics, zero_shot_accuracy
from .mixing import MixedCaption, mixed_caption_loader, patch_open_clip_train, use_recaption
from .pipeline import (
    ResumeMismatchError,
    RunStats,
    caption_shard,
    read_recaptions,
    recaption_shards,
)
from .shards import expand_shards, iter_samples
from .synthetic import shapes_corpus

__all__ = [
    "__version__",
    # Main API: the paper's function first, then its class (see CONTRIBUTING.md).
    "recaption_shards",
    "HFCaptioner",
    "caption_shard",
    "read_recaptions",
    "ResumeMismatchError",
    "RunStats",
    "RECAP_PROMPT",
    "Captioner",
    "VLLMCaptioner",
    "expand_shards",
    "iter_samples",
    "assign_shards",
    "run_torchrun",
    "run_ray",
    "merge_recaptions",
    "MixedCaption",
    "mixed_caption_loader",
    "use_recaption",
    "patch_open_clip_train",
    "retrieval_metrics",
    "retrieval_from_scores",
    "zero_shot_accuracy",
    "caption_stats",
    "HFCLIPBackend",
    "OpenCLIPBackend",
    "train_clip",
    "shapes_corpus",
]
