"""comemo-lvlm: CoMemo's RoPE-DHR position ids and gated memory path for any HF LVLM.

Liu et al., "CoMemo: LVLMs Need Image Context with Image Memory", ICML 2025.
"""

from ._version import __version__
from .attach import MemoryContext, MemoryPath, attach_memory_path, find_decoder_layers
from .diagnostics import attention_allocation
from .memory import GatedCrossAttentionBlock, RMSNorm
from .model import CoMemoVLM, GenerationResult, PixelShuffleProjector, expand_image_tokens
from .positions import PositionPlan, build_position_ids, image_position_ids
from .rope import apply_rope, rope_decay_bound
from .tiling import TileGrid, candidate_grids, closest_grid, dynamic_tiles
from .training import STAGES, freeze_for_stage, len2weight, packed_media_mask

__all__ = [
    "STAGES",
    "CoMemoVLM",
    "GatedCrossAttentionBlock",
    "GenerationResult",
    "MemoryContext",
    "MemoryPath",
    "PixelShuffleProjector",
    "PositionPlan",
    "RMSNorm",
    "TileGrid",
    "__version__",
    "apply_rope",
    "attach_memory_path",
    "attention_allocation",
    "build_position_ids",
    "candidate_grids",
    "closest_grid",
    "dynamic_tiles",
    "expand_image_tokens",
    "find_decoder_layers",
    "freeze_for_stage",
    "image_position_ids",
    "len2weight",
    "packed_media_mask",
    "rope_decay_bound",
]
