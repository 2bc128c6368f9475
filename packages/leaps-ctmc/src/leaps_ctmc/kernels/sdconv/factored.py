"""Factored form of the hollow state-dependent conv: one matmul for all offsets, the
state-independent part (b2 + m) as a plain gathered conv.

Same maths as :func:`..naive.naive_sdconv`: W = SiLU(A . SiLU(h) + b1) + b2 + m, so
out = sum_o SiLU(A_o . SiLU(h) + b1_o) e_{i+o} + sum_o (b2_o + m_o) e_{i+o}. Offsets that wrap
onto the site are removed before any work; with one input channel (Ising) the neighbourhood of
e is C times smaller than the weights, which is where this form saves memory traffic.
"""

import torch
import torch.nn.functional as F

from .naive import offset_index

__all__ = ["factored_sdconv"]


def factored_sdconv(h, e, A, b1, b2, m):
    """Same inputs, output and maths as ``naive_sdconv``."""
    B, C, rows, cols = h.shape
    k = round(A.shape[1] ** 0.5)
    index, keep = offset_index(rows, cols, k, h.device)
    index, A, b1, b2, m = index[keep], A[:, keep], b1[:, keep], b2[:, keep], m[:, keep]
    K, N = index.shape[0], rows * cols
    s = F.silu(h).reshape(B, C, N)
    pre = torch.matmul(A.permute(1, 0, 2).reshape(K * C, C), s) + b1.T.reshape(1, K * C, 1)
    W = F.silu(pre).reshape(B, K, C, N)
    neigh = e.reshape(B, e.shape[1], N)[:, :, index].transpose(1, 2)  # [B, K, C|1, N]
    out = (W * neigh).sum(1)
    lin = (
        torch.einsum("ck,bkcn->bcn", b2, neigh)
        if neigh.shape[2] == C
        else (torch.einsum("ck,bkn->bcn", b2, neigh[:, :, 0]))
    )
    lin = lin + torch.einsum("bk,bkcn->bcn", m, neigh)
    return (out + lin).reshape(B, C, rows, cols)
