r"""Fourier features of coordinates (GLIGEN's layout, as in diffusers).

Source: GLIGEN (Li et al., CVPR 2023) as implemented by diffusers'
``get_fourier_embeds_from_boundingbox``; UniMC (Guo et al., ICML 2025) encodes box and keypoint
coordinates as Fourier features (abstract / project page); the exact frequencies are ours.
"""

from __future__ import annotations

import torch

__all__ = ["fourier_embed"]


def fourier_embed(x: torch.Tensor, num_freqs: int = 8, temperature: float = 100.0) -> torch.Tensor:
    r"""Encode each coordinate with sines and cosines of geometric frequencies.

    $$
    \phi(x)_{k,s,j} = s\big(\tau^{k/F} x_j\big),\quad s \in (\sin, \cos),\ k = 0..F-1,
    $$

    laid out ``[F][sin, cos][coordinate]`` and flattened (GLIGEN's order).

    Parameters
    ----------
    x : Tensor, shape [..., n], floating
        Coordinates, normally in [0, 1] (boxes xyxy: n = 4; keypoints xy: n = 2).
    num_freqs : int, default=8
        F, the number of frequencies (GLIGEN: 8).
    temperature : float, default=100.0
        $\tau$, the frequency base (GLIGEN: 100).

    Returns
    -------
    Tensor, shape [..., n * 2 * F], dtype of `x`

    Raises
    ------
    TypeError
        If `x` is not a floating tensor.
    ValueError
        If `x` has no last axis, holds NaN/inf, or `num_freqs` < 1 or `temperature` <= 0.

    Examples
    --------
    >>> fourier_embed(torch.zeros(2, 4)).shape
    torch.Size([2, 64])
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError("`x` must be a floating torch.Tensor")
    if x.ndim == 0:
        raise ValueError("`x` must have a last (coordinate) axis")
    if not torch.isfinite(x).all():
        raise ValueError("`x` contains NaN or inf")
    if isinstance(num_freqs, bool) or not isinstance(num_freqs, int) or num_freqs < 1:
        raise ValueError(f"`num_freqs` must be an int >= 1; got {num_freqs!r}")
    if not (temperature > 0):
        raise ValueError(f"`temperature` must be > 0; got {temperature!r}")
    # float32 frequencies as diffusers computes them (bit-for-bit parity), float64 for float64 x
    fdt = torch.float64 if x.dtype == torch.float64 else torch.float32
    freqs = temperature ** (torch.arange(num_freqs, device=x.device, dtype=fdt) / num_freqs)
    freqs = freqs.to(dtype=x.dtype)
    emb = x.unsqueeze(-2) * freqs.unsqueeze(-1)  # [..., F, n]
    emb = torch.stack((emb.sin(), emb.cos()), dim=-2)  # [..., F, 2, n]
    return emb.flatten(-3)
