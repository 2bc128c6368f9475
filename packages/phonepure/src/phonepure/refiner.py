r"""Stage 2 of PhonePuRe: phoneme-guided score refinement (De-AntiFake section 4.2, built on
SGMSE+/StoRM).

The score network sees three complex channels, the state $x_t$, the stage-1 output $Y$ and the
real phoneme template $P$, stacked as six real channels; $s = -\mathrm{net}([x_t, Y, P], t)$.
Training minimises $E\,|s\,\mathrm{std}(t) + z|^2$ with $t \sim U(0.03, 1)$ (denoising score
matching, sgmse ``model.py``).
"""

from __future__ import annotations

import math
import warnings

import torch
from torch import nn

from .audio import N_FFT, check_wav, compress, decompress, istft, peak_normalise, stft
from .sampling import pc_sample
from .sde import OUVESDE

__all__ = ["ScoreUNet", "PhonemeGuidedRefiner", "to_real", "pad_frames"]

N_BINS = N_FFT // 2 + 1


def to_real(x: torch.Tensor) -> torch.Tensor:
    """Complex (B, C, F, N) -> real (B, 2C, F, N): [re_0, im_0, re_1, im_1, ...]."""
    return torch.view_as_real(x).permute(0, 1, 4, 2, 3).reshape(x.shape[0], -1, *x.shape[2:])


def pad_frames(x: torch.Tensor, multiple: int = 64) -> torch.Tensor:
    """Zero-pad the last axis to a multiple of `multiple` (sgmse ``pad_spec``)."""
    n = x.shape[-1]
    pad = (-n) % multiple
    return nn.functional.pad(x, (0, pad)) if pad else x


class _TimeEmbed(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.freqs: torch.Tensor
        self.register_buffer("freqs", torch.randn(dim // 2) * 16.0, persistent=True)
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        # Gaussian Fourier features of log-free t (NCSN++ "fourier" embedding)
        arg = 2 * math.pi * t[:, None] * self.freqs[None]
        return self.mlp(torch.cat([torch.sin(arg), torch.cos(arg)], dim=1))


class _ResBlock(nn.Module):
    def __init__(self, cin: int, cout: int, tdim: int):
        super().__init__()
        self.n1 = nn.GroupNorm(min(4, cin), cin)
        self.c1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.t = nn.Linear(tdim, cout)
        self.n2 = nn.GroupNorm(min(4, cout), cout)
        self.c2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        h = self.c1(nn.functional.silu(self.n1(x))) + self.t(e)[:, :, None, None]
        h = self.c2(nn.functional.silu(self.n2(h)))
        return (self.skip(x) + h) / math.sqrt(2.0)


class ScoreUNet(nn.Module):
    """A small NCSN++-like U-Net: residual blocks with GroupNorm, Fourier time embedding,
    stride-2 down / nearest up, skip concatenation.

    Parameters
    ----------
    in_channels : int, default=6
        Real input channels (3 complex: $x_t$, $Y$, $P$).
    base : int, default=32
        Width of the first level (doubles per level).
    levels : int, default=3
        Resolution levels.

    Raises
    ------
    ValueError
        If a size is < 1.
    """

    def __init__(self, in_channels: int = 6, base: int = 32, levels: int = 3):
        super().__init__()
        for name, v in (("in_channels", in_channels), ("base", base), ("levels", levels)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"`{name}` must be an int >= 1, got {v!r}")
        tdim = 4 * base
        self.embed = _TimeEmbed(tdim)
        self.inp = nn.Conv2d(in_channels, base, 3, padding=1)
        widths = [base * 2**i for i in range(levels)]
        self.down = nn.ModuleList()
        self.pool = nn.ModuleList()
        cin = base
        for i, w in enumerate(widths):
            self.down.append(_ResBlock(cin, w, tdim))
            cin = w
            if i < levels - 1:
                self.pool.append(nn.Conv2d(w, w, 3, stride=2, padding=1))
        self.mid = _ResBlock(cin, cin, tdim)
        self.up = nn.ModuleList()
        for w in reversed(widths):
            self.up.append(_ResBlock(cin + w, w, tdim))
            cin = w
        self.out = nn.Sequential(
            nn.GroupNorm(min(4, cin), cin), nn.SiLU(), nn.Conv2d(cin, 2, 3, padding=1)
        )
        last = self.out[-1]
        assert isinstance(last, nn.Conv2d)
        assert last.bias is not None
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Map (B, in_channels, F, N) real and t (B,) to a complex (B, 1, F, N) output.

        Parameters
        ----------
        x : torch.Tensor of shape (B, in_channels, F, N), float32
            F and N divisible by ``2 ** (levels - 1)``.
        t : torch.Tensor of shape (B,), float32
            Diffusion times.

        Returns
        -------
        torch.Tensor of shape (B, 1, F, N), complex64.
        """
        e = self.embed(t)
        h = self.inp(x)
        skips = []
        for i, block in enumerate(self.down):
            h = block(h, e)
            skips.append(h)
            if i < len(self.pool):
                h = self.pool[i](h)
        h = self.mid(h, e)
        for block in self.up:
            s = skips.pop()
            if h.shape[-2:] != s.shape[-2:]:
                h = nn.functional.interpolate(h, size=s.shape[-2:], mode="nearest")
            h = block(torch.cat([h, s], dim=1), e)
        o = self.out(h)
        return torch.complex(o[:, 0], o[:, 1])[:, None]


def score_of(net: nn.Module, x: torch.Tensor, y: torch.Tensor, p: torch.Tensor, t: torch.Tensor):
    """$s = -\\mathrm{net}([x_t, Y, P], t)$ for complex (B, 1, F, N) inputs."""
    inp = to_real(torch.cat([x, y, p.to(x.dtype)], dim=1))
    return -net(inp, t)


class PhonemeGuidedRefiner(nn.Module):
    r"""Refine a stage-1 output with the phoneme-conditioned score model (PC sampler).

    $y \leftarrow y/\max|y|$, $Y = c(\mathrm{STFT}(y))$, frames padded to a multiple of 64,
    reverse OUVE sampling with score $-\mathrm{net}([x_t, Y, P], t)$, inverse STFT,
    output $\times \max|y|$.

    Parameters
    ----------
    score_model : torch.nn.Module
        E.g. :class:`ScoreUNet` (input 6 real channels).
    sde : OUVESDE, optional
        Defaults to ``OUVESDE()``.
    N : int, default=30
        Reverse steps (sgmse default 30).
    snr : float, default=0.4
        Corrector SNR (sgmse default 0.4).
    eps : float, default=0.03
        Final time.

    Raises
    ------
    ValueError
        If `N` < 1 or `snr` <= 0.
    """

    def __init__(
        self,
        score_model: nn.Module,
        sde: OUVESDE | None = None,
        N: int = 30,
        snr: float = 0.4,
        eps: float = 0.03,
    ):
        super().__init__()
        if isinstance(N, bool) or not isinstance(N, int) or N < 1:
            raise ValueError(f"`N` must be an int >= 1, got {N!r}")
        if not snr > 0:
            raise ValueError(f"`snr` must be > 0, got {snr!r}")
        self.score_model = score_model
        self.sde = sde if sde is not None else OUVESDE()
        self.N = N
        self.snr = snr
        self.eps = eps

    def forward(
        self,
        wav: torch.Tensor,
        template: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Refine `wav` (16 kHz) guided by `template`.

        Parameters
        ----------
        wav : torch.Tensor of shape (T,), (1, T) or (B, 1, T), float
            Stage-1 output at 16 kHz.
        template : torch.Tensor of shape (256, N) or (B, 256, N), float, optional
            Rendered phoneme template (compressed magnitudes), N = 1 + T // 128; zeros if None.
        generator : torch.Generator, optional
            Source of the sampler's draws.

        Returns
        -------
        torch.Tensor, same shape as `wav`, float32.

        Raises
        ------
        ValueError
            On a bad shape, NaN/inf, empty input or a template without 256 bins.
        """
        wav = check_wav(wav)
        shape = wav.shape
        x = wav.reshape(-1, shape[-1]).float()
        B, T = x.shape
        y, peak = peak_normalise(x)
        Y = compress(stft(y))[:, None]  # (B,1,256,N)
        n = Y.shape[-1]
        if template is None:
            P = torch.zeros(B, 1, N_BINS, n)
        else:
            if not isinstance(template, torch.Tensor):
                raise TypeError("`template` must be a torch.Tensor")
            if template.ndim not in (2, 3) or template.shape[-2] != N_BINS:
                raise ValueError(
                    f"`template` must have shape ({N_BINS}, N) or (B, {N_BINS}, N); "
                    f"got {tuple(template.shape)}"
                )
            if not bool(torch.isfinite(template).all()):
                raise ValueError("`template` contains NaN or inf")
            P = template.float().reshape(-1, 1, N_BINS, template.shape[-1]).expand(B, -1, -1, -1)
            if P.shape[-1] != n:
                warnings.warn(
                    f"`template` has {P.shape[-1]} frames, the STFT {n}: cropped/padded",
                    stacklevel=2,
                )
                P = nn.functional.pad(P, (0, max(0, n - P.shape[-1])))[..., :n]
        Yp = pad_frames(Y)
        Pp = pad_frames(P).to(Yp.device)

        def score_fn(xt: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            return score_of(self.score_model, xt, Yp, Pp, t)

        with torch.no_grad():
            X = pc_sample(
                score_fn, Yp, self.sde, N=self.N, snr=self.snr, eps=self.eps, generator=generator
            )
        out = istft(decompress(X[:, 0, :, :n]), T) * peak
        return out.reshape(shape).float()
