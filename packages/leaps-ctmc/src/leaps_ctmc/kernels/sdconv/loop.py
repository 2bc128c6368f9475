"""Loop-over-offsets form of the hollow state-dependent conv: [C, B, N] memory per offset.

Same maths as :func:`..naive.naive_sdconv` (see there), computed one offset at a time with
``torch.roll`` instead of materialising the [B, C, K, N] neighbourhood; the CPU fast path.
Channels lead ([C, B * N]) so that each offset's weight generator is one GEMM with its bias
(``addmm``), and the output accumulates in place (``addcmul_``).
"""

import torch
import torch.nn.functional as F

__all__ = ["loop_sdconv"]


def loop_sdconv(h, e, A, b1, b2, m):
    """Same inputs, output and maths as ``naive_sdconv``; O(B C N) extra memory."""
    B, C, rows, cols = h.shape
    k = round(A.shape[1] ** 0.5)
    r = k // 2
    s = F.silu(h).transpose(0, 1).reshape(C, B * rows * cols)  # [C, B N]
    ev = e.transpose(0, 1)  # [C|1, B, rows, cols]
    bias = b2[:, :, None] + m.T[None]  # [C, K, B]: b2[c, o] + m[b, o]
    out = h.new_zeros(C, B, rows, cols)
    for o in range(k * k):
        dr, dc = o // k - r, o % k - r
        if dr % rows == 0 and dc % cols == 0:
            continue  # hollow: never read the site itself
        w = F.silu(torch.addmm(b1[:, o, None], A[:, o], s)).view(C, B, rows, cols)
        w.add_(bias[:, o, :, None, None])  # silu keeps its input, not its output
        out.addcmul_(w, ev.roll((-dr, -dc), (-2, -1)))
    return out.transpose(0, 1)
