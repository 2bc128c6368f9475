r"""Encoder-decoders with ReFrame cache points: the demo U-Net, a U-Net++, a two-branch net.

Axis letters: N batch, C channels, H height, W width (H and W divisible by $2^{L-1}$, L levels).

Sources: official ``samples/unet/unet.py`` (U-Net topology and cache point ``up1``); Zhou et al.,
"UNet++: A Nested U-Net Architecture", DLMIA 2018, Fig. 1 (nested nodes $X^{i,j}$); ReFrame
Sec. 3 / spec §2 (U-Net++: cache the up-sampled inputs of the top-row nodes; FBSR-like
multi-branch: cache the slow branch, always run the fast branch and the fusion).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from icml25_core import check_scalar

__all__ = ["UNet", "UNetPP", "TwoBranch", "DoubleConv"]


class DoubleConv(nn.Sequential):
    """(3×3 conv, padding 1, + ReLU) × 2, the demo's block (official ``samples/unet/unet.py``).

    Parameters
    ----------
    in_ch, out_ch : int
        Input and output channels.
    """

    def __init__(self, in_ch: int, out_ch: int):
        super().__init__(
            nn.Conv2d(in_ch, out_ch, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(out_ch, out_ch, 3, padding=1),
            nn.ReLU(inplace=True),
        )


def _check_widths(widths, name: str = "widths", levels: int = 4) -> tuple[int, ...]:
    if not isinstance(widths, Sequence) or len(widths) != levels:
        raise ValueError(f"`{name}` must be a sequence of {levels} ints, got {widths!r}")
    for w in widths:
        check_scalar(w, name, kind=int, low=1)
    return tuple(int(w) for w in widths)


@torch.fx.wrap
def _check_input(x: torch.Tensor, in_ch: int) -> None:
    """Shape check of the U-Nets' input (a leaf call for torch.fx, so graphs keep it)."""
    if x.ndim != 4 or x.shape[1] != in_ch or x.shape[-1] % 8 or x.shape[-2] % 8:
        raise ValueError(
            f"`x` must be [N, {in_ch}, H, W] with H and W divisible by 8, got {tuple(x.shape)}"
        )


class UNet(nn.Module):
    r"""The official demo U-Net: three poolings, a bottleneck, three transposed-conv up steps.

    ``down1..3`` are :class:`DoubleConv` (each but the first after ``MaxPool2d(2)``),
    ``bottleneck`` a DoubleConv, ``up3..1`` ``ConvTranspose2d(k=2, stride=2)`` each followed by
    ``cat([up, skip])`` and a DoubleConv ``up_conv3..1``, then a 1×1 ``out_conv``.
    With ``residual=True`` the input is added to the output (in_ch must equal out_ch).

    Parameters
    ----------
    in_ch, out_ch : int
        Channels of the input and the output.
    widths : tuple of 4 int, default=(64, 128, 256, 512)
        Channels of down1, down2, down3 and the bottleneck (the demo's values).
    residual : bool, default=False
        Predict a residual on the input (chosen here for ×2 super-resolution).

    Attributes
    ----------
    cache_points : tuple of str
        ``("up1",)``: the demo caches ``u1 = up1(u2)`` before its concatenation with the top
        skip; a hit runs only ``down1``, ``cat``, ``up_conv1``, ``out_conv``.

    Notes
    -----
    Source: official ``samples/unet/unet.py`` (``UNet``, ``DoubleConv``).

    Examples
    --------
    >>> import torch
    >>> UNet(3, 3, widths=(4, 8, 8, 8))(torch.zeros(1, 3, 16, 16)).shape
    torch.Size([1, 3, 16, 16])
    """

    cache_points = ("up1",)

    def __init__(
        self,
        in_ch: int,
        out_ch: int,
        widths: Sequence[int] = (64, 128, 256, 512),
        residual: bool = False,
    ):
        super().__init__()
        check_scalar(in_ch, "in_ch", kind=int, low=1)
        check_scalar(out_ch, "out_ch", kind=int, low=1)
        w1, w2, w3, w4 = _check_widths(widths)
        if residual and in_ch != out_ch:
            raise ValueError(f"`residual` needs in_ch == out_ch, got {in_ch} and {out_ch}")
        self.in_ch = int(in_ch)
        self.residual = bool(residual)
        self.down1 = DoubleConv(in_ch, w1)
        self.pool1 = nn.MaxPool2d(2)
        self.down2 = DoubleConv(w1, w2)
        self.pool2 = nn.MaxPool2d(2)
        self.down3 = DoubleConv(w2, w3)
        self.pool3 = nn.MaxPool2d(2)
        self.bottleneck = DoubleConv(w3, w4)
        self.up3 = nn.ConvTranspose2d(w4, w3, kernel_size=2, stride=2)
        self.up_conv3 = DoubleConv(2 * w3, w3)
        self.up2 = nn.ConvTranspose2d(w3, w2, kernel_size=2, stride=2)
        self.up_conv2 = DoubleConv(2 * w2, w2)
        self.up1 = nn.ConvTranspose2d(w2, w1, kernel_size=2, stride=2)
        self.up_conv1 = DoubleConv(2 * w1, w1)
        self.out_conv = nn.Conv2d(w1, out_ch, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: [N, in_ch, H, W] (H, W divisible by 8) -> [N, out_ch, H, W]."""
        _check_input(x, self.in_ch)
        d1 = self.down1(x)
        d2 = self.down2(self.pool1(d1))
        d3 = self.down3(self.pool2(d2))
        bn = self.bottleneck(self.pool3(d3))
        u3 = self.up_conv3(torch.cat([self.up3(bn), d3], dim=1))
        u2 = self.up_conv2(torch.cat([self.up2(u3), d2], dim=1))
        u1 = self.up1(u2)
        u1 = self.up_conv1(torch.cat([u1, d1], dim=1))
        out = self.out_conv(u1)
        return out + x if self.residual else out


class UNetPP(nn.Module):
    r"""U-Net++ with four levels: nodes $X^{i,j}$, $i$ the depth, $j$ the column.

    $X^{i,0} = \mathrm{DoubleConv}(\mathrm{pool}(X^{i-1,0}))$ (``x0_0`` on the input) and
    $X^{i,j} = \mathrm{DoubleConv}([X^{i,0}, \dots, X^{i,j-1}, \mathrm{up}(X^{i+1,j-1})])$,
    output a 1×1 conv of $X^{0,3}$.

    Parameters
    ----------
    in_ch, out_ch : int
        Channels of the input and the output.
    widths : tuple of 4 int, default=(32, 64, 128, 256)
        Channels of depths 0..3.

    Attributes
    ----------
    cache_points : tuple of str
        ``("up.0_1", "up.0_2", "up.0_3")``: the up-sampled inputs of the top-row nodes
        $X^{0,j}$; a hit recomputes $X^{0,0}$ and the top row only (spec §2).

    Notes
    -----
    Source: Zhou et al., UNet++ (DLMIA 2018), Fig. 1a; cache points per ReFrame spec §2.
    """

    cache_points = ("up.0_1", "up.0_2", "up.0_3")

    def __init__(self, in_ch: int, out_ch: int, widths: Sequence[int] = (32, 64, 128, 256)):
        super().__init__()
        check_scalar(in_ch, "in_ch", kind=int, low=1)
        check_scalar(out_ch, "out_ch", kind=int, low=1)
        w = _check_widths(widths)
        self.in_ch = int(in_ch)
        self.pool = nn.MaxPool2d(2)
        self.node = nn.ModuleDict()
        self.up = nn.ModuleDict()
        for i in range(4):
            self.node[f"{i}_0"] = DoubleConv(in_ch if i == 0 else w[i - 1], w[i])
        for j in range(1, 4):
            for i in range(0, 4 - j):
                self.up[f"{i}_{j}"] = nn.ConvTranspose2d(w[i + 1], w[i], kernel_size=2, stride=2)
                self.node[f"{i}_{j}"] = DoubleConv(w[i] * (j + 1), w[i])
        self.out_conv = nn.Conv2d(w[0], out_ch, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: [N, in_ch, H, W] (H, W divisible by 8) -> [N, out_ch, H, W]."""
        _check_input(x, self.in_ch)
        X: dict[tuple[int, int], torch.Tensor] = {(0, 0): self.node["0_0"](x)}
        for i in range(1, 4):
            X[(i, 0)] = self.node[f"{i}_0"](self.pool(X[(i - 1, 0)]))
        for j in range(1, 4):
            for i in range(0, 4 - j):
                ups = self.up[f"{i}_{j}"](X[(i + 1, j - 1)])
                X[(i, j)] = self.node[f"{i}_{j}"](
                    torch.cat([*(X[(i, k)] for k in range(j)), ups], 1)
                )
        return self.out_conv(X[(0, 3)])


class TwoBranch(nn.Module):
    r"""Multi-branch net (FBSR-like): a slow branch on auxiliary buffers, a fast branch on the
    frame, and a fusion: ``fuse(cat([fast(x), slow(aux)], 1))``.

    Parameters
    ----------
    slow : nn.Module
        The expensive branch (G-buffer / temporal features), the cache point ``"slow"``.
    fast : nn.Module
        The branch on the current (low-resolution) frame; always runs.
    fuse : nn.Module
        The fusion of both; always runs.

    Attributes
    ----------
    cache_points : tuple of str
        ``("slow",)``.

    Notes
    -----
    Source: ReFrame spec §2 (FBSR: cache the G-buffer and temporal branches; the LR branch and
    the fusion always run).
    """

    cache_points = ("slow",)

    def __init__(self, slow: nn.Module, fast: nn.Module, fuse: nn.Module):
        super().__init__()
        for name, m in (("slow", slow), ("fast", fast), ("fuse", fuse)):
            if not isinstance(m, nn.Module):
                raise TypeError(f"`{name}` must be an nn.Module, got {type(m).__name__}")
        self.slow, self.fast, self.fuse = slow, fast, fuse

    def forward(self, x: torch.Tensor, aux: torch.Tensor) -> torch.Tensor:
        """x: the frame; aux: the auxiliary buffers (same spatial size as fast(x) needs)."""
        return self.fuse(torch.cat([self.fast(x), self.slow(aux)], dim=1))
