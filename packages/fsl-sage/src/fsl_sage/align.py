"""Alignment of an auxiliary model to the S-server's cut-layer gradients (FSL-SAGE, Sec. 3).

Source: official ``srijith1996/FSL-SAGE`` ``src/algos/fsl_sage.py`` (alignment every
``align_interval`` rounds, ``align_epochs`` = 100 epochs of ``align_batch_size`` = 1000 samples,
Adam lr 1e-3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from icml25_core import check_scalar, check_tensor

from .aux import GradScalarAux, LinearGradScalarAux
from .buffer import AlignmentBuffer

__all__ = ["AlignStats", "align", "nmse"]


@dataclass
class AlignStats:
    """What one alignment did.

    Attributes
    ----------
    nmse_before, nmse_after : float
        ``||G_hat - G*||_F^2 / ||G*||_F^2`` on the whole buffer, before and after.
    loss_per_epoch : list of float
        Mean per-batch alignment loss of each epoch.
    """

    nmse_before: float
    nmse_after: float
    loss_per_epoch: list[float] = field(default_factory=list)


def nmse(aux: GradScalarAux, z: torch.Tensor, y: torch.Tensor, g_star: torch.Tensor) -> float:
    """Normalised squared error ``||G_hat - G*||_F^2 / ||G*||_F^2`` of ``aux`` (per-sample scale).

    Parameters
    ----------
    aux : GradScalarAux
    z : Tensor, shape [M, *S]
    y : Tensor, shape [M], int64
    g_star : Tensor, shape [M, *S]
        Per-sample target gradients.

    Returns
    -------
    float
        Dimensionless; 1.0 for a zero estimate; ``inf`` when ``g_star`` is all zero (a
        saturated server has no gradient to match) and the estimate is not.

    Raises
    ------
    TypeError, ValueError
        For a non-aux `aux`, or bad `z`, `y`, `g_star` (dtype, NaN, shapes, label range).
    """
    if not isinstance(aux, GradScalarAux):
        raise TypeError(f"`aux` must be a GradScalarAux, got {type(aux).__name__}")
    check_tensor(g_star, "g_star", dtype=(torch.float32, torch.float64))
    if g_star.shape != z.shape:
        raise ValueError(
            f"`g_star` must have the shape of `z` {tuple(z.shape)}, got {tuple(g_star.shape)}"
        )
    # estimate is the batch-mean gradient; the targets are per-sample: rescale by the batch
    est = aux.estimate(z, y).to(g_star.dtype) * z.shape[0]
    return float(((est - g_star) ** 2).sum() / (g_star**2).sum().clamp_min(1e-300))


def align(
    aux: GradScalarAux,
    buffer: AlignmentBuffer,
    server_model: nn.Module,
    *,
    epochs: int = 100,
    batch_size: int = 1000,
    lr: float = 1e-3,
    official_scale: bool = False,
    generator: torch.Generator | None = None,
) -> AlignStats:
    """Fit ``aux``'s input-gradient field to the server's gradients on ``buffer`` (in place).

    Minimises ``sum_b ||dl_a(z_b, y_b)/dz_b - g*_b||^2`` (averaged over each mini-batch) with a
    fresh Adam; warm-started from ``aux``'s current parameters.

    Parameters
    ----------
    aux : GradScalarAux
        Updated in place. A :class:`LinearGradScalarAux` uses the closed-form gradient, any other
        aux autograd's double backward.
    buffer : AlignmentBuffer
        Non-empty; samples ``(z_b, y_b)``.
    server_model : nn.Module
        The S-server's model; left untouched (see :meth:`AlignmentBuffer.targets`).
    epochs : int, default=100
        Official ``align_epochs``.
    batch_size : int, default=1000
        Official ``align_batch_size``; the last batch of an epoch may be shorter.
    lr : float, default=1e-3
        Adam learning rate (official).
    official_scale : bool, default=False
        Reproduce the official scaling: targets are gradients of the *mean* loss over the buffer
        (``g*/M``), the estimate the gradient of the *mean* aux loss over the batch
        (``g_hat/B``) and the loss a summed squared error. Only for comparisons (spec pitfalls).
    generator : torch.Generator, optional
        Shuffles the buffer each epoch; ``None`` uses torch's global generator.

    Returns
    -------
    AlignStats
        NMSE before/after on the whole buffer (per-sample scale) and the loss per epoch.

    Raises
    ------
    TypeError
        If `aux` is not a :class:`GradScalarAux`, `buffer` not an :class:`AlignmentBuffer` or
        `generator` not a ``torch.Generator``.
    ValueError
        If the buffer is empty or does not fit `server_model` / `aux`, or `epochs`,
        `batch_size`, `lr` are out of range (``lr`` must be finite).
    """
    if not isinstance(aux, GradScalarAux):
        raise TypeError(f"`aux` must be a GradScalarAux, got {type(aux).__name__}")
    if not isinstance(buffer, AlignmentBuffer):
        raise TypeError(f"`buffer` must be an AlignmentBuffer, got {type(buffer).__name__}")
    check_scalar(epochs, "epochs", kind=int, low=0)
    check_scalar(batch_size, "batch_size", kind=int, low=1)
    check_scalar(lr, "lr", low=0.0, high=math.inf, inclusive="neither")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"`generator` must be a torch.Generator or None, got {type(generator).__name__}"
        )
    z, y, g_star = buffer.targets(server_model)
    n = z.shape[0]
    before = nmse(aux, z, y, g_star)  # checks z, y, g_star once: the loop's steps do not
    target = g_star / n if official_scale else g_star
    linear_aux = aux if type(aux) is LinearGradScalarAux else None  # closed-form gradients
    opt = torch.optim.Adam(aux.parameters(), lr=lr)
    losses = []
    for _ in range(epochs):
        order = torch.randperm(n, generator=generator)
        total, count = 0.0, 0
        for start in range(0, n, batch_size):
            idx = order[start : start + batch_size]
            zb, yb, gb = z[idx], y[idx], target[idx]
            b = idx.shape[0]
            opt.zero_grad(set_to_none=True)
            if linear_aux is not None and official_scale:
                # sum ||E W / b - g*/M||^2 = (1/b^2) sum ||E W - g* b / M||^2
                loss, gw, gbias = linear_aux._alignment_grad(zb, yb, gb * b)
                loss, gw, gbias = loss / b**2, gw / b**2, gbias / b**2
            elif linear_aux is not None:
                loss, gw, gbias = linear_aux._alignment_grad(zb, yb, gb)
                loss, gw, gbias = loss / b, gw / b, gbias / b
            else:
                scale = 1.0 / b if official_scale else 1.0
                loss = aux._alignment_loss(zb, yb, gb, scale)
                if not official_scale:
                    loss = loss / b
                loss.backward()
            if linear_aux is not None:
                linear_aux.linear.weight.grad, linear_aux.linear.bias.grad = gw, gbias
            opt.step()
            total += float(loss.detach())
            count += 1
        losses.append(total / count)
    return AlignStats(before, nmse(aux, z, y, g_star), losses)
