"""Map makers to compare ``FINOLA`` with at equal encoder, decoder and bottleneck (spec §2):
each turns q (N, C) into a feature map for the same decoder.

``Broadcast`` copies q to every position (no positional information at all), ``ReshapeAE``
reshapes q to (C / (h w), h, w) (positions from the encoder's layout), ``PosEmb`` adds a learned
(C, h, w) positional embedding to the broadcast q.
"""

from __future__ import annotations

import numbers

import torch
from torch import nn

from icml25_core import check_scalar

from .functional import check_grid, check_q

__all__ = ["Broadcast", "PosEmb", "ReshapeAE"]


class _MapMaker(nn.Module):
    def __init__(self, channels: int, grid):
        super().__init__()
        check_scalar(channels, "channels", kind=numbers.Integral, low=1)
        (h, w), _ = check_grid(grid)
        self.channels, self.grid = int(channels), (h, w)

    def _q(self, q: torch.Tensor) -> torch.Tensor:
        check_q(q, self.channels)
        if q.ndim != 2:
            raise ValueError(f"`q` must have shape (N, {self.channels}), got {tuple(q.shape)}")
        return q

    def extra_repr(self) -> str:
        return f"channels={self.channels}, grid={self.grid}"


class Broadcast(_MapMaker):
    """q (N, C) → (N, C, h, w), the same vector at every position.

    Parameters
    ----------
    channels : int
    grid : int or (int, int)
    """

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        """The map (N, C, h, w) of q (N, C); ValueError for a q of another shape."""
        q = self._q(q)
        return q[:, :, None, None].expand(-1, -1, *self.grid).contiguous()


class ReshapeAE(_MapMaker):
    """q (N, C) → (N, C / (h w), h, w) by a reshape; the decoder's input has C / (h w) channels.

    Parameters
    ----------
    channels : int
        C, a multiple of h·w.
    grid : int or (int, int)

    Raises
    ------
    ValueError
        If C is not a multiple of h·w.
    """

    def __init__(self, channels: int, grid):
        super().__init__(channels, grid)
        cells = self.grid[0] * self.grid[1]
        if self.channels % cells:
            raise ValueError(f"`channels` {channels} must be a multiple of h * w = {cells}")
        self.out_channels = self.channels // cells

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        """The map (N, C / (h w), h, w) of q (N, C)."""
        q = self._q(q)
        return q.reshape(q.shape[0], self.out_channels, *self.grid)


class PosEmb(_MapMaker):
    """q (N, C) → q broadcast + a learned positional embedding (C, h, w) (init N(0, 0.02²)).

    Parameters
    ----------
    channels : int
    grid : int or (int, int)
    """

    def __init__(self, channels: int, grid):
        super().__init__(channels, grid)
        self.embedding = nn.Parameter(0.02 * torch.randn(self.channels, *self.grid))

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        """The map (N, C, h, w) of q (N, C)."""
        q = self._q(q)
        return q[:, :, None, None] + self.embedding.to(q.dtype)
