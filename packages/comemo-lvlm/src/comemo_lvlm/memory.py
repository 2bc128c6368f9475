r"""CoMemo's memory path: a gated cross-attention + SwiGLU block (official ``helpers.py``).

$$
x \leftarrow x + \tanh(\alpha_{\mathrm{attn}})\,\mathrm{XAttn}\bigl(\mathrm{RMSNorm}(x),
  \mathrm{RMSNorm}(V)\bigr),\qquad
x \leftarrow x + \tanh(\alpha_{\mathrm{ff}})\,\mathrm{SwiGLU}\bigl(\mathrm{RMSNorm}_2(x)\bigr)
$$

Queries are rotated by each text token's position id and keys by each media token's id
(RoPE-DHR), softmax scale :math:`d_h^{-1/2}`, no causal mask; α = 0 at initialisation.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .rope import _check_pos, apply_rope

__all__ = ["GatedCrossAttentionBlock", "RMSNorm"]


def _pos_int(name: str, v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"{name} must be a positive int, got {v!r}")
    return v


class RMSNorm(nn.Module):
    """Root-mean-square norm with a learned scale (computed in float32).

    Parameters
    ----------
    dim : int
        Feature width.
    eps : float, default=1e-5
        Added to the mean square (official value).

    Raises
    ------
    ValueError
        ``dim`` is not a positive int or ``eps`` is not a finite number >= 0.
    """

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        _pos_int("dim", dim)
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < math.inf:
            raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalise the last dimension of ``x``."""
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(x.dtype)


class GatedCrossAttentionBlock(nn.Module):
    """Gated cross-attention from text to image tokens, then a gated SwiGLU.

    Parameters
    ----------
    d_model : int
        Width D of the LLM's hidden states.
    d_media : int
        Width of the media tokens (D after CoMemo's projector; one RMSNorm is shared with the
        text when ``d_media == d_model``, as in the official code).
    n_heads : int
        H; take it from the LLM config.
    head_dim : int
        d_h; even.
    d_ff : int
        SwiGLU hidden width.
    rope_base : float
        RoPE base for the cross-attention (the LLM's ``rope_theta``; 1e6 for InternLM2).
    eps : float, default=1e-5
        RMSNorm epsilon (official).
    gate_init : float, default=0.0
        Initial α for both gates (official: 0, so the block starts as the identity).

    Notes
    -----
    Rows (text tokens) that see no media get a zero update, never NaN (SDPA alone would
    return NaN for an all-False mask row).
    """

    def __init__(
        self,
        d_model: int,
        d_media: int,
        n_heads: int,
        head_dim: int,
        d_ff: int,
        *,
        rope_base: float,
        eps: float = 1e-5,
        gate_init: float = 0.0,
    ) -> None:
        super().__init__()
        for name, v in (
            ("d_model", d_model),
            ("d_media", d_media),
            ("n_heads", n_heads),
            ("head_dim", head_dim),
            ("d_ff", d_ff),
        ):
            _pos_int(name, v)
        if head_dim % 2:
            raise ValueError(f"head_dim must be even for RoPE, got {head_dim}")
        if not math.isfinite(rope_base) or rope_base <= 1:
            raise ValueError(f"rope_base must be a finite number > 1, got {rope_base}")
        if not math.isfinite(gate_init):
            raise ValueError(f"gate_init must be finite, got {gate_init}")
        self.d_model, self.d_media = d_model, d_media
        self.n_heads, self.head_dim, self.d_ff = n_heads, head_dim, d_ff
        self.rope_base = float(rope_base)
        inner = n_heads * head_dim
        self.norm = RMSNorm(d_model, eps)
        self.media_norm = RMSNorm(d_media, eps) if d_media != d_model else None
        self.to_q = nn.Linear(d_model, inner, bias=False)
        self.to_kv = nn.Linear(d_media, 2 * inner, bias=False)
        self.to_out = nn.Linear(inner, d_model, bias=False)
        self.attn_gate = nn.Parameter(torch.tensor([float(gate_init)]))
        self.ff_norm = RMSNorm(d_model, eps)
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.ff_gate = nn.Parameter(torch.tensor([float(gate_init)]))

    def _validate(
        self,
        x: torch.Tensor,
        media: torch.Tensor,
        text_pos: torch.Tensor,
        media_pos: torch.Tensor,
        media_mask: torch.Tensor | None,
    ) -> None:
        if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must have shape (B, L, {self.d_model}), got {tuple(getattr(x, 'shape', ()))}"
            )
        if not isinstance(media, torch.Tensor) or media.dim() != 3 or media.shape[0] != x.shape[0]:
            raise ValueError(
                f"media must have shape (B={x.shape[0]}, M, {self.d_media}), got "
                f"{tuple(getattr(media, 'shape', ()))}"
            )
        if media.shape[-1] != self.d_media:
            raise ValueError(f"media width {media.shape[-1]} != d_media {self.d_media}")
        if not x.is_floating_point():
            raise TypeError(f"x (hidden states) must be a float tensor, got {x.dtype}")
        if not media.is_floating_point():
            raise TypeError(f"media must be a float tensor, got {media.dtype}")
        _check_pos(text_pos, "text_pos")
        _check_pos(media_pos, "media_pos")
        if tuple(text_pos.shape) != tuple(x.shape[:2]):
            raise ValueError(
                f"text_pos must have shape {tuple(x.shape[:2])}, got {tuple(text_pos.shape)}"
            )
        if tuple(media_pos.shape) != tuple(media.shape[:2]):
            raise ValueError(
                f"media_pos must have shape {tuple(media.shape[:2])}, got {tuple(media_pos.shape)}"
            )
        if media_mask is not None:
            want = (x.shape[0], x.shape[1], media.shape[1])
            if media_mask.dtype != torch.bool or tuple(media_mask.shape) != want:
                raise ValueError(
                    f"media_mask must be a bool tensor of shape {want}, got "
                    f"{media_mask.dtype} {tuple(media_mask.shape)}"
                )
        if not torch.compiler.is_compiling() and not bool(torch.isfinite(media).all()):
            raise ValueError("media contains NaN or inf")

    def forward(
        self,
        x: torch.Tensor,
        media: torch.Tensor,
        text_pos: torch.Tensor,
        media_pos: torch.Tensor,
        media_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Apply the gated block.

        Parameters
        ----------
        x : torch.Tensor of float, shape (B, L, D)
            Hidden states entering the decoder layer.
        media : torch.Tensor of float, shape (B, M, D_media)
            Image tokens V (projector output), finite; cast to ``x``'s dtype when it differs.
        text_pos : torch.Tensor of int64, shape (B, L)
            RoPE ids of the text tokens (RoPE-DHR ids of the context path).
        media_pos : torch.Tensor of int64, shape (B, M)
            RoPE ids of the media tokens.
        media_mask : torch.Tensor of bool, shape (B, L, M), optional
            True where a text token may read a media token (None: all).

        Returns
        -------
        torch.Tensor, shape (B, L, D), dtype of ``x``.

        Raises
        ------
        ValueError
            Shape/width mismatch, NaN/inf in ``media``.
        TypeError
            Float position ids, non-float ``x`` or ``media``.
        """
        self._validate(x, media, text_pos, media_pos, media_mask)
        if media.dtype != x.dtype:
            media = media.to(x.dtype)
        B, L, _ = x.shape
        M = media.shape[1]
        H, dh = self.n_heads, self.head_dim
        xn = self.norm(x)
        mn = self.norm(media) if self.media_norm is None else self.media_norm(media)
        q = self.to_q(xn).view(B, L, H, dh).transpose(1, 2)
        k, v = self.to_kv(mn).view(B, M, 2, H, dh).unbind(2)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        q = apply_rope(q, text_pos, self.rope_base)
        k = apply_rope(k, media_pos, self.rope_base)
        if media_mask is None:
            attn_mask = None
            has_any = None
        else:
            has_any = media_mask.any(-1, keepdim=True)  # [B, L, 1]
            # rows with nothing visible attend to everything, then get zeroed (no NaN)
            attn_mask = (media_mask | ~has_any)[:, None]
        if M == 0:
            out = torch.zeros(B, H, L, dh, dtype=q.dtype, device=q.device)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        out = self.to_out(out.transpose(1, 2).reshape(B, L, H * dh))
        if has_any is not None:
            out = out.masked_fill(~has_any, 0.0)
        elif M == 0:
            has_any = torch.zeros(B, L, 1, dtype=torch.bool, device=x.device)
        x = x + self.attn_gate.tanh().to(x.dtype) * out
        h = self.ff_norm(x)
        ff = self.w2(F.silu(self.w1(h)) * self.w3(h))
        if has_any is not None:
            ff = ff.masked_fill(~has_any, 0.0)
        return x + self.ff_gate.tanh().to(x.dtype) * ff
