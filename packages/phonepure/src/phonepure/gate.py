r"""DiffWave's gated activation $\tanh(z_f + b_f)\odot\sigma(z_g + b_g)$, with a Triton-fused path.

Source: DiffWave (Kong et al. 2021, Fig. 2; philsyn/DiffWave-unconditional ``Residual_block``):
the dilated convolution maps C residual channels to 2C, the first C are the filter $z_f$, the
last C the gate $z_g$. The bias is the convolution's own (and, where a model adds one, a
per-example conditioning bias); adding it inside the gate lets the fused kernel read $z$ once
(spec section 6: "Triton fused gate (step bias + tanh·sigmoid) beside its reference").

The Triton kernel runs only when asked for (``ICML25_BACKEND=triton`` on CUDA tensors,
``ICML25_BACKEND=triton-interpret`` with ``TRITON_INTERPRET=1`` on CPU tensors) and when no
gradient is needed: its speed-up on a GPU is unmeasured (``benchmarks/RESULTS.md``), so the
PyTorch reference stays the default.
"""

from __future__ import annotations

import os

import torch

from icml25_core import BACKEND_ENV, select_backend

__all__ = ["gate_backend", "gated_activation", "gated_activation_reference"]


def _check(z: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    if not isinstance(z, torch.Tensor) or not z.is_floating_point():
        raise TypeError(f"`z` must be a floating-point torch.Tensor, got {type(z).__name__}")
    if z.ndim != 3 or z.shape[1] % 2:
        raise ValueError(
            f"`z` must have shape (B, 2C, L) with an even channel count, got {tuple(z.shape)}"
        )
    B, C2 = z.shape[:2]
    if bias is None:
        return torch.zeros(B, C2, dtype=z.dtype, device=z.device)
    if not isinstance(bias, torch.Tensor) or not bias.is_floating_point():
        got = f"dtype {bias.dtype}" if isinstance(bias, torch.Tensor) else type(bias).__name__
        raise TypeError(f"`bias` must be a floating-point torch.Tensor, got {got}")
    if bias.shape not in ((C2,), (B, C2)):
        raise ValueError(f"`bias` must have shape ({C2},) or ({B}, {C2}), got {tuple(bias.shape)}")
    return bias.to(z.dtype).expand(B, C2)


def gated_activation_reference(z: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """The gate in plain PyTorch (the reference the Triton kernel is tested against).

    Parameters
    ----------
    z : torch.Tensor of shape (B, 2C, L), float
        Dilated-convolution output without its bias; channels ``[:C]`` filter, ``[C:]`` gate.
    bias : torch.Tensor of shape (2C,) or (B, 2C), optional
        Added to `z` over time before the nonlinearities.

    Returns
    -------
    torch.Tensor of shape (B, C, L), dtype of `z`.

    Raises
    ------
    TypeError
        If `z` or `bias` is not a floating-point tensor.
    ValueError
        If `z` is not (B, 2C, L) or `bias` has another shape.
    """
    b = _check(z, bias)
    h = z + b[:, :, None]
    C = z.shape[1] // 2
    return torch.tanh(h[:, :C]) * torch.sigmoid(h[:, C:])


def gate_backend(z: torch.Tensor) -> str:
    """Which implementation :func:`gated_activation` runs for `z`: "torch" or a Triton backend.

    Triton only when ``$ICML25_BACKEND`` names it (``triton`` for CUDA tensors,
    ``triton-interpret`` for CPU tensors), else "torch".

    Raises
    ------
    ValueError
        If ``$ICML25_BACKEND`` is not a known backend name.
    RuntimeError
        If it names a Triton backend that is not available here (the message says what is missing).
    """
    if not os.environ.get(BACKEND_ENV):
        return "torch"
    backend = select_backend()
    if (backend == "triton" and z.is_cuda) or (backend == "triton-interpret" and not z.is_cuda):
        return backend
    return "torch"


def gated_activation(z: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """The gate, fused in Triton when :func:`phonepure.gate.gate_backend` says so, no gradient
    is needed (run under ``torch.no_grad()`` or ``torch.inference_mode()``) and `z` is not
    float64 (the kernel computes in float32).

    Parameters and returns as :func:`gated_activation_reference` (same errors, plus those of
    :func:`phonepure.gate.gate_backend`).
    """
    b = _check(z, bias)
    needs_grad = torch.is_grad_enabled() and (z.requires_grad or b.requires_grad)
    if needs_grad or z.dtype == torch.float64 or gate_backend(z) == "torch":
        return gated_activation_reference(z, bias)
    from .kernels.gate_triton import triton_gated_activation

    return triton_gated_activation(z, b)
