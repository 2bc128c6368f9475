"""Fused CPU FPT: one autograd node for all K evaluations, neurons in cache-sized tiles.

Axes: T time steps, N neurons; the neurons are cut into tiles of ``n_b`` columns.

Same maths as :func:`fpt_snn.kernels.fpt_dense.fpt_dense` for one scalar λ and θ with fixed
slopes (the official configuration; Feng et al., ICML 2025, Sec. 4, official
``FPT_adaptive_alpha``), with the backward written out instead of recorded by autograd:

    forward   C = Λx − θ;  h⁰ = C;  h^k = C − θ A s^{k−1};  s^k = f_k(h^k)
              (computed as h̃^k = α_k h^k, the slope folded into each GEMM)
    backward  ḡ^{K−1} = ∂L/∂s^{K−1};  for k = K−1..0:  ḡh^k = ḡ^k · α_b,k σ'(α_b,k h^k),
              ḡ^{k−1} = −θ Aᵀ ḡh^k;  ∂L/∂x = Λᵀ Σ_k ḡh^k

(``σ'`` the sigmoid's derivative, ``α_b,k = max(1, α_k/3)`` official or ``α_k`` exact, as in
:mod:`fpt_snn.surrogate`). Neurons are independent, so the forward and the backward run tile
by tile: each tile's K iterates, GEMM outputs and surrogate terms stay in the CPU cache instead
of making K round trips through memory per element-wise step (the profile in
``benchmarks/RESULTS.md``). Only the scaled pre-activations ``α_k h^k`` are kept for the backward.
"""

from __future__ import annotations

import functools
import math

import torch

from ..lif import lambda_matrix, reset_matrix
from ..surrogate import backward_slope

TILE_ELEMENTS = 2**15  # T·n_b values per tile buffer with dense T×T operators (128 KiB fp32)
TILE_ELEMENTS_BLOCKED = 2**17  # with block + low-rank operators (cheaper GEMMs, wider tiles)


def tile_width(T: int, N: int, elements: int | None = None) -> int:
    """Neurons per tile: ``elements / T`` (2^15, or 2^17 with blocked operators), in [16, N].

    Measured on a 2-core Xeon (2 MiB L2 per core; ``benchmarks/RESULTS.md``): 1024 neurons at
    T = 32 (dense), 1024 at T = 64 and 128 and 256 at T = 512 (blocked) were the best widths.
    """
    if elements is None:
        elements = TILE_ELEMENTS if structured_block(T) is None else TILE_ELEMENTS_BLOCKED
    return max(1, min(N, max(16, elements // max(T, 1))))


def structured_block(T: int):
    """Steps per diagonal block of the structured operators at T steps, or None for dense.

    ``B = 2^⌊log2 √(8T)⌋`` (16 at T = 64, 32 at T = 128 and 256, 64 at T = 512; about the
    ``B ≈ √(2T)`` that minimises ``T·B + 2T²/B``, rounded up for GEMM efficiency) when
    ``T >= 4B`` and B divides T; dense T×T GEMMs otherwise.
    """
    B = 2 ** math.floor(math.log2(math.sqrt(8 * T))) if T > 0 else 1
    return B if T >= 4 * B and T % B == 0 else None


def _flush_subnormal(M):
    """Entries below the smallest normal number set to 0 (``λ^{t−j}`` underflows from
    t − j ≈ 126 at λ = 0.5 in float32): subnormal arithmetic is ~10–100x slower on x86 and
    the dropped terms are below 1.2e-38 relative to the diagonal."""
    tiny = torch.finfo(M.dtype).tiny
    return torch.where(M.abs() < tiny, torch.zeros_like(M), M)


class _Operator:
    """A lower-triangular Toeplitz T×T operator: dense, or diagonal blocks plus low rank.

    For ``M[t, j] = c·λ^{t−j}`` off the diagonal blocks (Λ: c = 1; A = c(Λ − I): c = 1 for
    spikingjelly, 1/λ for snntorch), the part below the diagonal blocks factors as
    ``λ^{t−j} = λ^{t−t_b}·λ^{t_b−j}`` (``t_b`` the first step of t's block), i.e. ``U V`` with
    ``U[t, b] = c·λ^{t−t_b}`` (t in block b) and ``V[b, j] = λ^{t_b−j}`` (j < t_b): one
    B×B block GEMM plus two rank-(T/B) GEMMs, ``T·B + 2T²/B`` multiply-adds per neuron
    instead of T² (the same split as the chunked kernel's carries, written as matrices).
    """

    def __init__(self, M, lam=None, c=1.0, block=None):
        self.M = M
        self.block = block
        if block is not None:
            T, B = M.shape[0], block
            nb = T // B
            self.Mb = M[:B, :B].contiguous().expand(nb, B, B)
            t = torch.arange(T, dtype=torch.float64)
            start = (t // B) * B  # first step of each step's block
            blocks = torch.arange(nb, dtype=torch.float64) * B
            U = torch.where(
                start[:, None] == blocks[None, :], lam ** (t[:, None] - start[:, None]), 0.0
            )
            V = torch.where(
                t[None, :] < blocks[:, None], lam ** (blocks[:, None] - t[None, :]), 0.0
            )
            self.U = _flush_subnormal((c * U).to(M.dtype).to(M.device))
            self.V = _flush_subnormal(V.to(M.dtype).to(M.device))

    def scaled(self, a):
        """The operator times a scalar."""
        op = _Operator.__new__(_Operator)
        op.M, op.block = self.M * a, self.block
        if self.block is not None:
            op.Mb, op.U, op.V = self.Mb * a, self.U * a, self.V
        return op

    def t(self):
        """The transposed operator (upper-triangular; same structure)."""
        op = _Operator.__new__(_Operator)
        op.M, op.block = self.M.t().contiguous(), self.block
        if self.block is not None:
            op.Mb = self.Mb[0].t().contiguous().expand_as(self.Mb)
            op.U, op.V = self.V.t().contiguous(), self.U.t().contiguous()
        return op

    def apply(self, v, out, inp=None, beta=0.0, alpha=1.0):
        """``out = beta·inp + alpha·(M v)`` (``inp=None``: ``M v``; alpha must be 1 then).

        `v` and `out` are contiguous [T, m] tensors.
        """
        if self.block is None:
            if inp is None:
                return torch.mm(self.M, v, out=out)
            return torch.addmm(inp, self.M, v, beta=beta, alpha=alpha, out=out)
        T, m = v.shape
        shape = (T // self.block, self.block, m)
        v3, o3 = v.view(shape), out.view(shape)
        if inp is None:
            torch.bmm(self.Mb, v3, out=o3)
        else:
            torch.baddbmm(inp.view(shape), self.Mb, v3, beta=beta, alpha=alpha, out=o3)
        return out.addmm_(self.U, torch.mm(self.V, v), alpha=alpha)


@functools.lru_cache(maxsize=32)
def operators(T, tau, convention, dtype, device):
    """Λ and A for one scalar τ as :class:`_Operator` s, built once per (T, τ, convention,
    dtype, device) and cached (read-only inputs of the fused kernel, never written to)."""
    L = _flush_subnormal(lambda_matrix(T, tau, dtype=dtype, device=device))
    R = _flush_subnormal(reset_matrix(T, tau, convention, dtype=dtype, device=device))
    lam = 1.0 - 1.0 / tau
    block = structured_block(T)
    c = 1.0 if convention == "spikingjelly" else 1.0 / lam
    return _Operator(L, lam, 1.0, block), _Operator(R, lam, c, block)


def _tiles(N, width):
    """``(n0, n1)`` column ranges of at most `width` neurons."""
    return [(n0, min(N, n0 + width)) for n0 in range(0, N, width)]


def _iterate(x_tile, L, R, theta, alphas, heaviside, strict, hs, s, mask, out=None):
    """K evaluations of one tile; returns nothing.

    Writes the scaled pre-activations ``h̃^k = α_k h^k`` into ``hs[k]`` and ``s^{K−1}`` into
    `out` (or `s`). The slope is folded into the GEMMs (``h̃^0 = α_0(Λx − θ)``,
    ``h̃^k = (α_k/α_0) h̃^0 − θα_k A s^{k−1}``), so each evaluation is one GEMM and one
    sigmoid pass. `L` holds ``α_0 Λ``.
    """
    if not x_tile.is_contiguous():  # a column slice: BLAS is ~3x slower on it than on a copy
        x_tile = s.copy_(x_tile)
    a0 = alphas[0]
    L.apply(x_tile, hs[0])
    hs[0].sub_(a0 * theta)
    K = len(alphas)
    for k, alpha in enumerate(alphas):
        if k:
            R.apply(s, hs[k], hs[0], beta=alpha / a0, alpha=-theta * alpha)
        target = out if (k == K - 1 and out is not None) else s
        if heaviside:  # α_k > 0 keeps the sign of h
            fired = torch.gt(hs[k], 0, out=mask) if strict else torch.ge(hs[k], 0, out=mask)
            target.copy_(fired)
        else:
            torch.sigmoid(hs[k], out=target)


class _FusedFPT(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, L, R, theta, alphas, slopes, heaviside, strict, width, recompute):
        T, N = x.shape
        K = len(alphas)
        L = L.scaled(alphas[0])
        out = torch.empty_like(x)
        keep = x.requires_grad and not recompute
        saved = []
        bufs: dict[int, tuple] = {}
        for n0, n1 in _tiles(N, width):
            m = n1 - n0
            if m not in bufs:  # contiguous tile buffers, reused by every tile of that width
                mask = torch.empty((T, m), dtype=torch.bool, device=x.device)
                bufs[m] = (x.new_empty((K, T, m)), x.new_empty((T, m)), mask)
            hs, s, mask = bufs[m]
            if keep:
                hs = x.new_empty((K, T, m))
                saved.append(hs)
            _iterate(
                x[:, n0:n1], L, R, theta, alphas, heaviside, strict, hs, s, mask, out[:, n0:n1]
            )
        ctx.save_for_backward(x if recompute else None)
        ctx.ops, ctx.saved_h = (L, R), saved
        ctx.args = (theta, alphas, slopes, heaviside, strict, width, recompute)
        return out

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        L, R = ctx.ops
        theta, alphas, slopes, heaviside, strict, width, recompute = ctx.args
        K, (T, N) = len(slopes), grad.shape
        grad_x = torch.empty((T, N), dtype=grad.dtype, device=grad.device)
        Lt = L.t().scaled(1.0 / alphas[0])  # Λᵀ (L holds α_0 Λ)
        Rt = R.t()
        bufs: dict[int, tuple] = {}
        for i, (n0, n1) in enumerate(_tiles(N, width)):
            m = n1 - n0
            if m not in bufs:
                mask = torch.empty((T, m), dtype=torch.bool, device=grad.device)
                bufs[m] = (
                    grad.new_empty((K, T, m)),
                    mask,
                    *(grad.new_empty((T, m)) for _ in range(4)),
                )
            hs, mask, gs, sig, gh, gC = bufs[m]
            if recompute:  # the forward again, in cache, instead of a round trip of K·T·N
                _iterate(x[:, n0:n1], L, R, theta, alphas, heaviside, strict, hs, sig, mask)
            else:
                hs = ctx.saved_h[i]
            torch.mul(grad[:, n0:n1], slopes[K - 1], out=gs)  # ∂L/∂s^{K−1} · α_b
            for k in range(K - 1, -1, -1):
                ratio = slopes[k] / alphas[k]  # σ(α_b h) = σ((α_b/α_k) h̃)
                if ratio == 1.0:
                    torch.sigmoid(hs[k], out=sig)
                else:
                    torch.mul(hs[k], ratio, out=sig).sigmoid_()
                # ∂L/∂h^k = (∂L/∂s^k · α_b) σ(α_b h)(1 − σ(α_b h)): torch's fused σ' kernel
                last = k == K - 1
                torch.ops.aten.sigmoid_backward.grad_input(gs, sig, grad_input=gC if last else gh)
                if not last:
                    gC.add_(gh)
                if k > 0:  # ∂L/∂s^{k−1} = −θ Aᵀ ∂L/∂h^k, pre-scaled by its slope
                    Rt.apply(gC if last else gh, gs, gs, beta=0.0, alpha=-theta * slopes[k - 1])
            if Lt.block is None:
                torch.mm(Lt.M, gC, out=grad_x[:, n0:n1])
            else:
                grad_x[:, n0:n1] = Lt.apply(gC, gs)
        return grad_x, None, None, None, None, None, None, None, None, None


def fpt_fused(
    x,
    L,
    R,
    theta,
    alphas,
    *,
    heaviside=False,
    strict=False,
    surrogate="official",
    width=None,
    recompute=False,
):
    """K evaluations with one scalar λ (in `L`, `R`) and θ; returns ``s^{K−1}``.

    Parameters
    ----------
    x : Tensor, shape [T, N], float32 | float64
        The drive (input currents).
    L, R : _Operator
        Λ and the reset matrix A, from :func:`operators` (dense, or blocks plus low rank).
    theta : float
        Threshold θ.
    alphas : sequence of K floats
        Forward slopes α_k (fixed: learnable slopes run ``dense``/``chunked``).
    heaviside, strict, surrogate
        As in :func:`fpt_snn.surrogate.spike`.
    width : int, optional
        Neurons per tile (default :func:`tile_width`).
    recompute : bool, default=False
        Recompute each tile's K pre-activations in the backward (keeps only `x`, saving K·T·N
        values of memory) instead of storing them; measured ~25 % slower on CPU.

    Returns
    -------
    Tensor, shape [T, N], dtype of `x`
        Equal to :func:`fpt_snn.kernels.fpt_dense.fpt_dense` with ``bias = −θ`` (forward and
        gradient, up to float rounding of the GEMM blocking).
    """
    T, N = x.shape
    width = tile_width(T, N) if width is None else max(1, min(int(width), N))
    alphas = tuple(float(a) for a in alphas)
    slopes = tuple(backward_slope(a, surrogate) for a in alphas)
    return _FusedFPT.apply(
        x, L, R, float(theta), alphas, slopes, heaviside, strict, width, bool(recompute)
    )  # fmt: skip
