"""Exact communication accounting, in bytes, by kind and direction.

Source: official ``srijith1996/FSL-SAGE`` accounting: every tensor counted as float32
(4 bytes per element of parameters + buffers, or of the smashed data actually sent); labels are
not counted officially, so here they go under their own kind ``labels`` and are excluded from
:meth:`CommMeter.official_total`.
"""

from __future__ import annotations

from collections import defaultdict

from torch import nn

from icml25_core import check_choice, check_scalar

__all__ = ["DIRECTIONS", "KINDS", "CommMeter", "module_nbytes"]

#: What can be sent: smashed data (client -> S-server), cut-layer gradients (S-server -> client,
#: SplitFed only), labels, the client model (FedAvg: the whole model) and the auxiliary model.
KINDS = ("smashed", "gradients", "labels", "client_model", "aux_model")
#: ``up`` = client -> server, ``down`` = server -> client.
DIRECTIONS = ("up", "down")


def module_nbytes(module: nn.Module) -> int:
    """Official size of a model in bytes: ``4 x`` (number of parameter and buffer elements).

    Parameters
    ----------
    module : nn.Module

    Returns
    -------
    int
        Bytes, counting every element as float32 (official accounting).
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"`module` must be an nn.Module, got {type(module).__name__}")
    numel = sum(p.numel() for p in module.parameters()) + sum(b.numel() for b in module.buffers())
    return 4 * numel


class CommMeter:
    """Bytes communicated, by kind (:data:`KINDS`) and direction (:data:`DIRECTIONS`).

    Examples
    --------
    >>> meter = CommMeter()
    >>> meter.add("smashed", "up", 4096)
    >>> meter.add("labels", "up", 64)
    >>> meter.official_total(), meter.total()
    (4096, 4160)
    """

    def __init__(self):
        self.bytes: dict[tuple[str, str], int] = defaultdict(int)

    def add(self, kind: str, direction: str, nbytes: int) -> None:
        """Count ``nbytes`` bytes of ``kind`` sent in ``direction``.

        Raises
        ------
        ValueError
            For an unknown kind or direction, or negative ``nbytes``.
        """
        check_choice(kind, "kind", KINDS)
        check_choice(direction, "direction", DIRECTIONS)
        check_scalar(nbytes, "nbytes", kind=int, low=0)
        self.bytes[(kind, direction)] += int(nbytes)

    def total(self, kind: str | None = None, direction: str | None = None) -> int:
        """Bytes of ``kind`` in ``direction`` (``None`` = all).

        Raises
        ------
        ValueError
            For a `kind` or `direction` that is neither ``None`` nor a known name.
        """
        if kind is not None:
            check_choice(kind, "kind", KINDS)
        if direction is not None:
            check_choice(direction, "direction", DIRECTIONS)
        return sum(
            n
            for (k, d), n in self.bytes.items()
            if (kind is None or k == kind) and (direction is None or d == direction)
        )

    def official_total(self) -> int:
        """Bytes the official code counts: everything but ``labels``."""
        return self.total() - self.total("labels")

    def as_dict(self) -> dict[str, int]:
        """``{"kind/direction": bytes}`` for reports and checkpoints."""
        return {f"{k}/{d}": n for (k, d), n in sorted(self.bytes.items())}

    @classmethod
    def from_dict(cls, data: dict[str, int]) -> CommMeter:
        """Inverse of :meth:`as_dict`.

        Raises
        ------
        ValueError, TypeError
            For a key that is not ``"kind/direction"`` with known names, or a bad byte count.
        """
        if not isinstance(data, dict):
            raise TypeError(f"`data` must be a dict, got {type(data).__name__}")
        meter = cls()
        for key, n in data.items():
            parts = key.split("/") if isinstance(key, str) else []
            if len(parts) != 2:
                raise ValueError(f"`data` keys must look like 'smashed/up', got {key!r}")
            meter.add(parts[0], parts[1], n)
        return meter
