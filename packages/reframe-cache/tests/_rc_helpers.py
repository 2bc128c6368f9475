"""Small models and sequences shared by the tests."""

import torch
from reframe_cache import UNet
from torch import nn


def tiny_unet(seed: int = 0, widths=(4, 8, 8, 8), residual: bool = False) -> UNet:
    torch.manual_seed(seed)
    return UNet(3, 3, widths=widths, residual=residual).eval()


def frames(T: int, size=(16, 16), seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(T, 3, *size, generator=g)


def hand_unet_flops(widths, in_ch, out_ch, H, W):
    """Hand count (full, hit): 2*Cin*Cout*k^2*H*W on the output grid; ConvTranspose on its
    input grid; pooling, ReLU, cat and the residual add are not FLOPs for FlopCounterMode."""
    a, b, c, d = widths
    conv = lambda ci, co, k, h, w: 2 * ci * co * k * k * h * w  # noqa: E731
    dbl = lambda ci, co, h, w: conv(ci, co, 3, h, w) + conv(co, co, 3, h, w)  # noqa: E731
    top = dbl(in_ch, a, H, W) + dbl(2 * a, a, H, W) + conv(a, out_ch, 1, H, W)
    deep = (
        dbl(a, b, H // 2, W // 2)
        + dbl(b, c, H // 4, W // 4)
        + dbl(c, d, H // 8, W // 8)
        + conv(d, c, 2, H // 8, W // 8)
        + dbl(2 * c, c, H // 4, W // 4)
        + conv(c, b, 2, H // 4, W // 4)
        + dbl(2 * b, b, H // 2, W // 2)
        + conv(b, a, 2, H // 2, W // 2)
    )
    return top + deep, top


class Driven(nn.Module):
    """Output = the second input exactly (deep(x) * 0 + y): lets a test choose every output."""

    def __init__(self):
        super().__init__()
        self.deep = nn.Conv2d(1, 1, 1)

    def forward(self, x, y):
        return self.deep(x) * 0 + y
