r"""A small DiT (adaLN-Zero) with rectified-flow training and an Euler sampler, for tests and the
reproduce.

Sources: DiT (Peebles & Xie, ICCV 2023; facebookresearch/DiT ``models.py``: adaLN-Zero blocks,
patch embedding, zero-initialised modulation and final layer); flow matching / rectified flow
(Lipman et al. 2023; Liu et al. 2023): $x_t = (1-t)x_0 + t\varepsilon$, target
$v = \varepsilon - x_0$. Sizes are ours. Its blocks expose the same ``fuser`` slot as diffusers'
``BasicTransformerBlock`` so :func:`unimc.inject_conditions` treats both alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["TinyDiT", "flow_matching_loss", "euler_sample"]


def _timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)
    args = (t.float() * 1000.0)[:, None] * freqs[None]
    return torch.cat([args.cos(), args.sin()], -1)


def _modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class _Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.d, self.heads = d, heads
        self.norm1 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.mlp = nn.Sequential(
            nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d)
        )
        ada = nn.Linear(d, 6 * d)
        nn.init.zeros_(ada.weight)
        nn.init.zeros_(ada.bias)
        self.ada = nn.Sequential(nn.SiLU(), ada)
        self.fuser: nn.Module | None = None  # GLIGEN slot (diffusers' name), set by inject
        self.unimc_joint: nn.Module | None = None  # joint-mode projection, set by inject

    def _attn(
        self, z: torch.Tensor, extra: torch.Tensor | None, mask: torch.Tensor | None
    ) -> torch.Tensor:
        b, n, d = z.shape
        if extra is not None:
            z = torch.cat([z, extra], 1)
        q, k, v = self.qkv(z).view(b, -1, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        am = None
        if mask is not None:
            keys = torch.cat([torch.ones(b, n, dtype=torch.bool, device=z.device), mask], 1)
            am = keys[:, None, None, :]
        a = F.scaled_dot_product_attention(q[:, :, :n], k, v, attn_mask=am)
        return self.proj(a.transpose(1, 2).reshape(b, n, d))

    def forward(
        self, x: torch.Tensor, c: torch.Tensor, cross_attention_kwargs: dict[str, Any] | None = None
    ) -> torch.Tensor:
        cak = cross_attention_kwargs or {}
        sh1, sc1, g1, sh2, sc2, g2 = self.ada(c).chunk(6, dim=-1)
        extra, mask = None, None
        joint = cak.get("unimc_joint")
        if joint is not None and self.unimc_joint is not None:
            extra = self.unimc_joint(joint.tokens.to(x.dtype))
            mask = joint.mask
        x = x + g1.unsqueeze(1) * self._attn(_modulate(self.norm1(x), sh1, sc1), extra, mask)
        gligen = cak.get("gligen")
        if gligen is not None and self.fuser is not None:
            x = self.fuser(x, gligen["objs"])
        return x + g2.unsqueeze(1) * self.mlp(_modulate(self.norm2(x), sh2, sc2))


class TinyDiT(nn.Module):
    r"""A small DiT with adaLN-Zero blocks predicting the flow-matching velocity.

    Parameters
    ----------
    image_size : int, default=32
        Side of the square input, pixels.
    in_channels : int, default=3
        Image channels.
    patch_size : int, default=4
        Patch side; ``(image_size / patch_size)^2`` tokens.
    d_model : int, default=128
        Width.
    depth : int, default=4
        Number of blocks.
    n_heads : int, default=4
        Attention heads.
    control_channels : int, default=0
        Channels of an optional spatial control image (e.g. a rendered skeleton) added through
        a zero-initialised patch embedding (ControlNet-style zero init; the reproduce's
        baseline B). 0: no control branch.

    Raises
    ------
    ValueError
        If a size is not an int >= 1, `patch_size` does not divide `image_size` or `n_heads`
        does not divide `d_model`.
    """

    _unimc_protocol = True

    def __init__(
        self,
        image_size: int = 32,
        in_channels: int = 3,
        patch_size: int = 4,
        d_model: int = 128,
        depth: int = 4,
        n_heads: int = 4,
        control_channels: int = 0,
    ) -> None:
        super().__init__()
        for name, val in (
            ("image_size", image_size),
            ("in_channels", in_channels),
            ("patch_size", patch_size),
            ("d_model", d_model),
            ("depth", depth),
            ("n_heads", n_heads),
        ):
            if isinstance(val, bool) or not isinstance(val, int) or val < 1:
                raise ValueError(f"`{name}` must be an int >= 1; got {val!r}")
        if image_size % patch_size:
            raise ValueError(f"`patch_size`={patch_size} must divide `image_size`={image_size}")
        if d_model % n_heads:
            raise ValueError(f"`n_heads`={n_heads} must divide `d_model`={d_model}")
        self.image_size, self.in_channels, self.patch_size = image_size, in_channels, patch_size
        self.d_model, self.n_heads = d_model, n_heads
        g = image_size // patch_size
        self.patch = nn.Conv2d(in_channels, d_model, patch_size, stride=patch_size)
        self.pos = nn.Parameter(torch.randn(1, g * g, d_model) * 0.02)
        self.control: nn.Conv2d | None = None
        if control_channels:
            ctrl = nn.Conv2d(control_channels, d_model, patch_size, stride=patch_size)
            nn.init.zeros_(ctrl.weight)
            if ctrl.bias is not None:
                nn.init.zeros_(ctrl.bias)
            self.control = ctrl
        self.t_mlp = nn.Sequential(
            nn.Linear(d_model, d_model), nn.SiLU(), nn.Linear(d_model, d_model)
        )
        self.transformer_blocks = nn.ModuleList(_Block(d_model, n_heads) for _ in range(depth))
        self.norm_out = nn.LayerNorm(d_model, elementwise_affine=False, eps=1e-6)
        ada_out = nn.Linear(d_model, 2 * d_model)
        self.out = nn.Linear(d_model, patch_size * patch_size * in_channels)
        for lin in (ada_out, self.out):
            nn.init.zeros_(lin.weight)
            nn.init.zeros_(lin.bias)
        self.ada_out = nn.Sequential(nn.SiLU(), ada_out)

    def forward(
        self,
        x: torch.Tensor,
        t: torch.Tensor,
        control: torch.Tensor | None = None,
        cross_attention_kwargs: dict[str, Any] | None = None,
    ) -> torch.Tensor:
        """Predict the velocity.

        Parameters
        ----------
        x : Tensor, shape [B, C, H, W], floating
            Noisy images $x_t$.
        t : Tensor, shape [B], floating
            Times in [0, 1] (1 = noise).
        control : Tensor, shape [B, C_ctrl, H, W], optional
            Spatial control image (needs ``control_channels``).
        cross_attention_kwargs : dict, optional
            Set by :meth:`InjectionHandle.condition` (``"gligen"`` / ``"unimc_joint"`` keys).

        Returns
        -------
        Tensor, shape [B, C, H, W]

        Raises
        ------
        ValueError
            If `x` is not a floating ``[B, in_channels, image_size, image_size]`` tensor
            (float64 only for a float64 model), or `t` has neither 1 nor B entries.
        """
        want = (self.in_channels, self.image_size, self.image_size)
        if not isinstance(x, torch.Tensor) or x.ndim != 4 or tuple(x.shape[1:]) != want:
            got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"`x` must have shape [B, {', '.join(map(str, want))}]; got {got}")
        if not x.is_floating_point() or (
            x.dtype == torch.float64 and self.pos.dtype != torch.float64
        ):
            raise ValueError(f"`x` is {x.dtype} but the model is {self.pos.dtype}")
        if not isinstance(t, torch.Tensor) or t.numel() not in (1, x.shape[0]):
            got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"`t` must be a tensor of 1 or B={x.shape[0]} times; got {got}")
        b, _, hgt, wid = x.shape
        p = self.patch_size
        z = self.patch(x).flatten(2).transpose(1, 2) + self.pos
        if control is not None:
            if self.control is None:
                raise ValueError("`control` given but the model has no control branch")
            z = z + self.control(control).flatten(2).transpose(1, 2)
        c = self.t_mlp(_timestep_embedding(t.reshape(-1).expand(b), self.d_model))
        for blk in self.transformer_blocks:
            z = blk(z, c, cross_attention_kwargs)
        sh, sc = self.ada_out(c).chunk(2, dim=-1)
        z = self.out(_modulate(self.norm_out(z), sh, sc))
        gh, gw = hgt // p, wid // p
        z = z.view(b, gh, gw, p, p, self.in_channels).permute(0, 5, 1, 3, 2, 4)
        return z.reshape(b, self.in_channels, hgt, wid)


def flow_matching_loss(
    model: Callable[..., torch.Tensor],
    x0: torch.Tensor,
    *,
    t: torch.Tensor | None = None,
    noise: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    **model_kwargs: Any,
) -> torch.Tensor:
    r"""Rectified-flow loss $\mathbb{E}\,\|v_\theta(x_t, t) - (\varepsilon - x_0)\|^2$.

    $$
    x_t = (1-t)\,x_0 + t\,\varepsilon,\qquad
    \mathcal{L} = \mathrm{mean}\big(v_\theta(x_t,t) - (\varepsilon - x_0)\big)^2
    $$

    Parameters
    ----------
    model : callable
        ``model(x_t, t, **model_kwargs) -> v`` with the shape of `x0`.
    x0 : Tensor, shape [B, ...], floating
        Clean samples.
    t : Tensor, shape [B], optional
        Times in [0, 1]; default uniform.
    noise : Tensor, like `x0`, optional
        $\varepsilon$; default standard normal.
    generator : torch.Generator, optional
        Random source for `t` and `noise`.
    **model_kwargs
        Passed to `model`.

    Returns
    -------
    Tensor, scalar

    Raises
    ------
    ValueError
        If `x0` is empty or not finite, or `t` / `noise` have the wrong shape.
    """
    if (
        not isinstance(x0, torch.Tensor)
        or not x0.is_floating_point()
        or x0.ndim < 1
        or x0.numel() == 0
    ):
        raise ValueError("`x0` must be a non-empty floating tensor [B, ...]")
    if not torch.isfinite(x0).all():
        raise ValueError("`x0` contains NaN or inf")
    b = x0.shape[0]
    if t is None:
        t = torch.rand(b, generator=generator, device=x0.device, dtype=x0.dtype)
    if t.shape != (b,):
        raise ValueError(f"`t` must have shape [{b}]; got {tuple(t.shape)}")
    if noise is None:
        noise = torch.randn(x0.shape, generator=generator, device=x0.device, dtype=x0.dtype)
    if noise.shape != x0.shape:
        raise ValueError("`noise` must have the shape of `x0`")
    tt = t.view(b, *([1] * (x0.ndim - 1)))
    xt = (1 - tt) * x0 + tt * noise
    v = model(xt, t, **model_kwargs)
    return ((v - (noise - x0)) ** 2).mean()


@torch.no_grad()
def euler_sample(
    model: Callable[..., torch.Tensor],
    noise: torch.Tensor,
    steps: int = 20,
    **model_kwargs: Any,
) -> torch.Tensor:
    r"""Integrate $dx/dt = v_\theta(x, t)$ from $t=1$ (noise) to $t=0$ with Euler steps.

    $$ x_{t_{i+1}} = x_{t_i} + (t_{i+1} - t_i)\, v_\theta(x_{t_i}, t_i),\quad t_i = 1 - i/S $$

    Parameters
    ----------
    model : callable
        ``model(x, t, **model_kwargs) -> v``.
    noise : Tensor, shape [B, ...], floating
        $x_1$.
    steps : int, default=20
        S, number of Euler steps.
    **model_kwargs
        Passed to `model`.

    Returns
    -------
    Tensor, like `noise`
        $x_0$ estimate.

    Raises
    ------
    ValueError
        If `steps` < 1 or `noise` is not finite.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"`steps` must be an int >= 1; got {steps!r}")
    if not torch.isfinite(noise).all():
        raise ValueError("`noise` contains NaN or inf")
    x = noise
    b = x.shape[0]
    ts = torch.linspace(1.0, 0.0, steps + 1, device=x.device, dtype=x.dtype)
    for i in range(steps):
        v = model(x, ts[i].expand(b), **model_kwargs)
        x = x + (ts[i + 1] - ts[i]) * v
    return x
