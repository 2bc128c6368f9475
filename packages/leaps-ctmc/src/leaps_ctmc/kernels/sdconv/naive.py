"""Reference of the hollow state-dependent circular convolution (the executable spec).

One layer l >= 1 of the deep locally equivariant convolution (LEC) of LEAPS (Holderrieth,
Albergo, Jaakkola, ICML 2025, Sec. 5 / App. on LEC; official code ``leaps`` LEC layers):

    W_i[c, o] = SiLU(sum_k A[c, o, k] SiLU(h_i[k]) + b1[c, o]) + b2[c, o] + m[o]      (o != 0)
    out_i[c]  = sum_{o != 0} W_i[c, o] e_{i + o}[c]

on a rows x cols torus, offsets o in a k x k window. Offsets that wrap onto the site itself
(o = 0 mod the torus, possible when k > side) are dropped too, so out_i never reads e_i.

Axis letters: B walkers, C channels, K = k*k offsets, N = rows*cols sites.
This form gathers the whole neighbourhood, [B, C, K, N] floats (the memory hot spot).
"""

import torch
import torch.nn.functional as F

__all__ = ["offset_index", "naive_sdconv"]


def offset_index(rows: int, cols: int, k: int, device=None):
    """Neighbour indices and the hollow mask of a k x k window on a rows x cols torus.

    Returns
    -------
    index : Tensor, int64 [K, N]
        ``index[o, n]`` = flat index of site n + offset o (circular).
    keep : Tensor, bool [K]
        False for offsets that land on the site itself (o = 0 modulo the torus).
    """
    r = k // 2
    d = torch.arange(-r, r + 1, device=device)
    dr, dc = torch.meshgrid(d, d, indexing="ij")
    dr, dc = dr.reshape(-1), dc.reshape(-1)
    rr = torch.arange(rows, device=device)[:, None].expand(rows, cols).reshape(-1)
    cc = torch.arange(cols, device=device)[None, :].expand(rows, cols).reshape(-1)
    index = ((rr[None] + dr[:, None]) % rows) * cols + (cc[None] + dc[:, None]) % cols
    keep = ~((dr % rows == 0) & (dc % cols == 0))
    return index, keep


def naive_sdconv(h, e, A, b1, b2, m):
    """out[b, c, n] = sum_{o kept} W[b, c, o, n] e[b, c, n + o], W as in the module docstring.

    Parameters
    ----------
    h : Tensor, float [B, C, rows, cols]
        Site-invariant features of the previous layer (never saw x_n at site n).
    e : Tensor, float [B, C or 1, rows, cols]
        Raw site encodings e(x) (1 channel broadcasts over C).
    A : Tensor, float [C, K, C]
    b1, b2 : Tensor, float [C, K]
    m : Tensor, float [B, K]
        Time embedding MLP_t(t).

    Returns
    -------
    Tensor, float [B, C, rows, cols]
    """
    B, C, rows, cols = h.shape
    k = round(A.shape[1] ** 0.5)
    index, keep = offset_index(rows, cols, k, h.device)
    s = F.silu(h).reshape(B, C, rows * cols)
    W = F.silu(torch.einsum("cok,bkn->bcon", A, s) + b1[None, :, :, None])
    W = (W + b2[None, :, :, None] + m[:, None, :, None]) * keep[None, None, :, None].to(h.dtype)
    flat = e.reshape(B, e.shape[1], rows * cols)
    neigh = flat[:, :, index]  # [B, C|1, K, N]
    return (W * neigh).sum(2).reshape(B, C, rows, cols)
