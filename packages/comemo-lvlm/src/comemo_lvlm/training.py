"""CoMemo's three-stage recipe (official ``shell/comemo/*.sh``) and packing helpers."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

__all__ = ["STAGES", "freeze_for_stage", "len2weight", "packed_media_mask"]

#: Hyper-parameters of the official shell scripts (8 GPUs, ZeRO-1, bf16, packed 16384 tokens /
#: 48 images, weight decay 0.01, ViT drop_path 0.1, loss weight ``len2weight(n, "square")``).
STAGES: dict[int, dict[str, Any]] = {
    1: {
        "trainable": ("projector", "memory"),
        "lr": 1e-4,
        "scheduler": "constant_with_warmup",
        "warmup_ratio": 0.03,
        "max_steps": 10_000,
    },
    2: {
        "trainable": ("projector", "memory (gates frozen)"),
        "lr": 1e-4,
        "scheduler": "constant_with_warmup",
        "warmup_ratio": 0.03,
        "max_steps": 10_000,
    },
    3: {
        "trainable": ("all",),
        "lr": 4e-5,
        "scheduler": "cosine",
        "warmup_ratio": 0.03,
        "max_steps": 9_000,
    },
}
for _s in STAGES.values():
    _s.update(weight_decay=0.01, drop_path_rate=0.1, max_packed_tokens=16384, max_images=48)


def freeze_for_stage(model: nn.Module, stage: int) -> nn.Module:
    """Set ``requires_grad`` for CoMemo's training stage; returns the model.

    Stage 1: LLM and ViT frozen; projector and memory blocks (gates included) trained.
    Stage 2: as stage 1 with the gates (``attn_gate``, ``ff_gate``) frozen.
    Stage 3: everything trainable.

    Parameters
    ----------
    model : CoMemoVLM
        With ``vision_model``, ``projector``, ``language_model`` (blocks in
        ``language_model.comemo_blocks``).
    stage : {1, 2, 3}

    Raises
    ------
    ValueError
        Unknown stage or a model without those parts.
    """
    if stage not in STAGES or isinstance(stage, bool):
        raise ValueError(f"stage must be 1, 2 or 3, got {stage!r}")
    for part in ("vision_model", "projector", "language_model"):
        if not hasattr(model, part):
            raise ValueError(f"model has no {part!r} (expected a CoMemoVLM)")
    for p in model.parameters():
        p.requires_grad_(stage == 3)
    if stage == 3:
        return model
    model.projector.requires_grad_(True)
    blocks = getattr(model.language_model, "comemo_blocks", None)
    if blocks is not None:
        for name, p in blocks.named_parameters():
            is_gate = name.endswith("attn_gate") or name.endswith("ff_gate")
            p.requires_grad_(not (stage == 2 and is_gate))
    return model


def len2weight(x: int, mode: str = "square") -> float:
    r"""Per-sample loss weight from its number of supervised tokens (official ``len2weight``).

    ``"token"``: 1; ``"sample"``: 1/x; ``"square"``: :math:`1/\sqrt{x}`; x = 0 gives 0.

    Raises
    ------
    ValueError
        Negative ``x`` or unknown mode.
    """
    if isinstance(x, bool) or not isinstance(x, int) or x < 0:
        raise ValueError(f"x must be a non-negative int, got {x!r}")
    if mode not in ("token", "sample", "square"):
        raise ValueError(f"mode must be 'token', 'sample' or 'square', got {mode!r}")
    if x == 0:
        return 0.0
    if mode == "token":
        return 1.0
    if mode == "sample":
        return 1.0 / x
    return 1.0 / math.sqrt(x)


def _int_list(name: str, values: Sequence[Any]) -> list[int]:
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool):
            raise TypeError(f"{name}[{i}] must be an int, got bool")
        try:
            out.append(operator.index(v))
        except TypeError:
            raise TypeError(f"{name}[{i}] must be an int, got {type(v).__name__}") from None
    return out


def packed_media_mask(sample_lens: Sequence[int], media_lens: Sequence[int]) -> torch.Tensor:
    """Block-diagonal sample -> media visibility of one packed row, shape (L, M), bool.

    Token l of sample s sees media token m iff m belongs to sample s.

    Raises
    ------
    ValueError
        Different numbers of samples, negative lengths or no sample.
    TypeError
        A length that is not an int.
    """
    if len(sample_lens) == 0 or len(sample_lens) != len(media_lens):
        raise ValueError(
            f"sample_lens and media_lens must be non-empty and of equal length, got "
            f"{len(sample_lens)} and {len(media_lens)}"
        )
    s_lens = _int_list("sample_lens", sample_lens)
    m_lens = _int_list("media_lens", media_lens)
    if any(v < 0 for v in s_lens) or any(v < 0 for v in m_lens):
        raise ValueError("sample_lens and media_lens must be non-negative")
    t = torch.repeat_interleave(torch.arange(len(s_lens)), torch.tensor(s_lens, dtype=torch.long))
    m = torch.repeat_interleave(torch.arange(len(m_lens)), torch.tensor(m_lens, dtype=torch.long))
    return t[:, None] == m[None, :]
