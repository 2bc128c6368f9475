"""Expected monotonic attention and the monotonic cross-attention layer of the predictor.

Source: MILk expected soft attention (Arivazhagan et al., ACL 2019, eq. 8-9; fairseq
``expected_soft_attention``), as MonoAttn-Transducer uses it (Ma et al., ICML 2025, Sec. 3;
official ``monotonic_transducer_chunk_diagonal_prior.py``).
"""

import math
from typing import Any

import torch
from torch import nn

from icml25_core import check_choice, check_scalar, check_tensor

from .kernels import resolve_backend
from .kernels.attention_torch import expected_attention_torch

__all__ = ["MonotonicCrossAttention", "expected_monotonic_attention"]

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _check_mask(mask: Any, shape: tuple[int, ...], name: str) -> torch.Tensor | None:
    if mask is None:
        return None
    check_tensor(mask, name, dtype=torch.bool, allow_empty=True)
    try:
        return torch.broadcast_to(mask, shape)
    except RuntimeError:
        raise ValueError(
            f"`{name}` of shape {tuple(mask.shape)} does not broadcast to {shape}"
        ) from None


def expected_monotonic_attention(
    alignment: torch.Tensor,
    energy: torch.Tensor,
    key_padding_mask: torch.Tensor | None = None,
    eps: float = 1e-6,
    *,
    backend: str = "auto",
) -> torch.Tensor:
    r"""Attention weights expected under a monotonic alignment over frames.

    $$w_{u,j}=\exp(e_{u,j})\sum_{t\ge j}\frac{p_{u,t}}{\sum_{l\le t}\exp(e_{u,l})}$$

    (MILk eq. 9, fairseq's ``beta``; spec section 2). Two cumulative sums and a flip in fp32, row
    max subtracted, `eps` added to each exponential (official). With ``p = δ_τ`` it is the
    softmax over ``j <= τ``; each row of ``w`` sums to ``Σ_t p_{u,t}``.

    Parameters
    ----------
    alignment : torch.Tensor, float ``[N, U+1, T]``
        ``p_{u,t} >= 0``, the probability that query ``u`` sees frames up to ``t``.
    energy : torch.Tensor, float ``[N, U+1, T]``
        Attention energies ``q·k / sqrt(d_head)``.
    key_padding_mask : torch.Tensor, bool, broadcastable to ``[N, U+1, T]``, optional
        True marks padded frames (weight 0, alignment mass dropped).
    eps : float, default=1e-6
        Added to ``exp(e - max)`` (official value).
    backend : {"auto", "torch", "triton"}, keyword-only, default="auto"

    Returns
    -------
    torch.Tensor, float32 (float64 for float64 input) ``[N, U+1, T]``
        The weights ``w``.

    Raises
    ------
    TypeError
        For non-tensors or non-float dtypes.
    ValueError
        For wrong ndim, mismatched shapes, empty input, NaN/inf, negative alignment, negative
        `eps` or an unknown `backend`.
    """
    check_tensor(alignment, "alignment", ndim=3, dtype=_FLOATS)
    check_tensor(energy, "energy", ndim=3, shape=tuple(alignment.shape), dtype=_FLOATS)
    check_scalar(eps, "eps", low=0)
    check_choice(backend, "backend", ("auto", "torch", "triton"))
    if bool((alignment < 0).any()):
        raise ValueError("`alignment` must be >= 0")
    mask = _check_mask(key_padding_mask, tuple(energy.shape), "key_padding_mask")
    if resolve_backend(backend, energy.device) == "triton" and energy.dtype != torch.float64:
        from .kernels.attention_triton import expected_attention_triton

        return expected_attention_triton(alignment, energy, mask, float(eps))
    return expected_attention_torch(alignment, energy, mask, float(eps))


class MonotonicCrossAttention(nn.Module):
    """Multi-head cross-attention from predictor states to encoder frames, batch-first.

    With an ``alignment`` the weights are :func:`expected_monotonic_attention` of each head's
    energies (the MonoAttn training pass); without, a softmax over the unmasked frames given
    (streaming inference passes only the frames received: a prefix softmax).

    Parameters
    ----------
    embed_dim : int
        Query (and output) width.
    num_heads : int
        Heads; must divide `embed_dim`.
    kdim, vdim : int, optional
        Key and value widths (default `embed_dim`).
    dropout : float, default=0.0
        Dropout on the attention weights.

    Raises
    ------
    ValueError
        If `num_heads` does not divide `embed_dim`, or a size is < 1, or dropout not in [0, 1).
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        kdim: int | None = None,
        vdim: int | None = None,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        check_scalar(embed_dim, "embed_dim", kind=int, low=1)
        check_scalar(num_heads, "num_heads", kind=int, low=1)
        check_scalar(dropout, "dropout", low=0, high=1, inclusive="left")
        if embed_dim % num_heads:
            raise ValueError(f"`num_heads` ({num_heads}) must divide `embed_dim` ({embed_dim})")
        kdim = embed_dim if kdim is None else kdim
        vdim = embed_dim if vdim is None else vdim
        check_scalar(kdim, "kdim", kind=int, low=1)
        check_scalar(vdim, "vdim", kind=int, low=1)
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(kdim, embed_dim)
        self.v_proj = nn.Linear(vdim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        *,
        alignment: torch.Tensor | None = None,
        key_padding_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Attend.

        Parameters
        ----------
        query : torch.Tensor, float ``[B, R, embed_dim]``
        key : torch.Tensor, float ``[B, T, kdim]``
        value : torch.Tensor, float ``[B, T, vdim]``
        alignment : torch.Tensor, float ``[B, R, T]``, optional
            Monotonic alignment per query row (shared by the heads).
        key_padding_mask : torch.Tensor, bool ``[B, T]``, optional
            True marks padded frames.

        Returns
        -------
        torch.Tensor, ``[B, R, embed_dim]``, the dtype of `query`.

        Raises
        ------
        ValueError
            On mismatched shapes or non-finite values.
        """
        check_tensor(query, "query", ndim=3, dtype=_FLOATS)
        check_tensor(key, "key", ndim=3, dtype=_FLOATS)
        check_tensor(value, "value", ndim=3, shape=(key.shape[0], key.shape[1], None))
        B, R, _ = query.shape
        T = key.shape[1]
        if key.shape[0] != B:
            raise ValueError(f"`key` must have batch size {B}, got {key.shape[0]}")
        H, dh = self.num_heads, self.head_dim
        q = self.q_proj(query).view(B, R, H, dh).transpose(1, 2)
        k = self.k_proj(key).view(B, T, H, dh).transpose(1, 2)
        v = self.v_proj(value).view(B, T, H, dh).transpose(1, 2)
        energy = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dh)  # [B, H, R, T]
        mask = None
        if key_padding_mask is not None:
            check_tensor(key_padding_mask, "key_padding_mask", shape=(B, T), dtype=torch.bool)
            mask = key_padding_mask[:, None, None, :].expand(B, H, R, T)
        if alignment is None:
            e = energy if mask is None else energy.masked_fill(mask, float("-inf"))
            w = torch.softmax(e.float(), -1).nan_to_num(0.0)
        else:
            check_tensor(alignment, "alignment", shape=(B, R, T), dtype=_FLOATS)
            a = alignment[:, None].expand(B, H, R, T).reshape(B * H, R, T)
            m = None if mask is None else mask.reshape(B * H, R, T)
            w = expected_monotonic_attention(a, energy.reshape(B * H, R, T), m)
            w = w.view(B, H, R, T)
        w = self.dropout(w.to(v.dtype))
        ctx = torch.matmul(w, v).transpose(1, 2).reshape(B, R, self.embed_dim)
        return self.out_proj(ctx)
