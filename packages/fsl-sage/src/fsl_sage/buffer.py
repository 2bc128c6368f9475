"""The per-client FIFO alignment buffer of smashed data and its gradient targets.

Source: official ``srijith1996/FSL-SAGE`` ``src/algos/fsl_sage.py``: the S-server stores every
smashed batch it receives from client ``i`` in a dataset capped at ``max_dataset_size`` (= M,
default 1000) samples, oldest dropped first, and aligns client ``i``'s auxiliary model on it.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from icml25_core import check_scalar

from .aux import check_labels, check_smashed

__all__ = ["AlignmentBuffer"]


class AlignmentBuffer:
    """FIFO buffer of the last ``max_size`` smashed samples ``(z_b, y_b)`` of one client.

    Parameters
    ----------
    max_size : int, default=1000
        ``M``, official ``max_dataset_size`` (hydra config default 1000).

    Raises
    ------
    ValueError
        If `max_size` < 1.
    """

    def __init__(self, max_size: int = 1000):
        check_scalar(max_size, "max_size", kind=int, low=1)
        self.max_size = int(max_size)
        self.z: torch.Tensor | None = None
        self.y: torch.Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.y is None else int(self.y.shape[0])

    def add(self, z: torch.Tensor, y: torch.Tensor) -> None:
        """Append a smashed batch and drop the oldest samples beyond ``max_size``.

        Parameters
        ----------
        z : Tensor, shape [B, *S], float32 | float64
            Smashed data (stored detached).
        y : Tensor, shape [B], int64
            Its labels.

        Raises
        ------
        TypeError, ValueError
            For a non-tensor, wrong dtype, NaN/inf, empty batch, mismatched batch sizes or a
            per-sample shape that differs from what the buffer already holds.
        """
        check_smashed(z, "z", None if self.z is None else tuple(self.z.shape[1:]))
        check_labels(y, "y", z.shape[0], None)
        z, y = z.detach().clone(), y.detach().clone()
        if self.z is not None and self.y is not None:
            z, y = torch.cat([self.z, z]), torch.cat([self.y, y])
        self.z, self.y = z[-self.max_size :], y[-self.max_size :]

    def state_dict(self) -> dict:
        """The stored samples (for checkpoints)."""
        return {"max_size": self.max_size, "z": self.z, "y": self.y}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` returned.

        Raises
        ------
        ValueError, TypeError
            If `state` is not a dict with keys ``max_size``, ``z``, ``y`` holding valid values.
        """
        if not isinstance(state, dict) or set(state) != {"max_size", "z", "y"}:
            got = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"`state` must be a dict with keys max_size, z, y; got {got}")
        check_scalar(state["max_size"], "state['max_size']", kind=int, low=1)
        z, y = state["z"], state["y"]
        if (z is None) != (y is None):
            raise ValueError("`state` must hold both `z` and `y` or neither")
        if z is not None:
            check_smashed(z, "state['z']", None)
            check_labels(y, "state['y']", z.shape[0], None)
        self.max_size, self.z, self.y = int(state["max_size"]), z, y

    def targets(self, server_model: nn.Module, *, mean: bool = False):
        """Per-sample server gradients ``g*_b = dCE(theta_s(z_b), y_b)/dz_b`` on the buffer.

        Parameters
        ----------
        server_model : nn.Module
            Maps ``[N, *S]`` to log-probabilities ``[N, C]``. Run in train mode (as officially),
            but every parameter, buffer (BN running stats, ``num_batches_tracked``), ``.grad``
            and the train/eval flag are left exactly as they were.
        mean : bool, default=False
            Return the gradient of the mean loss over the buffer (``g*/M``, the official scale)
            instead of per-sample gradients.

        Returns
        -------
        z : Tensor, shape [M, *S]
        y : Tensor, shape [M], int64
        g_star : Tensor, shape [M, *S], dtype of ``z``

        Raises
        ------
        TypeError
            If `server_model` is not an ``nn.Module``.
        ValueError
            If the buffer is empty, the buffered data does not fit `server_model` or a buffered
            label is not below its number of classes.

        Notes
        -----
        Source: official ``fsl_sage.py`` target pass (server in train mode over the whole
        buffer); unlike it, BN statistics are not updated and targets are per sample (spec
        pitfalls: the official mean-over-M scale only matches its alignment batch when both are
        1000).
        """
        if self.z is None or self.y is None:
            raise ValueError("the alignment buffer is empty: `add` smashed data first")
        if not isinstance(server_model, nn.Module):
            raise TypeError(
                f"`server_model` must be an nn.Module, got {type(server_model).__name__}"
            )
        saved = copy.deepcopy(server_model.state_dict())
        was_training = {m: m.training for m in server_model.modules()}
        server_model.train()
        try:
            z = self.z.detach().clone().requires_grad_(True)
            with torch.enable_grad():
                try:
                    out = server_model(z)
                except (RuntimeError, TypeError, ValueError, IndexError) as err:
                    raise ValueError(
                        f"the buffered smashed data (per-sample shape {tuple(z.shape[1:])}) does "
                        f"not fit `server_model`: {err}"
                    ) from err
                if not isinstance(out, torch.Tensor) or out.ndim != 2:
                    raise ValueError("`server_model` must return log-probabilities [N, C]")
                if int(self.y.max()) >= out.shape[1]:
                    raise ValueError(
                        f"the buffer holds label {int(self.y.max())} but `server_model` has "
                        f"{out.shape[1]} classes"
                    )
                loss = F.nll_loss(out, self.y, reduction="mean" if mean else "sum")
                (g_star,) = torch.autograd.grad(loss, z)
        finally:
            server_model.load_state_dict(saved)
            for module, flag in was_training.items():
                module.training = flag
        return self.z, self.y, g_star.detach()
