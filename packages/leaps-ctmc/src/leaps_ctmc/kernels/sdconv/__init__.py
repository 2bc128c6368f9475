"""Hollow state-dependent circular convolution of the LEC network: validation and dispatch.

Three forms of the same maths (see ``naive.py`` for it and its source): ``naive`` (the readable
reference, gathers the [B, C, K, N] neighbourhood), ``loop`` (one offset at a time, [B, C, N]
memory) and ``factored`` (one matmul for all offsets, the state-independent part as a plain
gathered conv). By default (benchmarks/RESULTS.md) sampling and training run ``loop``, 2-4x
faster than ``factored`` forward and backward on the CPU; ``factored`` recomputes the Triton
kernel's backward. All are plain PyTorch, so autograd, DDP and ``torch.compile`` see ordinary
ops.
"""

import os

import torch

from icml25_core import check_tensor, select_backend

from .factored import factored_sdconv
from .loop import loop_sdconv
from .naive import naive_sdconv, offset_index

__all__ = ["sdconv", "offset_index"]

FORMS = {"naive": naive_sdconv, "loop": loop_sdconv, "factored": factored_sdconv}


class _TritonSDConv(torch.autograd.Function):
    """Forward: the Triton kernel; backward: recomputed through the factored PyTorch form."""

    @staticmethod
    def forward(ctx, h, e, A, b1, b2, m):
        from .triton import triton_sdconv  # imported on use: triton is an optional extra

        ctx.save_for_backward(h, e, A, b1, b2, m)
        return triton_sdconv(h, e, A, b1, b2, m)

    @staticmethod
    def backward(ctx, grad):
        inputs = [t.detach().requires_grad_(t.requires_grad) for t in ctx.saved_tensors]
        wanted = [t for t in inputs if t.requires_grad]
        with torch.enable_grad():
            out = factored_sdconv(*inputs)
            grads = iter(torch.autograd.grad(out, wanted, grad) if wanted else ())
        return tuple(next(grads) if t.requires_grad else None for t in inputs)


def sdconv(h, e, A, b1, b2, m, *, form=None):
    """Hollow state-dependent conv: out_i[c] = sum_{o != 0} W_i[c, o] e_{i+o}[c].

    Parameters
    ----------
    h : Tensor, float [B, C, rows, cols]
        Site-invariant features.
    e : Tensor, float [B, C or 1, rows, cols]
        Raw site encodings.
    A : Tensor, float [C, K, C]; b1, b2 : [C, K]; m : [B, K]
        Weight generator parameters and time embedding (K = k * k, k odd).
    form : {"naive", "loop", "factored", "triton"}, optional
        Force a form. Default: ``triton`` when ``icml25_core.select_backend()`` picks a Triton
        backend for CUDA tensors, or when ``ICML25_BACKEND=triton-interpret`` (with
        ``TRITON_INTERPRET=1`` set before triton is first imported); otherwise ``loop``. The
        environment variable ``LEAPS_SDCONV_FORM`` overrides the default.

    Returns
    -------
    Tensor, float [B, C, rows, cols]

    Raises
    ------
    ValueError
        Inconsistent shapes, an even kernel or an unknown form.
    """
    check_tensor(h, "h", ndim=4)
    B, C = h.shape[:2]
    check_tensor(e, "e", ndim=4, finite=False)
    if e.shape[0] != B or e.shape[1] not in (1, C) or e.shape[2:] != h.shape[2:]:
        raise ValueError(f"`e` must have shape [B, 1 or {C}, rows, cols], got {tuple(e.shape)}")
    K = A.shape[1]
    k = round(K**0.5)
    if A.shape != (C, K, C) or k * k != K or k % 2 == 0:
        raise ValueError(f"`A` must have shape [C, k*k, C] with odd k, got {tuple(A.shape)}")
    if b1.shape != (C, K) or b2.shape != (C, K):
        raise ValueError(f"`b1`, `b2` must have shape [{C}, {K}]")
    if m.shape != (B, K):
        raise ValueError(f"`m` must have shape [{B}, {K}], got {tuple(m.shape)}")
    if form is None:
        form = os.environ.get("LEAPS_SDCONV_FORM") or _default_form(h)
    if form == "triton":
        return _TritonSDConv.apply(h, e, A, b1, b2, m)
    if form not in FORMS:
        raise ValueError(f"`form` must be one of {', '.join(FORMS)}, 'triton'; got {form!r}")
    return FORMS[form](h, e, A, b1, b2, m)


def _default_form(h):
    backend = select_backend()
    interpret = os.environ.get("ICML25_BACKEND") == "triton-interpret"  # asked for, never picked
    if interpret or (backend == "triton" and h.is_cuda):
        return "triton"
    return "loop"  # fastest on the CPU, with and without gradients (benchmarks/RESULTS.md)
