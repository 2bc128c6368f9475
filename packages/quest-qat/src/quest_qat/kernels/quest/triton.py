"""Triton kernels of the QuEST quantizer; :mod:`.naive` is their executable spec.

One program handles ``BLOCK_M`` rows and walks their K columns in Hadamard blocks: a first pass
accumulates ``Σ (x_h/r)²`` for the row RMS, with ``r`` the power of two of the row's largest
magnitude seen so far (at least 1; the sum is rescaled by an exact power of 4 when ``r`` grows,
the online form of :func:`~quest_qat.kernels.quest.naive.row_scale`), so that no square
overflows; a second pass rotates ``x/r`` again, quantizes and writes either
``x̂`` plus a 1-bit-per-entry trust mask (``MODE=0``, training) or the int8 codes plus their row
sums (``MODE=1``, int4 inference). ``H`` is loaded once per program and every product uses
``tl.dot(..., input_precision="ieee")`` (Triton's GPU default is TF32, triton #5895).

This module belongs to the ``[triton]`` extra (card ``optional-modules``): it imports triton at
its top and decorates the kernels on import, when Triton reads ``TRITON_INTERPRET``. The
dispatcher in :mod:`quest_qat.kernels.quest` imports it inside the functions that launch a
kernel, after :func:`icml25_core.select_backend` has chosen a Triton backend.
"""

from icml25_core.extras import requires_extra

with requires_extra("quest-qat", "triton"):
    import triton
    import triton.language as tl

__all__ = ["quest_bwd_kernel", "quest_fwd_kernel"]


@triton.jit
def quest_fwd_kernel(
    X, H, XHAT, MASKBITS, CODES, STEP, ROWSUM,
    M, K, alpha, trust_half, clip_thr, n_steps, qmin, qmax, out_max,
    BLOCK_M: tl.constexpr, HB: tl.constexpr, ROTATE: tl.constexpr,
    USE_CLIP: tl.constexpr, TRUST_INF: tl.constexpr, MODE: tl.constexpr,
):  # fmt: skip
    """Forward quantizer, one program per ``BLOCK_M`` rows (grid ``cdiv(M, BLOCK_M)``).

    Reads ``X`` (M, K) row-major and the ``HB x HB`` Hadamard block ``H``; writes ``STEP`` (M,)
    and, with ``MODE=0``, ``XHAT`` (M, K) float32 and the trust bitmap ``MASKBITS`` uint8
    (M, K/8), or, with ``MODE=1``, the int8 ``CODES`` (M, K) and their ``ROWSUM`` int32 (M,).
    ``x̂`` is saturated at ``±out_max`` (the largest finite value of its dtype) and ``STEP`` at
    the float32 maximum, as in the reference. Launched by ``quest_qat.kernels.quest``;
    ``naive.py`` is the reference it is tested on.
    """
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    cols = tl.arange(0, HB)
    h = tl.load(H + cols[:, None] * HB + cols[None, :])
    acc = tl.zeros([BLOCK_M], dtype=tl.float32)
    r = tl.full([BLOCK_M], 1.0, dtype=tl.float32)
    for k0 in range(0, K, HB):
        x = tl.load(X + rows[:, None] * K + k0 + cols[None, :], mask=rmask[:, None], other=0.0)
        x = x.to(tl.float32)
        big = tl.max(tl.abs(x), axis=1)  # its exponent bits give 2**floor(log2 big), exactly
        pow2 = (big.to(tl.int32, bitcast=True) & 0x7F800000).to(tl.float32, bitcast=True)
        r_new = tl.maximum(r, pow2)
        ratio = r / r_new
        x = x / r_new[:, None]
        if ROTATE:
            x = tl.dot(x, h, input_precision="ieee")
        acc = acc * (ratio * ratio) + tl.sum(x * x, axis=1)
        r = r_new
    sigma = tl.sqrt(acc / K)
    step = 2.0 * (alpha * sigma + 1e-8 / r) / n_steps
    # saturate before scaling back (max/r is exact): no intermediate overflow
    tl.store(STEP + rows, tl.minimum(step, 3.4028234663852886e38 / r) * r, mask=rmask)
    rowsum = tl.zeros([BLOCK_M], dtype=tl.int32)
    weights = 1 << tl.arange(0, 8)
    for k0 in range(0, K, HB):
        offs = rows[:, None] * K + k0 + cols[None, :]
        x = tl.load(X + offs, mask=rmask[:, None], other=0.0).to(tl.float32) / r[:, None]
        if ROTATE:
            x = tl.dot(x, h, input_precision="ieee")
        q = tl.floor(x / step[:, None])
        q = tl.minimum(tl.maximum(q, qmin), qmax)
        if MODE == 0:
            xhat = (q + 0.5) * step[:, None]
            bound = (out_max / r)[:, None]
            out = tl.minimum(tl.maximum(xhat, -bound), bound) * r[:, None]
            tl.store(XHAT + offs, out.to(XHAT.dtype.element_ty), mask=rmask[:, None])
            if USE_CLIP:
                keep = tl.abs(x) <= clip_thr * sigma[:, None]
            elif TRUST_INF:
                keep = x == x
            else:
                keep = tl.abs(xhat - x) <= trust_half * step[:, None]
            bits = tl.reshape(keep.to(tl.int32), [BLOCK_M, HB // 8, 8]) * weights[None, None, :]
            packed = tl.sum(bits, axis=2).to(tl.uint8)
            boffs = rows[:, None] * (K // 8) + k0 // 8 + tl.arange(0, HB // 8)[None, :]
            tl.store(MASKBITS + boffs, packed, mask=rmask[:, None])
        else:
            qi = q.to(tl.int32)
            rowsum += tl.sum(qi, axis=1)
            tl.store(CODES + offs, qi.to(tl.int8), mask=rmask[:, None])
    if MODE == 1:
        tl.store(ROWSUM + rows, rowsum, mask=rmask)


@triton.jit
def quest_bwd_kernel(
    G, MASKBITS, H, OUT, M, K,
    BLOCK_M: tl.constexpr, HB: tl.constexpr, ROTATE: tl.constexpr,
):  # fmt: skip
    """Trust-masked gradient, one program per ``BLOCK_M`` rows: ``OUT = (G ⊙ mask) Hᵀ`` blockwise
    (without the rotation when ``ROTATE`` is false), ``G`` and ``OUT`` (M, K) float32, the mask
    unpacked from ``MASKBITS`` uint8 (M, K/8).
    """
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    cols = tl.arange(0, HB)
    h = tl.load(H + cols[:, None] * HB + cols[None, :])
    for k0 in range(0, K, HB):
        offs = rows[:, None] * K + k0 + cols[None, :]
        g = tl.load(G + offs, mask=rmask[:, None], other=0.0).to(tl.float32)
        c = k0 + cols[None, :]
        byte = tl.load(MASKBITS + rows[:, None] * (K // 8) + c // 8, mask=rmask[:, None], other=0)
        bit = (byte.to(tl.int32) >> (c % 8)) & 1
        g = g * bit.to(tl.float32)
        if ROTATE:
            g = tl.dot(g, h, input_precision="ieee")
        tl.store(OUT + offs, g.to(OUT.dtype.element_ty), mask=rmask[:, None])
