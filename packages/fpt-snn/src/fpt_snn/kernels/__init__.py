"""FPT kernels: dense reference, chunked PyTorch, fused CPU, fused Triton; one dispatcher.

``method="auto"`` takes Triton on a CUDA GPU (when τ, θ and α need no gradient); on the CPU
the ``fused`` kernel (one autograd node, neuron tiles in cache, block + low-rank operators
from T = 64; the fastest path at every shape measured in ``benchmarks/RESULTS.md``) when T
<= 128 or its blocks divide T, else ``chunked``; elsewhere ``chunked`` for T > 64 and
``dense`` otherwise. ``fused`` and Triton take one scalar τ and θ and fixed α; the hard reset
runs ``dense`` only (its operator depends on the spikes), and a per-neuron or learnable τ or
θ runs ``dense`` or ``chunked``.
``ICML25_BACKEND=torch|triton|triton-interpret`` overrides the choice between PyTorch and
Triton for ``method="auto"`` (see ``icml25_core.select_backend``): ``triton`` applies to CUDA
tensors (CPU tensors run the PyTorch kernels), and an unknown value raises ``ValueError``.
"""

from __future__ import annotations

import os

from icml25_core import BACKEND_ENV, BACKENDS, check_choice, select_backend

from .fpt_chunked import BLOCK, fpt_chunked
from .fpt_dense import fpt_dense, fpt_dense_hard
from .fpt_fused import fpt_fused, structured_block

METHODS = ("auto", "dense", "chunked", "fused", "triton")

__all__ = [
    "METHODS",
    "fpt_chunked",
    "fpt_dense",
    "fpt_dense_hard",
    "fpt_fused",
    "resolve_method",
    "triton_available",
]


def triton_available() -> bool:
    """True when the Triton kernel can run here (Triton on a GPU, or ``TRITON_INTERPRET=1``)."""
    try:
        backend = select_backend()
    except RuntimeError:
        return False
    if backend in ("triton", "triton-interpret"):
        return True
    try:
        select_backend(override="triton-interpret")
    except RuntimeError:
        return False
    return True


def resolve_method(
    method: str,
    T: int,
    *,
    on_cuda: bool,
    needs_param_grad: bool,
    hard_reset: bool = False,
    per_neuron: bool = False,
) -> str:
    """The kernel ``method`` runs: "dense", "chunked" or "triton".

    `needs_param_grad`: τ, θ or α need a gradient; `per_neuron`: τ or θ is not one scalar.

    Raises
    ------
    RuntimeError
        If "triton" is asked for where it cannot run; the message names the fallback.
    ValueError
        If "chunked", "fused" or "triton" is asked for with the hard reset (dense only), or
        "fused"/"triton" with a per-neuron τ or θ (dense or chunked only); with "auto", if
        ``$ICML25_BACKEND`` is set to a name that is not a backend.
    RuntimeError
        Also if "fused" is asked for with a learnable τ, θ or α.
    """
    requested = os.environ.get(BACKEND_ENV) or None
    if method == "auto" and requested is not None:  # a typo must not be ignored silently
        check_choice(requested, BACKEND_ENV, BACKENDS)
    if hard_reset:
        if method in ("chunked", "fused", "triton"):
            raise ValueError(
                f"`method`={method!r} cannot run reset='hard' (its reset operator depends on "
                "the spikes; only the dense kernel has it): use method='auto' or 'dense'"
            )
        return "dense"
    if method in ("triton", "fused") and per_neuron:
        raise ValueError(
            f"`method`={method!r} takes one scalar tau and v_threshold (the fused kernel has "
            "no per-neuron decay or threshold): use method='auto', 'chunked' or 'dense'"
        )
    if method == "fused" and needs_param_grad:
        raise RuntimeError(
            "method='fused' has no gradient for a learnable tau, v_threshold or alphas; fall "
            "back to method='chunked' (or 'dense')"
        )
    if method == "triton":
        if not triton_available():
            raise RuntimeError(
                "method='triton' needs Triton with a CUDA GPU (or TRITON_INTERPRET=1 for the "
                "interpreter); fall back to method='chunked' (or 'dense'), which runs anywhere"
            )
        if needs_param_grad:
            raise RuntimeError(
                "method='triton' has no gradient for a learnable tau, v_threshold or alphas; "
                "fall back to "
                "method='chunked' (or 'dense')"
            )
        return "triton"
    if method != "auto":
        return method
    wants_triton = requested == "triton-interpret" or (requested == "triton" and on_cuda)
    scalar_only = not needs_param_grad and not per_neuron
    if wants_triton and scalar_only:
        select_backend()  # raises if the requested backend is missing
        return "triton"
    if requested != "torch" and on_cuda and scalar_only and triton_available():
        return "triton"
    if not on_cuda and scalar_only and (T <= 128 or structured_block(T) is not None):
        return "fused"
    return "chunked" if T > BLOCK else "dense"


def run_triton(*args, **kwargs):
    """Import the Triton kernel lazily (Triton is the optional ``[triton]`` extra)."""
    from .fpt_triton import fpt_triton

    return fpt_triton(*args, **kwargs)
