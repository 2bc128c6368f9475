"""FPT kernels: dense reference, chunked PyTorch, fused Triton; one dispatcher.

``method="auto"`` takes Triton on a CUDA GPU (when τ and α need no gradient), else ``chunked``
for T > 64 and ``dense`` otherwise; the hard reset runs ``dense`` only (its operator depends
on the spikes: no chunked or Triton kernel), and a per-neuron τ or θ runs ``dense`` or
``chunked`` (the Triton kernel takes one τ and one θ).
``ICML25_BACKEND=torch|triton|triton-interpret`` overrides the choice between PyTorch and
Triton (see ``icml25_core.select_backend``).
"""

from __future__ import annotations

import os

from icml25_core import BACKEND_ENV, select_backend

from .fpt_chunked import BLOCK, fpt_chunked
from .fpt_dense import fpt_dense, fpt_dense_hard

METHODS = ("auto", "dense", "chunked", "triton")

__all__ = [
    "METHODS",
    "fpt_chunked",
    "fpt_dense",
    "fpt_dense_hard",
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
        If "chunked" or "triton" is asked for with the hard reset (dense only), or "triton"
        with a per-neuron τ or θ (dense or chunked only).
    """
    if hard_reset:
        if method in ("chunked", "triton"):
            raise ValueError(
                f"`method`={method!r} cannot run reset='hard' (its reset operator depends on "
                "the spikes; only the dense kernel has it): use method='auto' or 'dense'"
            )
        return "dense"
    if method == "triton" and per_neuron:
        raise ValueError(
            "`method`='triton' takes one scalar tau and v_threshold (the fused kernel has no "
            "per-neuron decay or threshold): use method='auto', 'chunked' or 'dense'"
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
    requested = os.environ.get(BACKEND_ENV)
    wants_triton = requested == "triton-interpret" or (requested == "triton" and on_cuda)
    scalar_only = not needs_param_grad and not per_neuron
    if wants_triton and scalar_only:
        select_backend()  # raises if the requested backend is missing
        return "triton"
    if requested != "torch" and on_cuda and scalar_only and triton_available():
        return "triton"
    return "chunked" if T > BLOCK else "dense"


def run_triton(*args, **kwargs):
    """Import the Triton kernel lazily (Triton is the optional ``[triton]`` extra)."""
    from .fpt_triton import fpt_triton

    return fpt_triton(*args, **kwargs)
