r"""The Ornstein-Uhlenbeck variance-exploding SDE of SGMSE+ (Richter et al. 2023;
sgmse ``sdes.py``).

$$ dx = \theta (y - x)\,dt + \sigma(t)\,dw, \qquad
   \sigma(t) = \sigma_{\min}\Big(\frac{\sigma_{\max}}{\sigma_{\min}}\Big)^t\sqrt{2\lambda},
   \quad \lambda = \ln\frac{\sigma_{\max}}{\sigma_{\min}}, $$

mean $e^{-\theta t}x_0 + (1-e^{-\theta t})y$ and variance
$\sigma_{\min}^2 e^{-2\theta t}(e^{2(\theta+\lambda)t}-1)\lambda/(\theta+\lambda)$.
"""

from __future__ import annotations

import math

import torch

__all__ = ["OUVESDE"]


class OUVESDE:
    r"""OUVE SDE with SGMSE+ defaults $\theta=1.5$, $\sigma_{\min}=0.05$, $\sigma_{\max}=0.5$.

    Parameters
    ----------
    theta : float, default=1.5
        Stiffness $\theta$ (> 0).
    sigma_min, sigma_max : float, default=0.05, 0.5
        Noise scales, ``0 < sigma_min < sigma_max``.

    Raises
    ------
    ValueError
        If the parameters are out of range.
    """

    def __init__(self, theta: float = 1.5, sigma_min: float = 0.05, sigma_max: float = 0.5):
        for name, v in (("theta", theta), ("sigma_min", sigma_min), ("sigma_max", sigma_max)):
            if not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"`{name}` must be a finite number > 0, got {v!r}")
        if sigma_min >= sigma_max:
            raise ValueError(f"`sigma_min` ({sigma_min}) must be < `sigma_max` ({sigma_max})")
        self.theta = float(theta)
        self.sigma_min = float(sigma_min)
        self.sigma_max = float(sigma_max)
        self.logsig = math.log(self.sigma_max / self.sigma_min)

    def sigma(self, t):
        r"""Diffusion coefficient $\sigma(t)$ (float or tensor in, same out)."""
        return self.sigma_min * (self.sigma_max / self.sigma_min) ** t * math.sqrt(2 * self.logsig)

    def drift(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        r"""Drift $\theta(y - x)$."""
        return self.theta * (y - x)

    def mean(self, x0: torch.Tensor, y: torch.Tensor, t) -> torch.Tensor:
        r"""Marginal mean $e^{-\theta t}x_0 + (1-e^{-\theta t})y$ (`t`: float or tensor)."""
        w = torch.exp(-self.theta * torch.as_tensor(t, dtype=torch.float64)).to(x0.real.dtype)
        return w * x0 + (1 - w) * y

    def std(self, t):
        r"""Marginal standard deviation (float or tensor in, same out).

        $$ \mathrm{std}^2 = \sigma_{\min}^2 e^{-2\theta t}
           (e^{2(\theta+\lambda)t}-1)\lambda/(\theta+\lambda). $$
        """
        th, lam, smin = self.theta, self.logsig, self.sigma_min
        if isinstance(t, torch.Tensor):
            tvar = (
                smin**2
                * torch.exp(-2 * th * t)
                * (torch.exp(2 * (th + lam) * t) - 1)
                * lam
                / (th + lam)
            )
            return torch.sqrt(tvar)
        var = (
            smin**2 * math.exp(-2 * th * t) * (math.exp(2 * (th + lam) * t) - 1) * lam / (th + lam)
        )
        return math.sqrt(var)

    def prior_sample(
        self, y: torch.Tensor, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        r"""Draw $x_1 = y + \mathrm{std}(1) z$, $z$ complex normal with $E|z|^2 = 1$."""
        z = torch.randn(y.shape, generator=generator, dtype=y.dtype, device=y.device)
        return y + self.std(1.0) * z
