"""Fused Triton step of the FINOLA scan: z' = z + ẑ Mᵀ with the normaliser in the GEMM prologue.

Axes: R rows stepped together (images × map lines), C channels; BR × BN output tile, BK the
reduction chunk. Forward: each program reads its BR rows once to get the LayerNorm / RMS
statistics (two passes over C: mean, then the population variance of z − mean), then
accumulates ẑ Mᵀ chunk by chunk with ``tl.dot`` (IEEE fp32, no TF32) and adds z in the
epilogue, writing straight into the map's slot (a strided view, no ``torch.stack``). Backward
(the step's vector-Jacobian product): one program per BR rows recomputes ẑ from the stored z and
maps dẑ = g M (a cuBLAS GEMM outside) to dz = g + J_ẑᵀ dẑ, i.e. for LayerNorm
dz = g + (dẑ − mean(dẑ) − ẑ · mean(dẑ ẑ)) / σ and for RMS dz = g + (dẑ − ẑ · mean(dẑ ẑ)) / r;
dM = gᵀ ẑ is a GEMM outside. The maths is :func:`finola.functional._torch_step` /
``_torch_step_vjp``, which the tests compare it with (``TRITON_INTERPRET=1`` on CPU).

This module belongs to the ``[triton]`` extra (card ``optional-modules``): it imports triton at
its top; :func:`finola.functional.finola_scan` imports it when the Triton backend runs.
"""

import torch

from icml25_core.extras import requires_extra

with requires_extra("finola", "triton"):
    import triton
    import triton.language as tl

__all__ = ["triton_step", "triton_step_vjp"]

_NORM_CODES = {"none": 0, "layernorm": 1, "rms": 2}
BLOCK_R = 16
BLOCK_N = 32
BLOCK_K = 32


@triton.jit
def _row_stats(Z, stride_z, rows, rmask, C, eps, NORM: tl.constexpr, BR: tl.constexpr,
               BK: tl.constexpr):  # fmt: skip
    """Per-row shift and 1/scale of the normaliser: ẑ = (z − shift) · inv."""
    shift = tl.zeros([BR], dtype=tl.float32)
    inv = tl.full([BR], 1.0, dtype=tl.float32)
    if NORM == 1:
        total = tl.zeros([BR], dtype=tl.float32)
        for k0 in range(0, C, BK):
            ks = k0 + tl.arange(0, BK)
            m = rmask[:, None] & (ks[None, :] < C)
            total += tl.sum(
                tl.load(Z + rows[:, None] * stride_z + ks[None, :], mask=m, other=0.0), 1
            )
        shift = total / C
        sq = tl.zeros([BR], dtype=tl.float32)
        for k0 in range(0, C, BK):
            ks = k0 + tl.arange(0, BK)
            m = rmask[:, None] & (ks[None, :] < C)
            v = tl.load(Z + rows[:, None] * stride_z + ks[None, :], mask=m, other=0.0)
            d = tl.where(m, v - shift[:, None], 0.0)
            sq += tl.sum(d * d, 1)
        inv = 1.0 / tl.sqrt(sq / C + eps)
    if NORM == 2:
        sq = tl.zeros([BR], dtype=tl.float32)
        for k0 in range(0, C, BK):
            ks = k0 + tl.arange(0, BK)
            m = rmask[:, None] & (ks[None, :] < C)
            v = tl.load(Z + rows[:, None] * stride_z + ks[None, :], mask=m, other=0.0)
            sq += tl.sum(v * v, 1)
        inv = 1.0 / tl.sqrt(sq / C + eps)
    return shift, inv


@triton.jit
def _step_fwd_kernel(
    Z, stride_z, OUT, stride_out, M, R, C, eps,
    NORM: tl.constexpr, BR: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * BR + tl.arange(0, BR)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    rmask = rows < R
    cmask = cols < C
    shift, inv = _row_stats(Z, stride_z, rows, rmask, C, eps, NORM, BR, BK)
    acc = tl.zeros([BR, BN], dtype=tl.float32)
    for k0 in range(0, C, BK):
        ks = k0 + tl.arange(0, BK)
        kmask = ks < C
        z = tl.load(Z + rows[:, None] * stride_z + ks[None, :],
                    mask=rmask[:, None] & kmask[None, :], other=0.0)  # fmt: skip
        zhat = tl.where(kmask[None, :], (z - shift[:, None]) * inv[:, None], 0.0)
        mt = tl.load(
            M + cols[None, :] * C + ks[:, None], mask=kmask[:, None] & cmask[None, :], other=0.0
        )  # (BK, BN) = Mᵀ tile
        acc += tl.dot(zhat, mt, input_precision="ieee")
    omask = rmask[:, None] & cmask[None, :]
    skip = tl.load(Z + rows[:, None] * stride_z + cols[None, :], mask=omask, other=0.0)
    tl.store(OUT + rows[:, None] * stride_out + cols[None, :], skip + acc, mask=omask)


@triton.jit
def _step_vjp_kernel(
    Z, stride_z, G, stride_g, DZHAT, DZ, ZHAT, R, C, eps,
    NORM: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr,
):  # fmt: skip
    rows = tl.program_id(0) * BR + tl.arange(0, BR)
    cols = tl.arange(0, BC)
    m = (rows[:, None] < R) & (cols[None, :] < C)
    z = tl.load(Z + rows[:, None] * stride_z + cols[None, :], mask=m, other=0.0)
    g = tl.load(G + rows[:, None] * stride_g + cols[None, :], mask=m, other=0.0)
    dzhat = tl.load(DZHAT + rows[:, None] * C + cols[None, :], mask=m, other=0.0)
    if NORM == 0:
        zhat = z
        dz = g + dzhat
    else:
        if NORM == 1:
            mean = tl.sum(z, 1) / C
            centred = tl.where(m, z - mean[:, None], 0.0)
        else:
            centred = z
        inv = 1.0 / tl.sqrt(tl.sum(centred * centred, 1) / C + eps)
        zhat = centred * inv[:, None]
        proj = tl.sum(dzhat * zhat, 1) / C
        inner = dzhat - zhat * proj[:, None]
        if NORM == 1:
            inner = inner - (tl.sum(dzhat, 1) / C)[:, None]
        dz = g + tl.where(m, inner * inv[:, None], 0.0)
    tl.store(DZ + rows[:, None] * C + cols[None, :], dz, mask=m)
    tl.store(ZHAT + rows[:, None] * C + cols[None, :], zhat, mask=m)


def _check(z: torch.Tensor, m: torch.Tensor) -> None:
    if z.dtype != torch.float32 or m.dtype != torch.float32:
        raise ValueError(
            f"the Triton FINOLA step runs in float32, got z {z.dtype} and M {m.dtype}; use "
            "backend='torch' for float64"
        )
    if z.stride(-1) != 1:
        raise ValueError("the Triton FINOLA step needs rows with unit channel stride")


def triton_step(z: torch.Tensor, m: torch.Tensor, out: torch.Tensor, norm: str, eps: float):
    """out ← z + normalize(z) Mᵀ for rows z (R, C) float32 (``out`` may be a strided view).

    Raises
    ------
    ValueError
        If the tensors are not float32 or the channel axis is not contiguous.
    """
    _check(z, m)
    R, C = z.shape
    grid = (triton.cdiv(R, BLOCK_R), triton.cdiv(C, BLOCK_N))
    _step_fwd_kernel[grid](
        z, z.stride(0), out, out.stride(0), m.contiguous(), R, C, float(eps),
        NORM=_NORM_CODES[norm], BR=BLOCK_R, BN=BLOCK_N, BK=BLOCK_K,
    )  # fmt: skip


def triton_step_vjp(z: torch.Tensor, m: torch.Tensor, g: torch.Tensor, norm: str, eps: float):
    """(∂L/∂z, ∂L/∂M) of out = z + normalize(z) Mᵀ given g = ∂L/∂out, rows (R, C) float32.

    Raises
    ------
    ValueError
        If the tensors are not float32 or the channel axis is not contiguous.
    """
    _check(z, m)
    R, C = z.shape
    dzhat = (g @ m).contiguous()
    dz = torch.empty(R, C, dtype=z.dtype, device=z.device)
    zhat = torch.empty_like(dz)
    block_c = max(16, triton.next_power_of_2(C))
    _step_vjp_kernel[(triton.cdiv(R, BLOCK_R),)](
        z, z.stride(0), g, g.stride(0), dzhat, dz, zhat, R, C, float(eps),
        NORM=_NORM_CODES[norm], BR=BLOCK_R, BC=block_c,
    )  # fmt: skip
    return dz, g.t() @ zhat
