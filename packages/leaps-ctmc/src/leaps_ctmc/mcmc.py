"""rho_t-invariant Metropolis moves, vectorised over walkers and over a proper site coloring.

Source: LEAPS (ICML 2025) Algorithm 1 (optional MCMC step that leaves rho_t invariant) and its
Metropolis-within-CTMC training rollouts. Sites of one color share no bond, so updating them
together is an exact Gibbs-type block of single-site Metropolis moves (checkerboard on an even
torus, 3 colors on an odd one, greedy coloring on graphs). Unlike the official code (one random
site shared by all walkers per call), every site of every walker is proposed once per sweep.
"""

import torch

from icml25_core import check_scalar

from .paths import check_generator

__all__ = ["metropolis_sweep"]


def metropolis_sweep(path, x, t, sweeps: int = 1, generator=None) -> torch.Tensor:
    """Apply `sweeps` Metropolis sweeps targeting rho_t = e^{-U_t} / Z_t.

    Ising proposal: flip s_i. Potts proposal: a uniform new state tau != x_i. Accept with
    probability min(1, e^{-Delta U}).

    Parameters
    ----------
    path : IsingPath, PottsPath or GraphIsingPath
    x : Tensor, [B, *S]
        States (validated by the path).
    t : float or Tensor [B]
        Time in [0, 1].
    sweeps : int, default=1
    generator : torch.Generator, optional

    Returns
    -------
    Tensor, [B, *S]: the new states (a new tensor).
    """
    check_scalar(sweeps, "sweeps", kind=int, low=0)
    check_generator(generator)
    x = path.check_state(x)
    colors = path.coloring().to(x.device)
    for _ in range(sweeps):
        for c in range(int(colors.max()) + 1):
            site = colors == c
            delta = path.neighbor_delta(x, t)
            u = torch.rand(x.shape, generator=generator, dtype=torch.float64).to(x.device)
            if path.spin:
                accept = site & (torch.log(u) < -delta.to(torch.float64))
                x = torch.where(accept, -x, x)
            else:
                step = torch.randint(1, path.q, x.shape, generator=generator).to(x.device)
                tau = (x + step) % path.q
                d = delta.gather(1, tau[:, None])[:, 0].to(torch.float64)
                accept = site & (torch.log(u) < -d)
                x = torch.where(accept, tau, x)
    return x
