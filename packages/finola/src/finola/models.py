"""The FINOLA autoencoder: a CNN encoder to one vector q, a map maker (``FINOLA`` or a baseline
of :mod:`finola.baselines`) from q to a feature map, and a convolutional decoder to pixels.

Architecture [our reconstruction; the paper's: "a CNN encoder to one vector; decoder =
upsampling + convs, only three 3×3 convs when the map has image resolution" (spec §2)]:
encoder = stride-2 3×3 convs 3→32→64→128 with GELU, adaptive average pool to 4×4, linear to
M·C; ``UpConvDecoder`` = 3×3 conv C→64 + GELU, then per ×2 nearest upsampling a 3×3 conv + GELU
(64→32, then 32→32), a final 3×3 conv to 3 channels; ``Conv3Decoder`` = three 3×3 convs
(C→64→64→3, GELU between) for maps at image resolution.
"""

from __future__ import annotations

import itertools
import numbers

import torch
from torch import nn

from icml25_core import check_choice, check_scalar

__all__ = [
    "MAP_MAKERS",
    "Conv3Decoder",
    "FinolaAutoencoder",
    "SmallConvEncoder",
    "UpConvDecoder",
    "build_autoencoder",
]

#: The map makers ``build_autoencoder`` knows: FINOLA and the baselines of spec §2.
MAP_MAKERS = ("finola", "broadcast", "reshape", "posemb")


def _check_images(x, name: str = "x") -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim != 4 or x.shape[1] != 3 or x.numel() == 0:
        raise ValueError(f"`{name}` must be non-empty images (N, 3, H, W), got {tuple(x.shape)}")
    if not x.is_floating_point():
        raise ValueError(f"`{name}` must be floating point, got {x.dtype}")


class SmallConvEncoder(nn.Module):
    """Images (N, 3, H, W) in [0, 1] → q (N, out_features): three stride-2 3×3 convs
    (3→32→64→128, GELU), adaptive average pool to 4×4, linear.

    Parameters
    ----------
    out_features : int
        M·C: the bottleneck size.
    """

    def __init__(self, out_features: int):
        super().__init__()
        check_scalar(out_features, "out_features", kind=numbers.Integral, low=1)
        widths = (3, 32, 64, 128)
        layers: list[nn.Module] = []
        for c_in, c_out in itertools.pairwise(widths):
            layers += [nn.Conv2d(c_in, c_out, 3, stride=2, padding=1), nn.GELU()]
        self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(4), nn.Flatten())
        self.head = nn.Linear(128 * 16, int(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """q (N, out_features) of images x (N, 3, H, W).

        Raises
        ------
        ValueError
            If x is not (N, 3, H, W) floating point.
        """
        _check_images(x)
        return self.head(self.features(x))


class UpConvDecoder(nn.Module):
    """Map (N, C, h, w) → images (N, 3, h·2^k, w·2^k): 3×3 conv C→64 + GELU, then k times
    ×2 nearest upsampling + 3×3 conv + GELU (64→32, then 32→32), a final 3×3 conv to 3.

    Parameters
    ----------
    in_channels : int
        C.
    upsamples : int
        k, the number of ×2 stages (patch size / grid size = 2^k).
    """

    def __init__(self, in_channels: int, upsamples: int):
        super().__init__()
        check_scalar(in_channels, "in_channels", kind=numbers.Integral, low=1)
        check_scalar(upsamples, "upsamples", kind=numbers.Integral, low=0)
        layers: list[nn.Module] = [nn.Conv2d(int(in_channels), 64, 3, padding=1), nn.GELU()]
        width = 64
        for _ in range(int(upsamples)):
            layers += [nn.Upsample(scale_factor=2, mode="nearest"),
                       nn.Conv2d(width, 32, 3, padding=1), nn.GELU()]  # fmt: skip
            width = 32
        layers.append(nn.Conv2d(width, 3, 3, padding=1))
        self.net = nn.Sequential(*layers)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """Images (N, 3, H, W) of the map z (N, C, h, w)."""
        return self.net(z)


class Conv3Decoder(nn.Module):
    """Map (N, C, H, W) at image resolution → images (N, 3, H, W): three 3×3 convs
    (C→64→64→3, GELU between).

    Parameters
    ----------
    in_channels : int
        C.
    """

    def __init__(self, in_channels: int):
        super().__init__()
        check_scalar(in_channels, "in_channels", kind=numbers.Integral, low=1)
        self.net = nn.Sequential(
            nn.Conv2d(int(in_channels), 64, 3, padding=1), nn.GELU(),
            nn.Conv2d(64, 64, 3, padding=1), nn.GELU(), nn.Conv2d(64, 3, 3, padding=1),
        )  # fmt: skip

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """Images (N, 3, H, W) of the map z (N, C, H, W)."""
        return self.net(z)


class FinolaAutoencoder(nn.Module):
    """x → q = encoder(x) → z = finola(q) → x̂ = decoder(z).

    Parameters
    ----------
    encoder : nn.Module
        Images (N, 3, H, W) → (N, M·C).
    finola : nn.Module
        q → map (N, C', h, w): a ``FINOLA`` layer (its ``paths`` M reshape q to (N, M, C)) or
        a baseline (``Broadcast``, ``ReshapeAE``, ``PosEmb``) with the same bottleneck.
    decoder : nn.Module
        Map → images (N, 3, H, W).

    Examples
    --------
    >>> from finola import FINOLA
    >>> ae = FinolaAutoencoder(SmallConvEncoder(64), FINOLA(64, 8), UpConvDecoder(64, 2))
    >>> ae(torch.rand(2, 3, 32, 32)).shape
    torch.Size([2, 3, 32, 32])
    """

    def __init__(self, encoder: nn.Module, finola: nn.Module, decoder: nn.Module):
        super().__init__()
        for module, name in ((encoder, "encoder"), (finola, "finola"), (decoder, "decoder")):
            if not isinstance(module, nn.Module):
                raise TypeError(f"`{name}` must be an nn.Module, got {type(module).__name__}")
        self.encoder, self.finola, self.decoder = encoder, finola, decoder

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """q (N, C), or (N, M, C) for a multi-path ``FINOLA``, of images x (N, 3, H, W)."""
        _check_images(x)
        q = self.encoder(x)
        paths = getattr(self.finola, "paths", 1)
        return q.reshape(q.shape[0], paths, -1) if paths > 1 else q

    def decode(self, q: torch.Tensor) -> torch.Tensor:
        """Images x̂ (N, 3, H, W) of q."""
        return self.decoder(self.finola(q))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The reconstruction x̂ (N, 3, H, W) of x (N, 3, H, W)."""
        return self.decode(self.encode(x))


def build_autoencoder(kind: str, channels: int, grid: int, patch: int) -> FinolaAutoencoder:
    """The autoencoder of spec §2 with map maker `kind` (one of ``MAP_MAKERS``): the same
    encoder, decoder and bottleneck C for every kind, only the map from q differs.

    Parameters
    ----------
    kind : {"finola", "broadcast", "reshape", "posemb"}
    channels : int
        C, the bottleneck.
    grid : int
        The map is grid × grid.
    patch : int
        Image side; patch / grid must be a power of two (the decoder's ×2 stages).

    Raises
    ------
    ValueError
        If `kind` is unknown or patch / grid is not a power of two >= 1.
    """
    from .baselines import Broadcast, PosEmb, ReshapeAE
    from .layers import FINOLA

    check_choice(kind, "kind", MAP_MAKERS)
    check_scalar(grid, "grid", kind=numbers.Integral, low=1)
    check_scalar(patch, "patch", kind=numbers.Integral, low=1)
    ratio = patch // grid
    if patch % grid or ratio & (ratio - 1):
        raise ValueError(f"`patch` / `grid` must be a power of two, got {patch} / {grid}")
    makers = {"finola": FINOLA, "broadcast": Broadcast, "reshape": ReshapeAE, "posemb": PosEmb}
    maker = makers[kind](channels, grid)
    in_channels = getattr(maker, "out_channels", channels)
    decoder = UpConvDecoder(in_channels, ratio.bit_length() - 1)
    return FinolaAutoencoder(SmallConvEncoder(channels), maker, decoder)
