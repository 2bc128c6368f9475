"""Loop-over-offsets form of the hollow state-dependent conv: [C, B, N] memory per offset.

Same maths as :func:`..naive.naive_sdconv` (see there), computed one offset at a time instead
of materialising the [B, C, K, N] neighbourhood; the CPU fast path. Channels lead ([C, B * N]) so
that each offset's weight generator is one GEMM with its bias (``addmm``), and the output
accumulates in place (``addcmul_``). Without autograd the SiLU runs in place. The shifted
input of each offset is a ``torch.roll`` copy on short rows and a view into one circularly padded
copy of e from `SLICE_MIN_COLS` columns on (strided reads of short rows cost more than the copy):
issue 30's profile, best of 8 interleaved runs on the 2-core CPU, no autograd — B = 2048, 8 x 8,
C = 16, k = 5: roll 142 ms, padded view 206 ms; B = 256, 15 x 15, C = 20, k = 15: roll 681 ms,
padded view 530 ms.
"""

import torch
import torch.nn.functional as F

__all__ = ["loop_sdconv"]

SLICE_MIN_COLS = 12  # from these many columns on, shifted inputs are views of a padded copy


def loop_sdconv(h, e, A, b1, b2, m):
    """Same inputs, output and maths as ``naive_sdconv``; O(B C N) extra memory."""
    B, C, rows, cols = h.shape
    k = round(A.shape[1] ** 0.5)
    r = k // 2
    s = F.silu(h).transpose(0, 1).reshape(C, B * rows * cols)  # [C, B N]
    bias = b2[:, :, None] + m.T[None]  # [C, K, B]: b2[c, o] + m[b, o]
    out = h.new_zeros(C, B, rows, cols)
    in_place = not torch.is_grad_enabled()
    ev = e.transpose(0, 1)  # [C|1, B, rows, cols]
    padded = None
    if cols >= SLICE_MIN_COLS:  # padded[..., r + i + dr, r + j + dc] = e[..., i + dr, j + dc]
        wrap_r = torch.arange(-r, rows + r, device=e.device) % rows
        wrap_c = torch.arange(-r, cols + r, device=e.device) % cols
        padded = ev[:, :, wrap_r][:, :, :, wrap_c]  # [C|1, B, rows + 2r, cols + 2r]
    for o in range(k * k):
        dr, dc = o // k - r, o % k - r
        if dr % rows == 0 and dc % cols == 0:
            continue  # hollow: never read the site itself
        w = F.silu(torch.addmm(b1[:, o, None], A[:, o], s), inplace=in_place)
        w = w.view(C, B, rows, cols)
        w.add_(bias[:, o, :, None, None])  # silu keeps its input, not its output
        if padded is None:
            shifted = ev.roll((-dr, -dc), (-2, -1))
        else:
            shifted = padded[:, :, r + dr : r + dr + rows, r + dc : r + dc + cols]
        out.addcmul_(w, shifted)
    return out.transpose(0, 1)
