"""Auxiliary models that estimate the server's cut-layer gradient (FSL-SAGE, Sec. 3).

Axes: ``B`` batch, ``S`` the cut-layer shape (e.g. ``(C_cut, H, W)``), ``d = prod(S)``,
``C`` classes.

An auxiliary model here is a *gradient-scalar* model: a network ``a(z)`` returning log-probabilities
whose loss ``l_a(z, y) = NLL(a(z), y)`` has an input gradient ``dl_a/dz`` that is used as the
estimate of the server's gradient ``dCE(theta_s(z), y)/dz`` (official code:
``srijith1996/FSL-SAGE``, ``models/aux_models``, ``linear_grad_scalar``).
"""

from __future__ import annotations

import math
import numbers
from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from icml25_core import check_scalar, check_tensor

__all__ = [
    "GradScalarAux",
    "LinearGradScalarAux",
    "check_labels",
    "check_log_probs",
    "check_smashed",
]


def check_smashed(z, name: str, shape: tuple[int, ...] | None) -> torch.Tensor:
    """Check a smashed batch ``z`` of shape ``[B, *shape]`` (floating, finite, non-empty).

    Raises
    ------
    TypeError
        If `z` is not a floating torch tensor.
    ValueError
        If `z` is empty, holds NaN/inf or its per-sample shape is not `shape` (both shapes named).
    """
    check_tensor(z, name, dtype=(torch.float32, torch.float64))
    if z.ndim < 2:
        raise ValueError(
            f"`{name}` must have shape [B, *S] with at least 2 dims, got {tuple(z.shape)}"
        )
    if shape is not None and tuple(z.shape[1:]) != tuple(shape):
        raise ValueError(
            f"`{name}` has per-sample shape {tuple(z.shape[1:])} but the auxiliary model "
            f"expects the cut shape {tuple(shape)}"
        )
    return z


def check_labels(y, name: str, batch: int, num_classes: int | None) -> torch.Tensor:
    """Check labels ``y``: int64 of shape ``[batch]`` with values in ``[0, num_classes)``.

    Raises
    ------
    TypeError
        If `y` is not an int64 tensor.
    ValueError
        If its length differs from `batch` or a label is outside ``[0, num_classes)``.
    """
    check_tensor(y, name, ndim=1, dtype=torch.int64)
    if y.shape[0] != batch:
        raise ValueError(f"`{name}` has {y.shape[0]} labels for {batch} samples")
    if num_classes is not None and (int(y.min()) < 0 or int(y.max()) >= num_classes):
        raise ValueError(
            f"`{name}` must hold labels in [0, {num_classes}), got range "
            f"[{int(y.min())}, {int(y.max())}]"
        )
    return y


def check_log_probs(out: torch.Tensor, what: str) -> None:
    """Check that `out` ``[B, C]`` holds log-probabilities: ``logsumexp`` over classes is 0.

    Every loss here is ``NLL(out, y) = -out_y``, which is the cross-entropy (and its gradient
    the one FSL-SAGE estimates and aligns) only when `out` is normalised, e.g. by
    ``nn.LogSoftmax(dim=1)``; raw logits or probabilities train silently wrong.

    Raises
    ------
    ValueError
        If a row's ``logsumexp`` is further than 1e-3 from 0; the message names `what`.
    """
    with torch.no_grad():
        worst = float(torch.logsumexp(out.detach().double(), dim=1).abs().max())
    if not worst <= 1e-3:  # NaN fails too
        raise ValueError(
            f"{what} must output log-probabilities (end it in nn.LogSoftmax(dim=1)): the losses "
            f"are NLL(output, y), the cross-entropy only then; its logsumexp over the classes "
            f"is {worst:.3g} away from 0"
        )


def _check_shape(shape, name: str) -> tuple[int, ...]:
    """A positive int or a non-empty tuple of positive ints, as a tuple."""
    items = (shape,) if isinstance(shape, numbers.Integral) else shape
    try:
        items = tuple(items)
    except TypeError:
        raise TypeError(
            f"`{name}` must be an int or a tuple of ints, got {type(shape).__name__}"
        ) from None
    if not items or any(not isinstance(s, numbers.Integral) or isinstance(s, bool) for s in items):
        raise TypeError(f"`{name}` must be a positive int or a tuple of them, got {shape!r}")
    items = tuple(int(s) for s in items)
    if min(items) < 1:
        raise ValueError(f"`{name}` must be positive, got {shape!r}")
    return items


class GradScalarAux(nn.Module):
    r"""A gradient-scalar auxiliary model around any network ``a: [B, *S] -> [B, C]`` log-probs.

    The client trains on the input gradient of the auxiliary loss in place of the S-server's
    cut-layer gradient, and the S-server periodically aligns ``a`` to its own gradients on the
    ``M`` buffered samples (FSL-SAGE Sec. 3; ``a(z)`` holds log-probabilities):

    $$
    \hat g_b = \nabla_{z_b}\, \ell_a(z_b, y_b) \;\approx\;
    g^\star_b = \nabla_{z_b}\, \mathrm{CE}\big(\theta_s(z_b),\, y_b\big),
    \qquad \ell_a(z, y) = \mathrm{NLL}\big(a(z), y\big) = -a(z)_y,
    \qquad \min_a \sum_{b=1}^{M} \big\lVert \hat g_b - g^\star_b \big\rVert_2^2 .
    $$

    Parameters
    ----------
    net : nn.Module
        Maps the smashed data ``z`` (``[B, *S]``, float32) to log-probabilities ``[B, C]``
        (end it in ``nn.LogSoftmax(dim=1)``: ``NLL(a(z), y)`` is the cross-entropy only for
        log-probabilities, so :meth:`forward` refuses other outputs).
    input_shape : tuple of int, optional
        The cut shape ``S``; when given, inputs of another shape raise ``ValueError``.
    num_classes : int, optional
        ``C``; when given, labels outside ``[0, C)`` raise ``ValueError``.

    Notes
    -----
    Source: FSL-SAGE (Nair et al., ICML 2025), Sec. 3 (auxiliary model estimating the smashed
    activation gradient) and the official ``models/aux_models`` gradient-scalar models. The
    estimate of the server gradient for sample ``b`` is ``dl_a(z_b, y_b)/dz_b / B`` with
    ``l_a = NLL(a(z), y)``: the gradient of the batch-mean loss (spec §2 step 4); the alignment
    compares ``B`` times it with per-sample targets.
    """

    def __init__(self, net: nn.Module, *, input_shape=None, num_classes: int | None = None):
        super().__init__()
        if not isinstance(net, nn.Module):
            raise TypeError(f"`net` must be an nn.Module, got {type(net).__name__}")
        self.net = net
        self.input_shape = None if input_shape is None else _check_shape(input_shape, "input_shape")
        if num_classes is not None:
            check_scalar(num_classes, "num_classes", kind=int, low=2)
        self.num_classes = num_classes

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """Log-probabilities ``[B, C]`` of the smashed data ``z`` ``[B, *S]`` (float32 or
        float64, cast to the dtype of the network's parameters, as
        :meth:`LinearGradScalarAux.estimate` does; gradients come back in `z`'s dtype).

        Raises
        ------
        TypeError, ValueError
            For a `z` that is not a finite floating tensor of shape ``[B, *input_shape]``, that
            the network cannot take, or on which it does not return ``[B, C]``
            log-probabilities (:func:`check_log_probs`).
        """
        check_smashed(z, "z", self.input_shape)
        param = next(self.net.parameters(), None)
        try:
            out = self.net(z if param is None else z.to(param.dtype))
        except (RuntimeError, TypeError, ValueError, IndexError) as err:
            raise ValueError(
                f"`z` of per-sample shape {tuple(z.shape[1:])} does not fit the auxiliary "
                f"network: {err}"
            ) from err
        if not isinstance(out, torch.Tensor) or out.ndim != 2 or out.shape[0] != z.shape[0]:
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise ValueError(
                f"the auxiliary network must return log-probabilities [B, C], got {got}"
            )
        if self.num_classes is not None and out.shape[1] != self.num_classes:
            raise ValueError(
                f"the auxiliary network returns {out.shape[1]} classes, not "
                f"`num_classes` = {self.num_classes}"
            )
        check_log_probs(out, "the auxiliary network")
        return out

    def _check(self, z, y, g_star=None):
        check_smashed(z, "z", self.input_shape)
        check_labels(y, "y", z.shape[0], self.num_classes)
        if g_star is not None:
            check_tensor(g_star, "g_star", dtype=(torch.float32, torch.float64))
            if g_star.shape != z.shape:
                raise ValueError(
                    f"`g_star` must have the shape of `z` {tuple(z.shape)}, "
                    f"got {tuple(g_star.shape)}"
                )

    def _estimate(self, z, y, create_graph: bool) -> torch.Tensor:
        with torch.enable_grad():
            z = z.detach().requires_grad_(True)
            out = self(z)
            check_labels(y, "y", z.shape[0], out.shape[1])  # [0, C) also without `num_classes`
            loss = F.nll_loss(out, y, reduction="sum")
            (grad,) = torch.autograd.grad(loss, z, create_graph=create_graph)
        return grad

    def estimate(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Estimated gradient of the server's batch-mean loss w.r.t. the smashed data,
        ``g_hat_b = dl_a(z_b, y_b)/dz_b / B``: the client steps with ``z.backward(g_hat)``.

        Parameters
        ----------
        z : Tensor, shape [B, *S], float32 | float64
            Smashed data (cut-layer activations).
        y : Tensor, shape [B], int64
            Labels in ``[0, C)``.

        Returns
        -------
        Tensor, shape [B, *S], dtype of `z`
            Detached; the gradient of the batch-MEAN aux loss (spec §2 step 4, official
            ``F.nll_loss`` default reduction). Multiply by ``B`` for the per-sample gradients
            ``dl_a(z_b, y_b)/dz_b`` (the scale of the alignment targets).

        Raises
        ------
        TypeError
            If `z` is not floating or `y` not int64.
        ValueError
            If shapes mismatch (batch or cut shape), values are not finite, labels are out of
            range (``[0, C)``, also without `num_classes`) or the network's output is not
            log-probabilities.
        """
        self._check(z, y)
        return self._estimate(z, y, create_graph=False).detach() / z.shape[0]

    def alignment_loss(
        self, z: torch.Tensor, y: torch.Tensor, g_star: torch.Tensor, *, scale: float = 1.0
    ) -> torch.Tensor:
        """Alignment loss ``sum_b ||scale * dl_a(z_b, y_b)/dz_b - g*_b||^2`` (differentiable).

        Parameters
        ----------
        z : Tensor, shape [B, *S]
            Smashed data.
        y : Tensor, shape [B], int64
            Labels.
        g_star : Tensor, shape [B, *S]
            Target gradients (the server's, see :meth:`AlignmentBuffer.targets`).
        scale : float, default=1.0
            Multiplies the estimate (``1/B`` reproduces the official mean-loss estimate).

        Returns
        -------
        Tensor, shape [], differentiable w.r.t. the auxiliary model's parameters (double
        backward through autograd).

        Notes
        -----
        Source: FSL-SAGE Sec. 3 (alignment step, squared error between the auxiliary and server
        gradients); official ``src/algos/fsl_sage.py`` alignment loop.
        """
        self._check(z, y, g_star)
        check_scalar(scale, "scale")
        if not math.isfinite(scale):
            raise ValueError(f"`scale` must be finite, got {scale}")
        return self._alignment_loss(z, y, g_star, scale)

    def _alignment_loss(self, z, y, g_star, scale: float = 1.0) -> torch.Tensor:
        """``alignment_loss`` without the input checks (``align`` checks the buffer once)."""
        grad = self._estimate(z, y, create_graph=True)
        return ((scale * grad - g_star) ** 2).sum()


class LinearGradScalarAux(GradScalarAux):
    """Linear gradient-scalar model ``a(z) = log_softmax(W vec(z) + b)`` with closed forms.

    Parameters
    ----------
    in_features : int or tuple of int
        ``d``, or the cut shape ``S`` (then inputs are flattened and must have that shape).
    num_classes : int
        ``C``.

    Notes
    -----
    Source: official ``linear_grad_scalar`` auxiliary model (``models/aux_models``). The input
    gradient of ``l_a(z_b, y_b)`` is ``W^T (softmax(W z_b + b) - e_{y_b})`` (per sample);
    :meth:`estimate` divides it by ``B`` (batch-mean loss). The closed-form gradients of the
    alignment loss are derived in :meth:`alignment_grad`.
    """

    def __init__(self, in_features, num_classes: int):
        shape = _check_shape(in_features, "in_features")
        if not isinstance(num_classes, int) or num_classes < 2:
            raise ValueError(f"`num_classes` must be an int >= 2, got {num_classes!r}")
        d = math.prod(shape)
        net = nn.Sequential(nn.Flatten(), nn.Linear(d, num_classes), nn.LogSoftmax(dim=1))
        super().__init__(net, input_shape=shape, num_classes=num_classes)

    @property
    def linear(self) -> nn.Linear:
        """The ``nn.Linear`` holding ``W`` (``[C, d]``) and ``b`` (``[C]``)."""
        net = cast(nn.Sequential, self.net)  # built by __init__: Flatten, Linear, LogSoftmax
        return cast(nn.Linear, net[1])

    def _residual_parts(self, z, y):
        w, b = self.linear.weight, self.linear.bias
        flat = z.reshape(z.shape[0], -1).to(w.dtype)
        p = torch.softmax(torch.addmm(b, flat, w.T), dim=1)
        e = p - F.one_hot(y, w.shape[0]).to(w.dtype)
        return flat, p, e

    def estimate(self, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Closed form ``g_hat_b = W^T (softmax(W z_b + b) - e_{y_b}) / B`` (batch-mean loss);
        see :meth:`GradScalarAux.estimate` for shapes and errors."""
        self._check(z, y)
        with torch.no_grad():
            _, _, e = self._residual_parts(z, y)
            return (e @ self.linear.weight / z.shape[0]).reshape(z.shape).to(z.dtype)

    def alignment_grad(
        self, z: torch.Tensor, y: torch.Tensor, g_star: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Closed-form alignment loss and its gradients w.r.t. ``W`` and ``b``.

        With ``Z`` ``[B, d]``, ``P = softmax(Z W^T + b)``, ``E = P - Y``, residual
        ``R = E W - G*``, ``S = R W^T`` and ``G = P o (S - rowsum(P o S))``:
        ``L = sum ||R||^2``, ``dL/dW = 2 (E^T R + G^T Z)``, ``dL/db = 2 colsum(G)``.

        Parameters
        ----------
        z : Tensor, shape [B, *S]
        y : Tensor, shape [B], int64
        g_star : Tensor, shape [B, *S]
            Target gradients.

        Returns
        -------
        loss : Tensor, shape []
        grad_weight : Tensor, shape [C, d]
        grad_bias : Tensor, shape [C]
            All detached, in the dtype of ``W``.

        Raises
        ------
        TypeError, ValueError
            As :meth:`GradScalarAux.estimate`, and for a `g_star` of another shape.

        Notes
        -----
        Derivation (chain rule through the softmax Jacobian ``diag(p) - p p^T``) of the loss in
        FSL-SAGE Sec. 3 for the official ``linear_grad_scalar`` model; checked against autograd
        double backward in ``tests/test_aux.py``.
        """
        self._check(z, y, g_star)
        return self._alignment_grad(z, y, g_star)

    def _alignment_grad(self, z, y, g_star):
        """``alignment_grad`` without the input checks (``align`` checks the buffer once).

        Fused BLAS calls (``addmm``, ``dot``): five [B, d] x [d, C]-sized products and one
        pass over R for the loss (profiled in ``benchmarks/bench_align.py``).
        """
        with torch.no_grad():
            w = self.linear.weight
            flat, p, e = self._residual_parts(z, y)
            r = torch.addmm(g_star.reshape(flat.shape).to(w.dtype), e, w, beta=-1)  # E W - G*
            s = r @ w.T
            g = p * (s - (p * s).sum(dim=1, keepdim=True))
            loss = torch.dot(r.reshape(-1), r.reshape(-1))
            grad_w = 2 * torch.addmm(e.T @ r, g.T, flat)
            grad_b = 2 * g.sum(dim=0)
        return loss, grad_w, grad_b
