"""Flattening a multi-step input to [T, N] so that neurons sharing a τ are contiguous.

A per-neuron τ of shape P (broadcastable to one time step ``S = x.shape[1:]``) makes Λ
per-neuron: ``Λ[t, j, n] = λ_n^(t−j)``. Neurons with equal λ share one T×T matrix, so the
kernels take one Λ per *group* (the G = Π of the axes where P is not 1) and act on the
[T, G, M] view of x (M neurons per group): ``C = Λ_g x_g``, a batched GEMM with G·T² memory
instead of N·T² (:func:`fpt_snn.kernels.fpt_dense.grouped_matmul`). This module permutes the
τ axes of S to the front before flattening, so neuron n belongs to group ``n // M``.
"""

from __future__ import annotations

import math

import torch


class NeuronLayout:
    """The permutation of one time step's axes that puts τ's (non-1) axes first.

    Parameters
    ----------
    step_shape : tuple of int
        ``x.shape[1:]``.
    tau : float or Tensor
        A float or 0-d tensor (one group), or a tensor broadcastable to `step_shape`.
    """

    def __init__(self, step_shape, tau):
        self.step_shape = tuple(step_shape)
        ndim = len(self.step_shape)
        tau_shape = tuple(tau.shape) if isinstance(tau, torch.Tensor) else ()
        padded = (1,) * (ndim - len(tau_shape)) + tau_shape
        grouped = [d for d in range(ndim) if padded[d] != 1]
        self.perm = grouped + [d for d in range(ndim) if padded[d] == 1]
        self.inverse = [self.perm.index(d) for d in range(ndim)]
        self.groups = math.prod([self.step_shape[d] for d in grouped])
        self.permuted_shape = tuple([self.step_shape[d] for d in self.perm])

    def flatten(self, x):
        """[T, *S] → [T, N], neurons in group-major order."""
        return x.permute(0, *[d + 1 for d in self.perm]).reshape(x.shape[0], -1)

    def flatten_step(self, v):
        """[*S] → [N] in the same order."""
        return v.permute(*self.perm).reshape(-1)

    def restore(self, y):
        """[T, N] → [T, *S] (inverse of :meth:`flatten`), contiguous like a fresh [T, *S] tensor.

        Contiguous so that spikingjelly-style ``.view(T * B, C, H, W)`` works on the output.
        """
        y = y.reshape(y.shape[0], *self.permuted_shape)
        return y.permute(0, *[d + 1 for d in self.inverse]).contiguous()

    def restore_step(self, v):
        """[N] → [*S] (inverse of :meth:`flatten_step`), contiguous."""
        return v.reshape(self.permuted_shape).permute(*self.inverse).contiguous()

    def per_neuron(self, value):
        """A float or 0-d tensor unchanged; a broadcastable tensor as its [N] neuron vector."""
        if not isinstance(value, torch.Tensor) or value.ndim == 0:
            return value
        return self.flatten_step(value.expand(self.step_shape))

    def per_group(self, value):
        """A float or 0-d tensor unchanged; a tensor shaped like τ as its [G] group vector."""
        if not isinstance(value, torch.Tensor) or value.ndim == 0:
            return value
        return self.per_neuron(value).reshape(self.groups, -1)[:, 0]
