"""Loop-over-offsets form of the hollow state-dependent conv: [B, C, N] memory per offset.

Same maths as :func:`..naive.naive_sdconv` (see there), computed one offset at a time with
``torch.roll`` instead of materialising the [B, C, K, N] neighbourhood; the CPU fast path.
"""

import torch
import torch.nn.functional as F

__all__ = ["loop_sdconv"]


def loop_sdconv(h, e, A, b1, b2, m):
    """Same inputs, output and maths as ``naive_sdconv``; O(B C N) extra memory."""
    B, C, rows, cols = h.shape
    k = round(A.shape[1] ** 0.5)
    r = k // 2
    s = F.silu(h).reshape(B, C, rows * cols)
    out = torch.zeros_like(h)
    for o in range(k * k):
        dr, dc = o // k - r, o % k - r
        if dr % rows == 0 and dc % cols == 0:
            continue  # hollow: never read the site itself
        w = F.silu(torch.einsum("ck,bkn->bcn", A[:, o], s) + b1[None, :, o, None])
        w = (w + b2[None, :, o, None] + m[:, None, o, None]).reshape(B, C, rows, cols)
        out = out + w * e.roll((-dr, -dc), (-2, -1))
    return out
