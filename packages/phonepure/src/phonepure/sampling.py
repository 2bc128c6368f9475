r"""Predictor-corrector sampler of SGMSE+ (sgmse ``sampling/__init__.py``, ``predictors.py``,
``correctors.py``): annealed Langevin corrector plus reverse-diffusion predictor.

For $t$ in ``linspace(1, eps, N)``: corrector $h = 2(r\,\mathrm{std}(t))^2$,
$\bar x = x + h\,s$, $x = \bar x + \sqrt{2h}\,z$; predictor with $\Delta t = 1/N$

$$ \bar x = x - \theta(y - x)\Delta t + \sigma(t)^2\Delta t\, s(x, t), \qquad
   x = \bar x + \sigma(t)\sqrt{\Delta t}\, z, $$

and the last $\bar x$ is returned. sgmse uses $\Delta t = 1/N$ although the grid step is
$(1-\epsilon)/(N-1)$; kept for parity.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .sde import OUVESDE

__all__ = ["pc_sample", "ald_step_size"]

ScoreFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def ald_step_size(sde: OUVESDE, t: float, snr: float = 0.4) -> float:
    r"""Annealed-Langevin step $h = 2(r\,\mathrm{std}(t))^2$ (sgmse ``AnnealedLangevinDynamics``).

    Parameters
    ----------
    sde : OUVESDE
        The SDE.
    t : float
        Time in [0, 1].
    snr : float, default=0.4
        Target SNR $r$.

    Returns
    -------
    float
    """
    return 2.0 * (snr * sde.std(float(t))) ** 2


def pc_sample(
    score_fn: ScoreFn,
    y: torch.Tensor,
    sde: OUVESDE,
    N: int = 30,
    snr: float = 0.4,
    corrector_steps: int = 1,
    eps: float = 0.03,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Sample the reverse OUVE SDE from $x_1 = y + \\mathrm{std}(1) z$ down to `eps`.

    Parameters
    ----------
    score_fn : callable
        ``score_fn(x, t) -> s`` with `x` complex like `y` and `t` of shape (B,), float32.
    y : torch.Tensor, complex, shape (B, ...)
        Conditioning (the stage-1 output's compressed STFT).
    sde : OUVESDE
        The SDE.
    N : int, default=30
        Reverse steps (>= 1).
    snr : float, default=0.4
        Corrector SNR (> 0).
    corrector_steps : int, default=1
        Langevin steps per time (>= 0).
    eps : float, default=0.03
        Final time, in (0, 1).
    generator : torch.Generator, optional
        Source of the complex normal draws.

    Returns
    -------
    torch.Tensor, same shape and dtype as `y`: the last predictor mean.

    Raises
    ------
    ValueError
        If `N` < 1, `snr` <= 0, `corrector_steps` < 0, `eps` outside (0, 1) or `y` not complex.
    """
    if isinstance(N, bool) or not isinstance(N, int) or N < 1:
        raise ValueError(f"`N` must be an int >= 1, got {N!r}")
    if not snr > 0:
        raise ValueError(f"`snr` must be > 0, got {snr!r}")
    if (
        isinstance(corrector_steps, bool)
        or not isinstance(corrector_steps, int)
        or corrector_steps < 0
    ):
        raise ValueError(f"`corrector_steps` must be an int >= 0, got {corrector_steps!r}")
    if not 0 < eps < 1:
        raise ValueError(f"`eps` must be in (0, 1), got {eps!r}")
    if not isinstance(y, torch.Tensor) or not y.is_complex():
        raise ValueError("`y` must be a complex tensor")

    def randn() -> torch.Tensor:
        return torch.randn(y.shape, generator=generator, dtype=y.dtype, device=y.device)

    x = y + sde.std(1.0) * randn()
    x_mean = x
    dt = 1.0 / N
    for t in torch.linspace(1.0, eps, N).tolist():
        vt = torch.full((y.shape[0],), t, dtype=torch.float32, device=y.device)
        h = ald_step_size(sde, t, snr)
        for _ in range(corrector_steps):
            x_mean = x + h * score_fn(x, vt)
            x = x_mean + (2 * h) ** 0.5 * randn()
        g = sde.sigma(t)
        x_mean = x - sde.drift(x, y) * dt + g**2 * dt * score_fn(x, vt)
        x = x_mean + g * dt**0.5 * randn()
    return x_mean
