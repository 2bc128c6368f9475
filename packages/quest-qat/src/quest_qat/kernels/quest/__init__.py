"""QuEST quantizer op: validation-free internal dispatch between the PyTorch reference and the
Triton kernels, registered as torch custom ops so that ``torch.compile`` sees through them.

``quest_fwd`` returns ``(x̂ (M,K) in x's dtype, mask bitmap uint8 (M,K/8), step fp32 (M,1))``;
bit ``j`` of byte ``i`` is the trust mask of column ``8i+j``. ``quest_bwd`` maps
``(∂L/∂x̂, bitmap)`` to ``((∂L/∂x̂) ⊙ M)·H``. ``quest_pack`` returns the int8 codes, the step and
the int32 row sums of the codes (the int4 inference path).
"""

import os

import torch

from icml25_core import select_backend

from ...hadamard import hadamard_matrix
from .naive import quest_bwd_naive, quest_codes_naive, quest_fwd_naive

__all__ = ["pick_backend", "quest_fwd", "quest_bwd", "quest_pack", "pack_mask", "unpack_mask"]

BLOCK_M = 16


def pick_backend(x: torch.Tensor, *, block: int, grid: str, sparse48: bool) -> str:
    """``"triton"`` (Triton kernels, compiled or interpreted) or ``"torch"`` (the reference).

    CUDA tensors use Triton when it is installed; CPU tensors use the reference unless
    ``ICML25_BACKEND=triton-interpret`` (with ``TRITON_INTERPRET=1``) asks for the interpreter.
    Configurations the kernel does not cover (FP4, 4:8, block < 16, float64) use the reference.
    """
    backend = select_backend() if os.environ.get("ICML25_BACKEND") or x.is_cuda else "torch"
    unsupported = grid != "int" or sparse48 or x.dtype == torch.float64 or block < 16
    if backend == "triton" and not x.is_cuda:
        backend = "torch"
    return "torch" if unsupported or backend not in ("triton", "triton-interpret") else "triton"


def _launch_fwd(x, bits, block, trust, clip_scale, rotate, alpha, mode):
    from .triton import quest_fwd_kernel  # the [triton] extra, imported on use

    m, k = x.shape
    x = x.contiguous()
    h = hadamard_matrix(block, torch.float32, x.device)
    step = torch.empty((m, 1), dtype=torch.float32, device=x.device)
    if mode == 0:
        xhat = torch.empty_like(x)
        bits_out = torch.empty((m, k // 8), dtype=torch.uint8, device=x.device)
        codes = rowsum = step  # unused pointers
    else:
        codes = torch.empty((m, k), dtype=torch.int8, device=x.device)
        rowsum = torch.empty((m,), dtype=torch.int32, device=x.device)
        xhat = bits_out = step
    use_clip = clip_scale is not None
    trust_inf = trust == float("inf")
    quest_fwd_kernel[(triton_cdiv(m, BLOCK_M),)](
        x, h, xhat, bits_out, codes, step, rowsum,
        m, k, float(alpha), 0.0 if trust_inf else float(trust) / 2,
        float(clip_scale * alpha) if use_clip else 0.0,
        float(2**bits - 1), float(-(2 ** (bits - 1))), float(2 ** (bits - 1) - 1),
        float(torch.finfo(x.dtype).max),
        BLOCK_M=BLOCK_M, HB=block, ROTATE=rotate, USE_CLIP=use_clip, TRUST_INF=trust_inf,
        MODE=mode,
    )  # fmt: skip
    return (xhat, bits_out, step) if mode == 0 else (codes, step, rowsum)


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


@torch.library.custom_op("quest_qat::quest_fwd_triton", mutates_args=())
def quest_fwd_triton(
    x: torch.Tensor,
    bits: int,
    block: int,
    trust: float,
    clip_scale: float | None,
    rotate: bool,
    alpha: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _launch_fwd(x, bits, block, trust, clip_scale, rotate, alpha, 0)


@quest_fwd_triton.register_fake
def _(x, bits, block, trust, clip_scale, rotate, alpha):
    m, k = x.shape
    return (
        torch.empty_like(x),
        x.new_empty((m, k // 8), dtype=torch.uint8),
        x.new_empty((m, 1), dtype=torch.float32),
    )


@torch.library.custom_op("quest_qat::quest_bwd_triton", mutates_args=())
def quest_bwd_triton(
    g: torch.Tensor, maskbits: torch.Tensor, block: int, rotate: bool
) -> torch.Tensor:
    from .triton import quest_bwd_kernel  # the [triton] extra, imported on use

    m, k = g.shape
    g = g.contiguous()
    out = torch.empty_like(g)
    h = hadamard_matrix(block, torch.float32, g.device)
    quest_bwd_kernel[(triton_cdiv(m, BLOCK_M),)](
        g, maskbits.contiguous(), h, out, m, k, BLOCK_M=BLOCK_M, HB=block, ROTATE=rotate
    )
    return out


@quest_bwd_triton.register_fake
def _(g, maskbits, block, rotate):
    return torch.empty_like(g)


@torch.library.custom_op("quest_qat::quest_pack_triton", mutates_args=())
def quest_pack_triton(
    x: torch.Tensor, bits: int, block: int, rotate: bool, alpha: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _launch_fwd(x, bits, block, 1.0, None, rotate, alpha, 1)


@quest_pack_triton.register_fake
def _(x, bits, block, rotate, alpha):
    m, k = x.shape
    return (
        x.new_empty((m, k), dtype=torch.int8),
        x.new_empty((m, 1), dtype=torch.float32),
        x.new_empty((m,), dtype=torch.int32),
    )


def pack_mask(mask: torch.Tensor) -> torch.Tensor:
    """Bool (M, K) -> uint8 bitmap (M, K/8), bit j of byte i = column 8i+j."""
    m, k = mask.shape
    weights = 2 ** torch.arange(8, device=mask.device, dtype=torch.int32)
    return (mask.reshape(m, k // 8, 8).to(torch.int32) * weights).sum(-1).to(torch.uint8)


def unpack_mask(bits: torch.Tensor, k: int) -> torch.Tensor:
    """uint8 bitmap (M, K/8) -> bool (M, K)."""
    shifts = torch.arange(8, device=bits.device, dtype=torch.int32)
    return ((bits.to(torch.int32)[..., None] >> shifts) & 1).bool().reshape(bits.shape[0], k)


def quest_fwd(
    x, bits, *, block, trust, clip_scale, rotate, grid, sparse48, backend, alpha, group=None
):
    """Forward on (M, K): ``(x̂ rotated basis, mask, step, packed)``; `packed` says whether
    `mask` is the Triton bitmap (True) or a bool tensor (False). A process `group` (rows split
    along K over its ranks, row-wise tensor parallelism) takes the reference."""
    if backend == "triton" and group is None:
        xhat, maskbits, step = quest_fwd_triton(x, bits, block, trust, clip_scale, rotate, alpha)
        return xhat, maskbits, step, True
    xhat, mask, step = quest_fwd_naive(
        x, bits, block=block, trust=trust, clip_scale=clip_scale, rotate=rotate, grid=grid,
        sparse48=sparse48, group=group,
    )  # fmt: skip
    return xhat, mask, step, False


def quest_bwd(g, mask, *, block, rotate, packed):
    """Backward on (M, K) through the Triton kernel (bitmap `mask`) or the reference."""
    if packed:
        return quest_bwd_triton(g, mask, block, rotate)
    return quest_bwd_naive(g, mask, block=block, rotate=rotate)


def quest_pack(x, bits, *, block, rotate, backend, alpha):
    """Int8 codes (M,K), step (M,1) and int32 row sums (M,) of the codes."""
    if backend == "triton":
        return quest_pack_triton(x, bits, block, rotate, alpha)
    codes, step = quest_codes_naive(x, bits, block=block, rotate=rotate)
    return codes, step, codes.to(torch.int32).sum(-1, dtype=torch.int32)
