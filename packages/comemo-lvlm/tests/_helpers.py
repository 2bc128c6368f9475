"""Tiny random models built offline (no hub weights) shared by the tests."""

from __future__ import annotations

import torch
from comemo_lvlm import CoMemoVLM, PixelShuffleProjector, TileGrid, attach_memory_path

VOCAB = 64
IMG_CTX, IMG_START, IMG_END = 61, 62, 63
T = 4  # CLIP 32 px / patch 4 -> 8x8 patches -> pixel shuffle -> 4x4 tokens per tile
TILE = 32


def tiny_llama(layers: int = 4, seed: int = 0, arch: str = "llama"):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    common = dict(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        rope_theta=1e6,
        attn_implementation="sdpa",
    )
    if arch == "qwen2":
        lm = Qwen2ForCausalLM(Qwen2Config(**common))
    else:
        lm = LlamaForCausalLM(LlamaConfig(**common))
    return lm.eval()


def tiny_clip(seed: int = 0):
    from transformers import CLIPVisionConfig, CLIPVisionModel

    torch.manual_seed(seed)
    cfg = CLIPVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=TILE,
        patch_size=4,
        attn_implementation="sdpa",
    )
    return CLIPVisionModel(cfg).eval()


def tiny_vlm(every_n: int = 2, seed: int = 0, gate: float | None = None, arch: str = "llama", **kw):
    lm = tiny_llama(seed=seed, arch=arch)
    path = attach_memory_path(lm, every_n=every_n, **kw)
    if gate is not None:
        with torch.no_grad():
            for blk in path.blocks.values():
                blk.attn_gate.fill_(gate)
                blk.ff_gate.fill_(gate)
    torch.manual_seed(seed + 1)
    proj = PixelShuffleProjector(32, 64)
    model = CoMemoVLM(
        tiny_clip(seed),
        proj,
        lm,
        image_token_id=IMG_CTX,
        img_start_id=IMG_START,
        img_end_id=IMG_END,
        T=T,
    ).eval()
    return model, path


def prompt(grids: list[TileGrid], pre: int = 5, mid: int = 3, post: int = 4, seed: int = 0):
    """Token ids: ``pre`` text, then per image <img> ctx </img> + ``mid`` text, ``post`` text."""
    g = torch.Generator().manual_seed(seed)
    parts = [torch.randint(1, 60, (pre,), generator=g)]
    for grid in grids:
        parts.append(torch.tensor([IMG_START]))
        parts.append(torch.full((grid.n_images * T * T,), IMG_CTX))
        parts.append(torch.tensor([IMG_END]))
        parts.append(torch.randint(1, 60, (mid,), generator=g))
    parts.append(torch.randint(1, 60, (post,), generator=g))
    return torch.cat(parts)


def pixels(grids: list[TileGrid], seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    n = sum(x.n_images for x in grids)
    return torch.randn(n, 3, TILE, TILE, generator=g)
