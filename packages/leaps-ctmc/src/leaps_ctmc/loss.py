"""The PINN objective of LEAPS for the rate net and the free-energy net.

Source: Holderrieth, Albergo, Jaakkola, "LEAPS", ICML 2025, Sec. 6 (PINN loss):
    L(theta, phi) = E_{t, x ~ mu_t} [ (-d_t U_t(x) - K^theta_t(x) + d_t F^phi_t)^2 ],
zero iff the weight rate g_t(x) = -d_t F_t does not depend on x, i.e. Q^theta transports rho_t
and every walker carries the same weight (ESS = 1). mu_t is any reference law (off-policy:
here a replay buffer of detached rollouts). d_t F by forward-mode AD (dual numbers of
``torch.autograd.forward_ad``, which, unlike ``torch.func.jvp``, also runs through
DistributedDataParallel); d_t U is exact for the linear paths.
"""

import warnings

import torch
from torch.autograd import forward_ad

from icml25_core import check_tensor

from .nets import corrector
from .paths import check_time

__all__ = ["pinn_loss", "pinn_residual"]


def pinn_residual(path, net, fnet, x, t) -> torch.Tensor:
    r"""r = -d_t U_t(x) - K^theta_t(x) + d_t F^phi_t, shape [B], the net's dtype.

    $$
    r_t(x) = -\partial_t U_t(x) - \mathcal{K}^{\theta}_t(x) + \partial_t F^{\phi}_t,
    \qquad
    \mathcal{L}(\theta, \phi) = \mathbb{E}_{t,\, x \sim \mu_t}\!\left[ r_t(x)^2 \right]
    $$

    Parameters
    ----------
    path : IsingPath, PottsPath or GraphIsingPath
    net : nn.Module
        Locally equivariant rate net, ``net(x, t) -> G``.
    fnet : nn.Module
        ``fnet(t [B]) -> [B]`` (FreeEnergyNet).
    x : Tensor, [B, *S]
        States (validated by `path`).
    t : Tensor, float [B]
        Times in [0, 1].

    Raises
    ------
    ValueError, TypeError
        Bad states or times (see the path's ``check_state`` and ``check_time``).
    """
    x = path.check_state(x)
    check_tensor(t, "t", ndim=1)
    t = check_time(t, x.shape[0])
    G = net(x, t)
    dtype = G.dtype
    t = t.to(dtype)
    delta = path.neighbor_delta(x, t.to(x.dtype) if path.spin else t).to(dtype)
    K = corrector(G, x, delta)
    dU = path.dU_dt(x, t.to(x.dtype) if path.spin else t).to(dtype)
    with forward_ad.dual_level(), warnings.catch_warnings():
        # torch's own forward-AD decompositions call the deprecated torch.jit.script once
        warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.* is deprecated")
        F = fnet(forward_ad.make_dual(t, torch.ones_like(t)))  # forward mode over t,
        dF = forward_ad.unpack_dual(F).tangent  # reverse mode over the parameters
    return -dU - K + dF.to(dtype)


def pinn_loss(path, net, fnet, x, t) -> torch.Tensor:
    """Mean squared PINN residual over the batch, a scalar to minimise (:func:`pinn_residual`)."""
    return pinn_residual(path, net, fnet, x, t).pow(2).mean()
