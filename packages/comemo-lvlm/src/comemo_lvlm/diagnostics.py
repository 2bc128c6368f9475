"""The attention-allocation diagnostic behind CoMemo's "U-shape" observation (paper §2)."""

from __future__ import annotations

from collections.abc import Mapping

import torch

__all__ = ["attention_allocation"]


def attention_allocation(
    attn: torch.Tensor, segments: Mapping[str, tuple[int, int]], *, query: int = -1
) -> dict[str, torch.Tensor]:
    r"""Share of one query's attention that falls on each key segment.

    $$
    a_{\mathrm{seg}} = \sum_{j \in \mathrm{seg}} \mathrm{softmax}(q_i k^\top)_j
    $$

    Parameters
    ----------
    attn : torch.Tensor of float, shape (B, H, L, L)
        Attention probabilities (rows sum to 1), e.g. ``output_attentions=True``.
    segments : mapping of name -> (start, end)
        Half-open key ranges (e.g. ``{"text": (0, s), "image": (s, e), "answer": (e, L)}``).
    query : int, default=-1
        The query row (the last token by default).

    Returns
    -------
    dict of name -> torch.Tensor of float, shape (B, H)

    Raises
    ------
    ValueError
        Wrong rank, NaN, empty or out-of-range segments.
    TypeError
        A non-float ``attn``.
    """
    if not isinstance(attn, torch.Tensor) or attn.dim() != 4 or attn.shape[-1] != attn.shape[-2]:
        raise ValueError(
            f"attn must have shape (B, H, L, L), got {tuple(getattr(attn, 'shape', ()))}"
        )
    if not attn.is_floating_point():
        raise TypeError(f"attn must be a float tensor of probabilities, got {attn.dtype}")
    if attn.numel() == 0 or not bool(torch.isfinite(attn).all()):
        raise ValueError("attn must be non-empty and finite")
    L = attn.shape[-1]
    if not -L <= query < L:
        raise ValueError(f"query must be in [-{L}, {L}), got {query}")
    if not segments:
        raise ValueError("segments must name at least one (start, end) range")
    row = attn[:, :, query]
    out = {}
    for name, (a, b) in segments.items():
        if not 0 <= a <= b <= L:
            raise ValueError(f"segments[{name!r}] = {(a, b)} is outside [0, {L}]")
        out[name] = row[..., a:b].sum(-1)
    return out
