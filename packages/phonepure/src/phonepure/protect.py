r"""Protective perturbation to break: AttackVC's embedding attack (Huang et al. 2021), in the time
domain as De-AntiFake's ``adaptive_attack_vc.py``.

$$ \delta = \varepsilon \tanh(w), \qquad
   \min_w\ \mathrm{MSE}\big(E(x+\delta), E(x_{\rm tgt})\big)
   - 0.1\,\mathrm{MSE}\big(E(x+\delta), E(x)\big), $$

Adam (lr 0.1), $w \sim N(0, 1)$ at start. Adaptive variants attack a purifier $P$ too:
``bpda`` uses $E(P(x+\delta))$ with an identity backward through $P$; ``exact`` backpropagates
through $P$ (the 3 DDPM steps at $t^*=3$ replace the paper's adjoint SDE); EOT averages the loss
over `eot` purifier draws.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .audio import check_wav

__all__ = ["attackvc_emb"]


class _BPDA(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, out):
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def _check_eps(eps) -> None:
    if isinstance(eps, bool) or not isinstance(eps, int | float):
        raise TypeError(f"`eps` must be a Python number, got {type(eps).__name__}")
    if not 0 < eps <= 1:  # also refuses NaN and inf
        raise ValueError(
            f"`eps` must be in (0, 1] (an L-infinity budget on [-1, 1] audio), got {eps!r}"
        )


def attackvc_emb(
    wav,
    encoder: Callable[[torch.Tensor], torch.Tensor],
    target_wav,
    eps: float = 0.01,
    iters: int = 150,
    lr: float = 0.1,
    purifier: Callable[..., torch.Tensor] | None = None,
    adaptive: str = "none",
    eot: int = 1,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Protect `wav` against voice cloning by pushing its speaker embedding to `target_wav`'s.

    Parameters
    ----------
    wav : torch.Tensor of shape (T,) or (1, T), float, in [-1, 1], or a list of (T_i,)
        Victim speech, 16 kHz. A list protects all clips in one batch (non-adaptive only);
        then `encoder` maps a list of clips to (B, D) (e.g. ``GE2E.embed_many``) and
        `target_wav` is a list too; a list of protected clips is returned.
    encoder : callable
        Differentiable speaker encoder, ``(T,) -> (D,)`` (e.g. ``GE2E.embed``).
    target_wav : torch.Tensor of shape (T',) or (1, T'), float
        Speech of another speaker (opposite gender in the paper).
    eps : float, default=0.01
        L-infinity budget in (0, 1] (De-AntiFake: 0.01; argparse default 0.1).
    iters : int, default=150
        Adam steps (>= 1).
    lr : float, default=0.1
        Adam learning rate on `w` (> 0).
    purifier : callable, optional
        ``purifier(x, generator=...)`` attacked when `adaptive` is not ``"none"`` (a baseline
        without randomness: ``lambda x, generator=None: pp.lowpass(x)``).
    adaptive : {"none", "bpda", "exact"}, default="none"
        How gradients pass the purifier.
    eot : int, default=1
        Purifier draws averaged per step (>= 1).
    generator : torch.Generator, optional
        Source of the initial `w` (and of the purifier draws).

    Returns
    -------
    torch.Tensor, same shape as `wav`: ``clamp(wav + delta, -1, 1)``, ``|delta| <= eps``.

    Raises
    ------
    ValueError
        On bad audio (`target_wav` beyond [-1, 1] included), `eps` outside (0, 1], a non-positive
        `lr`, `iters`/`eot` < 1, an unknown `adaptive`, or an adaptive mode without `purifier`.
    TypeError
        If `eps` is not a Python number.
    """
    if isinstance(wav, list | tuple):
        return _attack_many(list(wav), encoder, list(target_wav), eps, iters, lr, generator)
    wav = check_wav(wav, "wav", peak=True)
    target_wav = check_wav(target_wav, "target_wav", peak=True)
    for name, w in (("wav", wav), ("target_wav", target_wav)):
        if w.ndim == 3 or (w.ndim == 2 and w.shape[0] != 1):
            raise ValueError(f"`{name}` must have shape (T,) or (1, T), got {tuple(w.shape)}")
    _check_eps(eps)
    if not isinstance(lr, int | float) or not lr > 0:
        raise ValueError(f"`lr` must be > 0, got {lr!r}")
    for name, v in (("iters", iters), ("eot", eot)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"`{name}` must be an int >= 1, got {v!r}")
    if adaptive not in ("none", "bpda", "exact"):
        raise ValueError(f"`adaptive` must be one of 'none', 'bpda', 'exact'; got {adaptive!r}")
    if adaptive != "none" and purifier is None:
        raise ValueError("`purifier` is required when `adaptive` is not 'none'")
    x = wav.reshape(-1).float().detach()
    with torch.no_grad():
        e_src = encoder(x).detach()
        e_tgt = encoder(target_wav.reshape(-1).float()).detach()
    w = torch.randn(x.shape, generator=generator).requires_grad_(True)
    opt = torch.optim.Adam([w], lr=lr)
    for _ in range(iters):
        opt.zero_grad()
        adv = (x + eps * torch.tanh(w)).clamp(-1, 1)
        losses = []
        for _ in range(eot if adaptive != "none" else 1):
            if adaptive == "none":
                inp = adv
            else:
                assert purifier is not None
                if adaptive == "bpda":
                    with torch.no_grad():
                        pur = purifier(adv.detach()[None], generator=generator)[0]
                    inp = _BPDA.apply(adv, pur)
                else:
                    inp = purifier(adv[None], generator=generator)[0]
            e = encoder(inp)
            losses.append(torch.mean((e - e_tgt) ** 2) - 0.1 * torch.mean((e - e_src) ** 2))
        loss = torch.stack(losses).mean()
        loss.backward()
        opt.step()
    with torch.no_grad():
        out = (x + eps * torch.tanh(w)).clamp(-1, 1)
    return out.reshape(wav.shape).to(wav.dtype)


def _attack_many(wavs, encoder, targets, eps, iters, lr, generator):
    if len(wavs) == 0 or len(wavs) != len(targets):
        raise ValueError("`wav` and `target_wav` lists must be non-empty and of equal length")
    _check_eps(eps)
    if isinstance(iters, bool) or not isinstance(iters, int) or iters < 1:
        raise ValueError(f"`iters` must be an int >= 1, got {iters!r}")
    xs = [
        check_wav(w, f"wav[{i}]", peak=True).reshape(-1).float().detach()
        for i, w in enumerate(wavs)
    ]
    with torch.no_grad():
        e_src = encoder(xs).detach()
        targets = [check_wav(t, f"target_wav[{i}]", peak=True) for i, t in enumerate(targets)]
        e_tgt = encoder([t.reshape(-1).float() for t in targets]).detach()
    ws = [torch.randn(x.shape, generator=generator).requires_grad_(True) for x in xs]
    opt = torch.optim.Adam(ws, lr=lr)
    for _ in range(iters):
        opt.zero_grad()
        adv = [(x + eps * torch.tanh(w)).clamp(-1, 1) for x, w in zip(xs, ws, strict=True)]
        e = encoder(adv)
        loss = ((e - e_tgt) ** 2).mean(1) - 0.1 * ((e - e_src) ** 2).mean(1)
        loss.sum().backward()
        opt.step()
    with torch.no_grad():
        return [
            (x + eps * torch.tanh(w)).clamp(-1, 1).reshape(w0.shape).to(w0.dtype)
            for x, w, w0 in zip(xs, ws, wavs, strict=True)
        ]
