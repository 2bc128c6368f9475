"""Kernels: the RNN-T lattice and expected monotonic attention, each a plain PyTorch reference
and a Triton twin (``[triton]`` extra, imported only when chosen)."""

import importlib.util

import torch

from .lattice_torch import lattice_torch

__all__ = ["resolve_backend", "run_lattice", "triton_available"]


def triton_available() -> bool:
    """Whether the ``triton`` package can be imported (it is the ``[triton]`` extra)."""
    return importlib.util.find_spec("triton") is not None


def resolve_backend(backend: str, device: torch.device) -> str:
    """``"auto"`` -> ``"triton"`` for CUDA tensors when triton is installed, else ``"torch"``.

    Raises
    ------
    ImportError
        If ``"triton"`` is asked for and triton is not installed.
    """
    if backend == "auto":
        return "triton" if device.type == "cuda" and triton_available() else "torch"
    if backend == "triton" and not triton_available():
        raise ImportError("backend='triton' needs: pip install 'monoattn-transducer[triton]'")
    return backend


def run_lattice(
    blank_lp: torch.Tensor,
    emit_lp: torch.Tensor,
    t_len: torch.Tensor,
    u_len: torch.Tensor,
    backend: str,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Run the chosen lattice kernel: ``(log_z, alpha, beta, p_blank, p_emit)``."""
    if resolve_backend(backend, blank_lp.device) == "triton":
        from .lattice_triton import lattice_triton

        return lattice_triton(blank_lp, emit_lp, t_len, u_len)
    return lattice_torch(blank_lp, emit_lp, t_len, u_len)
