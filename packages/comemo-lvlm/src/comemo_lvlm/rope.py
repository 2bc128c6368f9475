r"""Rotary position embedding with explicit ids, and RoFormer's long-term decay bound.

RoPE (Su et al., RoFormer, Eq. 34, rotate-half form as in transformers' Llama):

$$
\mathrm{RoPE}(x, p) = x \odot \cos(p\,\theta) + \mathrm{rot}(x) \odot \sin(p\,\theta),\qquad
\theta_k = \mathrm{base}^{-2k/d}
$$
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

__all__ = ["apply_rope", "rope_decay_bound"]


def _check_pos(pos: Any, name: str) -> torch.Tensor:
    if not isinstance(pos, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of int64, got {type(pos).__name__}")
    if pos.is_floating_point() or pos.is_complex() or pos.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor (position ids), got {pos.dtype}")
    return pos


def _check_base(base: Any) -> float:
    if isinstance(base, bool) or not isinstance(base, (int, float)):
        raise TypeError(f"base must be a number, got {type(base).__name__}")
    if not math.isfinite(base) or base <= 1:
        raise ValueError(f"base must be a finite number > 1, got {base}")
    return float(base)


def apply_rope(x: torch.Tensor, pos: torch.Tensor, base: float = 1e6) -> torch.Tensor:
    """Rotate ``x`` by the RoPE angles of the given position ids (computed in float32).

    Parameters
    ----------
    x : torch.Tensor of float, shape (B, H, N, d)
        Queries or keys; d even.
    pos : torch.Tensor of int, shape (B, N)
        Position ids (any integers, e.g. RoPE-DHR ids; they are honoured as given).
    base : float, default=1e6
        RoPE base (InternLM2's 1e6 in CoMemo; take your LLM's ``rope_theta``).

    Returns
    -------
    torch.Tensor, same shape and dtype as ``x``.

    Raises
    ------
    TypeError
        Float position ids, non-tensor input.
    ValueError
        Shape mismatch, odd d, bad base.
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError("x must be a floating-point torch.Tensor")
    pos = _check_pos(pos, "pos")
    base = _check_base(base)
    if x.dim() != 4:
        raise ValueError(f"x must have shape (B, H, N, d), got {tuple(x.shape)}")
    d = x.shape[-1]
    if d % 2:
        raise ValueError(f"x's last dimension (head_dim) must be even, got {d}")
    if pos.dim() != 2 or pos.shape[0] != x.shape[0] or pos.shape[1] != x.shape[2]:
        raise ValueError(
            f"pos must have shape (B, N) = {(x.shape[0], x.shape[2])}, got {tuple(pos.shape)}"
        )
    inv_freq = 1.0 / (
        base ** (torch.arange(0, d, 2, dtype=torch.int64, device=x.device).float() / d)
    )
    freqs = pos[:, :, None].float() * inv_freq[None, None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[:, None], emb.sin()[:, None]
    xf = x.float()
    half = d // 2
    rot = torch.cat((-xf[..., half:], xf[..., :half]), dim=-1)
    return (xf * cos + rot * sin).to(x.dtype)


def rope_decay_bound(delta: Any, head_dim: int = 128, base: float = 1e6) -> np.ndarray:
    r"""RoFormer's long-term decay bound of the relative attention term (§3.4.3).

    $$
    B(\Delta) = \frac{2}{d}\sum_{j=1}^{d/2}\Bigl|\sum_{k=0}^{j-1} e^{i\Delta\theta_k}\Bigr|,
    \qquad \theta_k = \mathrm{base}^{-2k/d}
    $$

    ``B(0) = (d/2 + 1)/2``; it decays (non-monotonically) with the distance Δ.

    Parameters
    ----------
    delta : float or array_like of float
        Relative distances Δ (token units); finite.
    head_dim : int, default=128
        d, even and >= 2.
    base : float, default=1e6
        RoPE base.

    Returns
    -------
    numpy.ndarray of float64, shape of ``delta``.

    Raises
    ------
    ValueError
        Non-finite or empty ``delta``, odd/small ``head_dim``, bad ``base``.
    TypeError
        Non-numeric ``delta`` (a str, say), non-integer ``head_dim``.
    """
    base = _check_base(base)
    if isinstance(head_dim, bool) or not isinstance(head_dim, (int, np.integer)):
        raise TypeError(f"head_dim must be an int, got {type(head_dim).__name__}")
    if head_dim < 2 or head_dim % 2:
        raise ValueError(f"head_dim must be an even int >= 2, got {head_dim}")
    raw = np.asarray(delta)
    if raw.dtype.kind not in "iuf":
        raise TypeError(f"delta must be a number or an array of numbers, got {raw.dtype} {delta!r}")
    arr = raw.astype(np.float64)
    if arr.size == 0:
        raise ValueError("delta must be non-empty")
    if not np.isfinite(arr).all():
        raise ValueError("delta must be finite (no NaN/inf)")
    half = head_dim // 2
    theta = base ** (-2.0 * np.arange(half) / head_dim)
    flat = arr.reshape(-1, 1)
    partial = np.cumsum(np.exp(1j * flat * theta[None, :]), axis=1)  # S_j, j = 1..d/2
    out = (2.0 / head_dim) * np.abs(partial).sum(axis=1)
    return out.reshape(arr.shape)
