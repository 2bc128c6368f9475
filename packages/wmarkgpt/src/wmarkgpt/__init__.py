"""WMarkGPT: Watermarked Image Understanding via Multimodal Large Language Models.

Tan et al., "WMarkGPT: Watermarked Image Understanding via Multimodal Large Language Models",
ICML 2025 (PMLR 267). Official code: github.com/TanSongBai/WMarkGPT (Apache-2.0).

The data (synthetic visible watermarks at set visibility, WQA-style VQA records), the metrics
(correct by default, the official numbers under ``compat="wmarkgpt"``) and the three-stage
recipe (``wmarkgpt.training``, extra ``[train]``). Real invisible watermarks live in
``wmarkgpt.invisible`` (extra ``[invisible]``).
"""

from ._version import __version__
from .dataset import build_invisible, build_position, build_synthetic, load_coco_objects
from .levels import LEVEL_WEIGHTS, VISIBILITY_LEVELS, score_to_level, weight_to_score
from .metrics import (
    Table,
    bleu,
    clean_text,
    evaluate,
    evaluate_qscore,
    expected_score,
    extract_visibility,
    level_token_ids,
    official_strip,
    plcc,
    position_accuracy,
    rouge_l,
    srcc,
    visibility_accuracy,
)
from .official import OFFICIAL_MODELS, official_file
from .synth import (
    Logo,
    RandomLogoWatermark,
    Stego,
    blend_logo,
    logo_box_from_mask,
    mask_from_gray,
    prepare_logo,
    scale_box,
)
from .vqa import (
    DESCRIPTION_QUESTIONS,
    POSITION_LABELS,
    description_prompt,
    llamafactory_dataset_info,
    position_qa,
    relative_position,
    template_description,
    to_record,
)

__all__ = [
    "__version__",
    # levels
    "VISIBILITY_LEVELS",
    "LEVEL_WEIGHTS",
    "weight_to_score",
    "score_to_level",
    # synthetic watermarks
    "blend_logo",
    "logo_box_from_mask",
    "prepare_logo",
    "scale_box",
    "mask_from_gray",
    "Logo",
    "Stego",
    "RandomLogoWatermark",
    # VQA records
    "DESCRIPTION_QUESTIONS",
    "POSITION_LABELS",
    "relative_position",
    "position_qa",
    "description_prompt",
    "template_description",
    "to_record",
    "llamafactory_dataset_info",
    # dataset builders
    "build_synthetic",
    "build_position",
    "build_invisible",
    "load_coco_objects",
    # metrics
    "clean_text",
    "official_strip",
    "bleu",
    "rouge_l",
    "extract_visibility",
    "visibility_accuracy",
    "level_token_ids",
    "expected_score",
    "srcc",
    "plcc",
    "evaluate",
    "evaluate_qscore",
    "position_accuracy",
    "Table",
    # the official evaluation files (Apache-2.0, shipped trimmed)
    "OFFICIAL_MODELS",
    "official_file",
]
