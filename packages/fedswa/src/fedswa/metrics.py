"""Sharpness and accuracy of a model: the top Hessian eigenvalue by power iteration on
``torch.func`` Hessian-vector products, and top-1 accuracy."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, jvp

from icml25_core import check_scalar

from .local import _check_batch

__all__ = ["accuracy", "top_hessian_eigenvalue"]


def _dot(a: dict, b: dict) -> torch.Tensor:
    return sum((a[k] * b[k]).sum() for k in a)


def top_hessian_eigenvalue(
    model: torch.nn.Module,
    batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
    iters: int = 20,
    tol: float = 1e-3,
    *,
    loss_fn: Callable = F.cross_entropy,
    seed: int = 0,
) -> float:
    """Largest-magnitude eigenvalue of the loss Hessian w.r.t. the trainable parameters.

    Power iteration ``v <- H v / ||H v||``, ``lambda = v . H v``, with ``H v`` the example-weighted
    mean of the per-batch Hessian-vector products (forward-over-reverse: ``torch.func.jvp`` of
    ``torch.func.grad``). The model runs in eval mode (BatchNorm uses its running statistics).

    Parameters
    ----------
    model : torch.nn.Module
        Not modified.
    batches : iterable of (Tensor [B, ...], Tensor [B, ...])
        The data the loss is averaged over (e.g. 200 test images); read once per iteration.
    iters : int, default=20
        Maximum power iterations ``>= 1``.
    tol : float, default=1e-3
        Stop when ``|lambda_k - lambda_{k-1}| <= tol * |lambda_k|``.
    loss_fn : callable, default=torch.nn.functional.cross_entropy
        ``loss_fn(model(x), y)``, a mean over the batch.
    seed : int, default=0
        Seed of the random start vector.

    Returns
    -------
    float
        ``lambda_max`` (units of the loss per squared parameter unit).

    Raises
    ------
    ValueError
        If `batches` is empty or holds NaN/inf or mismatched pairs, the model or `loss_fn`
        fails on a batch, ``iters < 1``, ``tol <= 0`` or the model has no trainable parameters.
    FloatingPointError
        If the Hessian-vector product is not finite.

    Notes
    -----
    The usual flatness measure of SAM-type papers (e.g. PyHessian, Yao et al. 2020); the FedSWA
    paper reports it as sharpness.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}")
    iters = check_scalar(iters, "iters", kind=int, low=1)
    tol = check_scalar(tol, "tol", low=0.0, inclusive="neither")
    data = list(batches) if batches is not None else []
    if not data:
        raise ValueError("`batches` is empty")
    data = [_check_batch(batch, k) for k, batch in enumerate(data)]
    params = {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}
    if not params:
        raise ValueError("`model` has no trainable parameters")
    buffers = {n: b.detach() for n, b in model.named_buffers()}
    was_training = model.training
    model.eval()
    total = sum(len(x) for x, _ in data)

    def loss(p, x, y):
        return loss_fn(functional_call(model, (p, buffers), (x,)), y)

    grad_fn = grad(loss)

    def hvp(v):
        out = {k: torch.zeros_like(t) for k, t in params.items()}
        for x, y in data:
            # jvp returns (output, jvp_out) here (no has_aux); its stub also allows a triple
            hv = jvp(lambda p, x=x, y=y: grad_fn(p, x, y), (params,), (v,))[1]
            for k in out:
                out[k] += hv[k] * (len(x) / total)
        return out

    x0, y0 = data[0]
    try:
        with torch.no_grad():
            first = loss_fn(model(x0), y0)
    except (RuntimeError, IndexError, TypeError, ValueError) as err:
        model.train(was_training)
        raise ValueError(
            f"`model`/`loss_fn` failed on `batches` item 0 (inputs {tuple(x0.shape)} {x0.dtype}, "
            f"targets {tuple(y0.shape)} {y0.dtype}): {err}"
        ) from err
    if not isinstance(first, torch.Tensor) or first.numel() != 1:
        model.train(was_training)
        raise ValueError("`loss_fn` must return a scalar Tensor")

    gen = torch.Generator().manual_seed(seed)
    v = {k: torch.randn(t.shape, generator=gen).to(t) for k, t in params.items()}
    norm = torch.sqrt(_dot(v, v))
    v = {k: t / norm for k, t in v.items()}
    eig = None
    try:
        for _ in range(iters):
            hv = hvp(v)
            new = float(_dot(v, hv))
            if not math.isfinite(new):
                raise FloatingPointError("the Hessian-vector product holds NaN or infinity")
            norm = torch.sqrt(_dot(hv, hv))
            if norm == 0:
                return 0.0
            v = {k: t / norm for k, t in hv.items()}
            if eig is not None and abs(new - eig) <= tol * abs(new):
                return new
            eig = new
    finally:
        model.train(was_training)
    assert eig is not None  # iters >= 1: the loop ran and set it (or returned)
    return eig


@torch.no_grad()
def accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, batch_size: int = 2000):
    """Top-1 accuracy of `model` on ``(x [N, ...], y [N])`` in eval mode, in ``[0, 1]``."""
    if len(x) == 0 or len(x) != len(y):
        raise ValueError("`x` and `y` must be non-empty and of equal length")
    was_training = model.training
    model.eval()
    correct = 0
    for start in range(0, len(x), batch_size):
        pred = model(x[start : start + batch_size]).argmax(dim=1)
        correct += int((pred == y[start : start + batch_size]).sum())
    model.train(was_training)
    return correct / len(x)
