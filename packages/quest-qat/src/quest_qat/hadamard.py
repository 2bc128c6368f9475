"""Block Hadamard rotation (QuEST §3, "Hadamard normalization"; official
``HadamardTrustQuantizer``).

Each row is rotated by ``blockdiag(H_n, …, H_n)`` with ``H_n`` the Sylvester Hadamard matrix in
``scipy.linalg.hadamard`` order divided by ``sqrt(n)``, so the rotation is orthogonal
(``H Hᵀ = I``) and symmetric. It is applied as ``reshape(…, K/n, n) @ H_n``, never as a dense
``K×K`` matrix.
"""

import functools

import numpy as np
import scipy.linalg
import torch

from ._validation import check_block, check_float_tensor


@functools.lru_cache(maxsize=32)
def _hadamard_fp64(n: int) -> torch.Tensor:
    return torch.from_numpy(scipy.linalg.hadamard(n).astype(np.float64) / np.sqrt(n))


def hadamard_matrix(n, dtype=torch.float32, device=None) -> torch.Tensor:
    """The normalised Sylvester Hadamard matrix ``H_n / sqrt(n)``.

    Parameters
    ----------
    n : int
        Size, a power of 2.
    dtype : torch.dtype, default=torch.float32
        Built in float64 from ``scipy.linalg.hadamard``, then cast (the official code builds it
        in bf16, where ``H Hᵀ = 0.9998·I``).
    device : torch.device, optional

    Returns
    -------
    Tensor of shape (n, n)
        Symmetric and orthogonal: ``H Hᵀ = I``.

    Raises
    ------
    ValueError
        If `n` is not a power of 2 or exceeds 16384 (2 GiB in float64).
    """
    n = check_block(n, "n")
    # under torch.compile, call the uncached builder: Dynamo ignores lru_cache anyway and warns
    build = _hadamard_fp64.__wrapped__ if torch.compiler.is_compiling() else _hadamard_fp64
    return build(n).to(dtype=dtype, device=device)


def block_hadamard(x, block=128) -> torch.Tensor:
    """Rotate the last dimension of `x` by ``blockdiag(H_block, …)``.

    Parameters
    ----------
    x : Tensor of shape (..., K), floating
        Rows to rotate; K must be a multiple of `block`.
    block : int, default=128
        Hadamard block size, a power of 2 (QuEST uses 128).

    Returns
    -------
    Tensor of shape (..., K), same dtype
        ``x @ blockdiag(H, …)``; computed in float32 for half-precision input. The map is its own
        inverse and transpose, and differentiable.

    Raises
    ------
    TypeError
        If `x` is not a floating tensor.
    ValueError
        If `block` is not a power of 2 or K is not a multiple of it.
    """
    x = check_float_tensor(x, "x", finite=False)
    block = check_block(block)
    k = x.shape[-1]
    if k % block:
        raise ValueError(f"the last dimension of `x` (K={k}) must be a multiple of block={block}")
    return _rotate(x, block)


def _rotate(x: torch.Tensor, block: int) -> torch.Tensor:
    """Unchecked block rotation (internal hot path)."""
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    h = hadamard_matrix(block, compute, x.device)
    shape = x.shape
    y = x.to(compute).reshape(*shape[:-1], shape[-1] // block, block) @ h
    return y.reshape(shape).to(x.dtype)
