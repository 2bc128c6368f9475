"""Triton kernel of the hollow state-dependent conv: the k^2 weights computed on the fly.

Same maths as :func:`.naive.naive_sdconv` (see there for it and its source). One program per
(walker b, output channel c, tile of BLOCK_N sites): for each kept offset o it forms
W_n = SiLU(A[c, o, :] . SiLU(h[b, :, n]) + b1[c, o]) + b2[c, o] + m[b, o] in registers and
accumulates W_n * e[b, c, n + o], so the [B, C, K, N] weight tensor of the reference is never
written to memory. Runs on CUDA tensors, or on CPU under ``TRITON_INTERPRET=1`` (tests).
The backward pass is not a kernel: the autograd Function in ``__init__`` recomputes through the
PyTorch factored form.

This module belongs to the ``[triton]`` extra (card ``optional-modules``): it imports triton at
its top and jits the kernel on import, when Triton reads ``TRITON_INTERPRET``. The dispatcher
(:mod:`leaps_ctmc.kernels.sdconv`) imports it when the Triton form first runs.
"""

import torch

from icml25_core.extras import requires_extra

from .naive import offset_index

with requires_extra("leaps-ctmc", "triton"):
    import triton
    import triton.language as tl

__all__ = ["triton_sdconv"]


@triton.jit
def _sdconv_fwd(
    s_ptr, e_ptr, a_ptr, b1_ptr, b2_ptr, m_ptr, index_ptr, keep_ptr, out_ptr,
    C, K, N, E_CH,
    C_PAD: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    b = tl.program_id(0)
    c = tl.program_id(1)
    n = tl.program_id(2) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = n < N
    k = tl.arange(0, C_PAD)
    k_ok = k < C
    s = tl.load(s_ptr + b * C * N + k[:, None] * N + n[None, :],
                mask=k_ok[:, None] & n_ok[None, :], other=0.0)  # fmt: skip
    e_channel = c if E_CH > 1 else 0
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for o in range(0, K):
        keep = tl.load(keep_ptr + o)
        a = tl.load(a_ptr + c * K * C + o * C + k, mask=k_ok, other=0.0)
        pre = tl.sum(a[:, None] * s, axis=0) + tl.load(b1_ptr + c * K + o)
        w = pre * tl.sigmoid(pre) + tl.load(b2_ptr + c * K + o) + tl.load(m_ptr + b * K + o)
        idx = tl.load(index_ptr + o * N + n, mask=n_ok, other=0)
        ev = tl.load(e_ptr + b * E_CH * N + e_channel * N + idx, mask=n_ok, other=0.0)
        acc += keep * w * ev
    tl.store(out_ptr + b * C * N + c * N + n, acc, mask=n_ok)


def triton_sdconv(h, e, A, b1, b2, m):
    """Same inputs, output and maths as ``naive_sdconv`` (float32 compute)."""
    B, C, rows, cols = h.shape
    K, N = A.shape[1], rows * cols
    k = round(K**0.5)
    index, keep = offset_index(rows, cols, k, h.device)
    f32 = torch.float32
    s = torch.nn.functional.silu(h.to(f32)).reshape(B, C, N).contiguous()
    out = torch.empty(B, C, N, dtype=f32, device=h.device)
    block = min(256, triton.next_power_of_2(N))
    grid = (B, C, triton.cdiv(N, block))
    _sdconv_fwd[grid](
        s, e.to(f32).reshape(B, e.shape[1], N).contiguous(), A.to(f32).contiguous(),
        b1.to(f32).contiguous(), b2.to(f32).contiguous(), m.to(f32).contiguous(),
        index.to(torch.int32).contiguous(), keep.to(f32).contiguous(), out,
        C, K, N, e.shape[1], C_PAD=triton.next_power_of_2(C), BLOCK_N=block,
    )  # fmt: skip
    return out.reshape(B, C, rows, cols).to(h.dtype)
