r"""Tied row attention of the MSA Transformer as used by RankNovo's decoder.

For one spectrum with R real candidates (rows), columns c, c' and head h (ESM
``RowSelfAttention``, with R the spectrum's **real** candidate count instead of the padded batch's):

$$
A_h = \mathrm{softmax}_{c'}\Bigl(\frac{1}{\sqrt{R}}\sum_{r=1}^{R}
\frac{q_{r,c,h}\,k_{r,c',h}^\top}{\sqrt{d_h}}\Bigr),\qquad
o_{r,c,h} = \sum_{c'} A_{h,c,c'}\,v_{r,c',h}
$$

one attention map for all rows. Queries of padded rows and padded columns are zeroed; padded
columns are masked as keys. :func:`row_attention_einsum` is the readable reference;
:func:`row_attention_sdpa` makes it one ``scaled_dot_product_attention`` call by concatenating
the rows into the head dimension (head dim R·d_h), the 1/√R folded into the queries.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["row_attention_einsum", "row_attention_sdpa"]


def _prep(q, row_mask, col_mask):
    # q: (B, R, C, H, dh); row_mask (B, R) bool True = real row; col_mask (B, C) bool True = real.
    n_rows = row_mask.sum(dim=1).clamp(min=1).to(q.dtype)  # (B,)
    keep = (row_mask[:, :, None] & col_mask[:, None, :]).to(q.dtype)  # (B, R, C)
    q = q * keep[..., None, None] / n_rows.sqrt()[:, None, None, None, None]
    return q


def row_attention_einsum(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    row_mask: torch.Tensor,
    col_mask: torch.Tensor,
) -> torch.Tensor:
    """Tied row attention, einsum reference.

    Parameters
    ----------
    q, k, v : torch.Tensor, float, shape (B, R, C, H, d_h)
        Projected queries, keys, values.
    row_mask : torch.Tensor of bool, shape (B, R)
        True for the spectrum's real candidates.
    col_mask : torch.Tensor of bool, shape (B, C)
        True for real columns (``<cls>``, residues and gaps; False for batch padding).

    Returns
    -------
    torch.Tensor, shape (B, R, C, H, d_h)
        Attended values (rows past R are computed but meaningless).
    """
    dh = q.shape[-1]
    q = _prep(q, row_mask, col_mask) * dh**-0.5
    logits = torch.einsum("brchd,brkhd->bhck", q, k)  # (B, H, C, C)
    logits = logits.masked_fill(~col_mask[:, None, None, :], float("-inf"))
    attn = logits.softmax(dim=-1)
    return torch.einsum("bhck,brkhd->brchd", attn, v)


def row_attention_sdpa(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    row_mask: torch.Tensor,
    col_mask: torch.Tensor,
) -> torch.Tensor:
    """Tied row attention as one ``F.scaled_dot_product_attention`` call (rows in the head dim).

    Parameters and return as :func:`row_attention_einsum`.
    """
    b, r, c, h, dh = q.shape
    q = _prep(q, row_mask, col_mask)

    def heads(x):  # (B, R, C, H, dh) -> (B, H, C, R*dh)
        return x.permute(0, 3, 2, 1, 4).reshape(b, h, c, r * dh)

    mask = col_mask[:, None, None, :]  # (B, 1, 1, C) True = attend
    out = F.scaled_dot_product_attention(
        heads(q), heads(k), heads(v), attn_mask=mask, scale=dh**-0.5
    )
    return out.reshape(b, h, c, r, dh).permute(0, 3, 2, 1, 4)
