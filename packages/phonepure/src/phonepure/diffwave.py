r"""Stage 1 of PhonePuRe: DiffWave DDPM purification (AudioPure / De-AntiFake stage 1).

Schedule (Ho et al. 2020; DiffWave-unconditional, philsyn): $T=200$,
$\beta = \mathrm{linspace}(10^{-4}, 0.02, T)$ in float64,
$\bar\alpha_t = \prod_{s\le t}(1-\beta_s)$,
$\tilde\beta_t = \beta_t (1-\bar\alpha_{t-1})/(1-\bar\alpha_t)$, $\sigma_t = \sqrt{\tilde\beta_t}$
(0-based arrays). Purification diffuses to $t^*$ and runs the reverse chain

$$ x \leftarrow \frac{1}{\sqrt{\alpha_t}}\Big(x - \frac{1-\alpha_t}{\sqrt{1-\bar\alpha_t}}
   \epsilon_\theta(x, t)\Big) + \sigma_t z, \qquad t = t^*-1, \dots, 0, $$

with no noise at $t = 0$ (De-AntiFake ``diffwave_ddpm.py``; spec section 2).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

from .audio import SR, check_wav, resample
from .gate import gated_activation

__all__ = ["DDPMSchedule", "DiffWave", "DiffWavePurifier", "step_embedding"]


class DDPMSchedule:
    r"""Linear DDPM schedule in float64 (DiffWave; spec section 2).

    Parameters
    ----------
    T : int, default=200
        Number of diffusion steps.
    beta : tuple of float, default=(1e-4, 0.02)
        First and last $\beta$ of ``numpy.linspace``.

    Attributes
    ----------
    beta, alpha, alpha_bar, beta_tilde, sigma : numpy.ndarray of shape (T,), float64
        $\beta_t$, $1-\beta_t$, $\bar\alpha_t$, $\tilde\beta_t$ (0 at $t=0$),
        $\sqrt{\tilde\beta_t}$.

    Raises
    ------
    ValueError
        If `T` < 1 or the betas are not in (0, 1).
    """

    def __init__(self, T: int = 200, beta: tuple[float, float] = (1e-4, 0.02)):
        if isinstance(T, bool) or not isinstance(T, int) or T < 1:
            raise ValueError(f"`T` must be an int >= 1, got {T!r}")
        lo, hi = float(beta[0]), float(beta[1])
        if not (0 < lo < 1 and 0 < hi < 1):
            raise ValueError(f"`beta` must lie in (0, 1), got {beta!r}")
        self.T = T
        self.beta = np.linspace(lo, hi, T, dtype=np.float64)
        self.alpha = 1.0 - self.beta
        self.alpha_bar = np.cumprod(self.alpha)
        prev = np.concatenate([[1.0], self.alpha_bar[:-1]])
        self.beta_tilde = self.beta * (1.0 - prev) / (1.0 - self.alpha_bar)
        self.sigma = np.sqrt(self.beta_tilde)

    def posterior_mean(self, x_t: torch.Tensor, x0: torch.Tensor, t: int) -> torch.Tensor:
        r"""$\tilde\mu_t(x_t, x_0) = \frac{\sqrt{\bar\alpha_{t-1}}\beta_t}{1-\bar\alpha_t}x_0
        + \frac{\sqrt{\alpha_t}(1-\bar\alpha_{t-1})}{1-\bar\alpha_t}x_t$ (Ho et al. eq. 7).

        Parameters
        ----------
        x_t, x0 : torch.Tensor
            Noisy and clean signals, same shape.
        t : int
            0-based step.

        Returns
        -------
        torch.Tensor, same shape.
        """
        prev = self.alpha_bar[t - 1] if t > 0 else 1.0
        ab = self.alpha_bar[t]
        c0 = math.sqrt(prev) * self.beta[t] / (1 - ab)
        ct = math.sqrt(self.alpha[t]) * (1 - prev) / (1 - ab)
        return c0 * x0 + ct * x_t


def step_embedding(t: torch.Tensor, dim: int = 128) -> torch.Tensor:
    r"""Sinusoidal step embedding of DiffWave: $[\sin(t\,10^{-4k/(h-1)}), \cos(\cdot)]$, $k<h$.

    Parameters
    ----------
    t : torch.Tensor of shape (B,), int64
        Steps.
    dim : int, default=128
        Embedding size ($h = $ dim/2 = 64 frequencies).

    Returns
    -------
    torch.Tensor of shape (B, dim), float32.
    """
    half = dim // 2
    freqs = torch.exp(
        torch.arange(half, device=t.device, dtype=torch.float32) * -(math.log(10000.0) / (half - 1))
    )
    arg = t.float()[:, None] * freqs[None]
    return torch.cat([torch.sin(arg), torch.cos(arg)], dim=1)


def _conv(cin: int, cout: int, k: int = 1, dilation: int = 1) -> nn.Conv1d:
    conv = nn.Conv1d(cin, cout, k, dilation=dilation, padding=dilation * (k - 1) // 2)
    nn.init.kaiming_normal_(conv.weight)
    return weight_norm(conv)


class _ResidualBlock(nn.Module):
    def __init__(self, res: int, skip: int, dilation: int, embed: int):
        super().__init__()
        self.res = res
        self.dilation = dilation
        self.fc_t = nn.Linear(embed, res)
        self.dilated_conv_layer = _conv(res, 2 * res, 3, dilation)
        self.res_conv = _conv(res, res, 1)
        self.skip_conv = _conv(res, skip, 1)

    def forward(self, x: torch.Tensor, e: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # official: h = x; h += part_t  (aliases x, so the residual carries W_t e too)
        h = x + self.fc_t(e)[:, :, None]
        conv = self.dilated_conv_layer  # kernel 3: padding = dilation keeps the length
        d = self.dilation
        z = nn.functional.conv1d(h, conv.weight, None, padding=d, dilation=d)
        out = gated_activation(z, conv.bias)  # tanh * sigmoid, bias added inside the gate
        return (h + self.res_conv(out)) * math.sqrt(0.5), self.skip_conv(out)


class DiffWave(nn.Module):
    r"""Unconditional DiffWave noise predictor $\epsilon_\theta(x, t)$ (philsyn, unconditional).

    Blocks: 1x1 conv + ReLU; `layers` residual blocks with dilation $2^{i \bmod \text{cycle}}$,
    each $h = x + W_t e$, weight-normed conv (k=3) C -> 2C, $\tanh\cdot\sigma$ gate, 1x1 res/skip,
    output $(x + W_t e + \text{res})\sqrt{1/2}$; $\sum \text{skip}\sqrt{1/L}$ -> 1x1 -> ReLU ->
    zero-initialised 1x1. Step embedding -> 512 -> swish -> 512 -> swish.

    Parameters
    ----------
    res_channels, skip_channels : int, default=256
        Residual and skip widths (paper: 256).
    layers : int, default=36
        Residual blocks (paper: 36).
    cycle : int, default=12
        Dilation cycle (paper: 12).

    Raises
    ------
    ValueError
        If a size is < 1.
    """

    def __init__(
        self, res_channels: int = 256, skip_channels: int = 256, layers: int = 36, cycle: int = 12
    ):
        super().__init__()
        for name, v in (
            ("res_channels", res_channels),
            ("skip_channels", skip_channels),
            ("layers", layers),
            ("cycle", cycle),
        ):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"`{name}` must be an int >= 1, got {v!r}")
        self.layers = layers
        self.init_conv = nn.Sequential(_conv(1, res_channels, 1), nn.ReLU())
        self.fc_t1 = nn.Linear(128, 512)
        self.fc_t2 = nn.Linear(512, 512)
        self.blocks = nn.ModuleList(
            _ResidualBlock(res_channels, skip_channels, 2 ** (i % cycle), 512)
            for i in range(layers)
        )
        self.final_conv1 = _conv(skip_channels, skip_channels, 1)
        self.final_conv2 = nn.Conv1d(skip_channels, 1, 1)
        nn.init.zeros_(self.final_conv2.weight)
        assert self.final_conv2.bias is not None
        nn.init.zeros_(self.final_conv2.bias)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Predict the noise.

        Parameters
        ----------
        x : torch.Tensor of shape (B, 1, L), float32
            Noisy audio.
        t : torch.Tensor of shape (B,), int64
            0-based diffusion steps.

        Returns
        -------
        torch.Tensor of shape (B, 1, L), float32.

        Raises
        ------
        ValueError
            If the shapes do not match.
        """
        if x.ndim != 3 or x.shape[1] != 1:
            raise ValueError(f"`x` must have shape (B, 1, L), got {tuple(x.shape)}")
        if t.ndim != 1 or t.shape[0] != x.shape[0]:
            raise ValueError(f"`t` must have shape ({x.shape[0]},), got {tuple(t.shape)}")
        e = step_embedding(t)
        e = nn.functional.silu(self.fc_t1(e))
        e = nn.functional.silu(self.fc_t2(e))
        h = self.init_conv(x)
        skip = torch.zeros((), device=x.device, dtype=x.dtype)
        for block in self.blocks:
            h, s = block(h, e)
            skip = skip + s
        out = skip * math.sqrt(1.0 / self.layers)
        return self.final_conv2(torch.relu(self.final_conv1(out)))

    @staticmethod
    def map_official_state_dict(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Map old ``weight_norm`` keys (``weight_g``/``weight_v``) to parametrization keys.

        Parameters
        ----------
        state : dict of str to torch.Tensor
            A state dict with ``*.weight_g`` / ``*.weight_v`` entries.

        Returns
        -------
        dict of str to torch.Tensor
            Keys ``*.parametrizations.weight.original0`` / ``original1``.
        """
        out = {}
        for k, v in state.items():
            if k.endswith(".weight_g"):
                k = k[: -len(".weight_g")] + ".parametrizations.weight.original0"
            elif k.endswith(".weight_v"):
                k = k[: -len(".weight_v")] + ".parametrizations.weight.original1"
            out[k] = v
        return out


EpsModel = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class DiffWavePurifier(nn.Module):
    r"""Diffuse-then-denoise purification with a DDPM noise model (AudioPure; spec section 2).

    $x_{t^*} = \sqrt{\bar\alpha_{t^*-1}}\,x_0 + \sqrt{1-\bar\alpha_{t^*-1}}\,\epsilon$, then the
    reverse chain of :mod:`phonepure.diffwave` down to $t=0$. Audio is resampled to 16 kHz, cut
    into 1-s chunks (no overlap, last zero-padded) that run in one batch or one at a time
    (`batch_chunks`), concatenated and cropped.

    Parameters
    ----------
    eps_model : callable
        ``eps_model(x (B,1,L) float32, t (B,) int64) -> (B,1,L)``, e.g. :class:`DiffWave`.
    t_star : int, default=3
        Diffusion depth, in [1, T] (De-AntiFake: 3).
    chunk : int, default=16000
        Chunk length in samples.
    batch_chunks : bool or "auto", default="auto"
        True: run all chunks in one batch; False: a per-chunk loop (same random draws, same
        output). "auto" batches on CUDA and loops on the CPU, where the loop measured 1.8-1.9x
        faster (cache-resident activations; ``benchmarks/RESULTS.md``).
    schedule : DDPMSchedule, optional
        Defaults to ``DDPMSchedule()``.

    Raises
    ------
    ValueError
        If `t_star` is outside [1, T], `chunk` < 1 or `batch_chunks` is not a bool or "auto".
    """

    def __init__(
        self,
        eps_model: EpsModel,
        t_star: int = 3,
        chunk: int = 16000,
        batch_chunks: bool | str = "auto",
        schedule: DDPMSchedule | None = None,
    ):
        super().__init__()
        self.schedule = schedule if schedule is not None else DDPMSchedule()
        if isinstance(t_star, bool) or not isinstance(t_star, int):
            raise ValueError(f"`t_star` must be an int in [1, {self.schedule.T}], got {t_star!r}")
        if not 1 <= t_star <= self.schedule.T:
            raise ValueError(f"`t_star` must be in [1, {self.schedule.T}], got {t_star}")
        if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
            raise ValueError(f"`chunk` must be an int >= 1, got {chunk!r}")
        self.eps_model = eps_model
        self.t_star = t_star
        self.chunk = chunk
        if not isinstance(batch_chunks, bool) and batch_chunks != "auto":
            raise ValueError(f"`batch_chunks` must be True, False or 'auto', got {batch_chunks!r}")
        self.batch_chunks = batch_chunks

    def _reverse(
        self, x: torch.Tensor, zs: list[torch.Tensor], x0_noise: torch.Tensor
    ) -> torch.Tensor:
        s = self.schedule
        ts = self.t_star - 1
        x = math.sqrt(s.alpha_bar[ts]) * x + math.sqrt(1 - s.alpha_bar[ts]) * x0_noise
        for i, t in enumerate(range(ts, -1, -1)):
            tt = torch.full((x.shape[0],), t, dtype=torch.int64, device=x.device)
            eps = self.eps_model(x, tt)
            c = (1 - s.alpha[t]) / math.sqrt(1 - s.alpha_bar[t])
            x = (x - c * eps) / math.sqrt(s.alpha[t])
            if t > 0:
                x = x + float(s.sigma[t]) * zs[i]
        return x

    def forward(
        self, wav: torch.Tensor, generator: torch.Generator | None = None, sr: int = SR
    ) -> torch.Tensor:
        """Purify `wav`.

        Parameters
        ----------
        wav : torch.Tensor of shape (T,), (1, T) or (B, 1, T), float, in [-1, 1]
            Input audio at rate `sr`.
        generator : torch.Generator, optional
            Source of the Gaussian draws (all drawn up front, so batched and looped runs
            use the same numbers).
        sr : int, default=16000
            Input rate in Hz; audio is resampled to 16 kHz (output is at 16 kHz).

        Returns
        -------
        torch.Tensor, same layout as `wav` (length at 16 kHz), float32.

        Raises
        ------
        ValueError
            On a bad shape, NaN/inf, empty input, ``|wav| > 1`` or ``sr <= 0``.
        TypeError
            If `generator` is not a ``torch.Generator``.

        Notes
        -----
        Autograd records the call unless it runs under ``torch.no_grad()`` (or
        ``torch.inference_mode()``): wrap inference calls in it, which also lets the opt-in
        Triton gate run; adaptive attacks (``attackvc_emb(adaptive="exact")``) need the graph.
        """
        wav = check_wav(wav, "wav", peak=True)
        if isinstance(sr, bool) or not isinstance(sr, int) or sr <= 0:
            raise ValueError(f"`sr` must be an int > 0, got {sr!r}")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(
                f"`generator` must be a torch.Generator, got {type(generator).__name__}"
            )
        shape = wav.shape
        x = wav.reshape(-1, shape[-1]).float()
        if sr != SR:
            x = resample(x, sr, SR)
        B, T = x.shape
        n = -(-T // self.chunk)
        pad = n * self.chunk - T
        chunks = nn.functional.pad(x, (0, pad)).reshape(B * n, 1, self.chunk)
        dev = chunks.device
        noise = torch.randn(chunks.shape, generator=generator, device=dev)
        zs = [
            torch.randn(chunks.shape, generator=generator, device=dev) for _ in range(self.t_star)
        ]
        batched = dev.type == "cuda" if self.batch_chunks == "auto" else self.batch_chunks
        if batched:
            out = self._reverse(chunks, zs, noise)
        else:
            out = torch.cat(
                [
                    self._reverse(chunks[i : i + 1], [z[i : i + 1] for z in zs], noise[i : i + 1])
                    for i in range(chunks.shape[0])
                ]
            )
        out = out.reshape(B, n * self.chunk)[:, :T]
        return out.reshape(*shape[:-1], T)
