"""``FINOLA``: the recurrence as an ``nn.Module`` holding only its coefficient matrices.

The module has no positional parameter: every position of the map comes from q through the
same A and B (Chen et al., ICML 2025, abstract), so its state is A, B (and A₋, B₋ with
``reverse="separate"``, or the speeds λ with ``parametrization="wave"``).
"""

from __future__ import annotations

import math
import numbers

import torch
from torch import nn

from icml25_core import check_choice, check_scalar

from .functional import NORMS, ORDERS, REVERSES, check_grid, check_q, finola_scan

PARAMETRIZATIONS = ("free", "wave")
COMBINES = ("mean", "sum")

__all__ = ["COMBINES", "FINOLA", "PARAMETRIZATIONS"]


class FINOLA(nn.Module):
    """Decode q (N, C) or (N, M, C) into a map (N, C, h, w) by the FINOLA recurrence.

    Parameters
    ----------
    channels : int
        C.
    grid : int or (int, int)
        Map size (h, w).
    center : (int, int), optional
        Where q sits; default (h // 2, w // 2).
    order, reverse, norm, eps
        As in :func:`finola.functional.finola_scan`.
    paths : int, default=1
        M: q holds M initial conditions (N, M, C) that share A and B [v1 abstract: "a sum of
        special solutions"; our reconstruction]; their maps are combined by `combine`.
    combine : {"mean", "sum"}, default="mean"
    parametrization : {"free", "wave"}, default="free"
        "free": A and B are parameters. "wave": B and real speeds λ (C,) are, and A = diag(λ) B,
        so AB⁻¹ = diag(λ) exactly [our reading of the v1 abstract].
    init_scale : float, default=0.3
        Initial A, B ~ init_scale · N(0, 1) / √C (chosen here: a small run trained with it);
        A₋, B₋ start at −A, −B (the "negate" rule); λ starts at init_scale · N(0, 1).
    backend : {"auto", "torch", "triton"}, default="auto"

    Raises
    ------
    TypeError, ValueError
        On an argument out of range, naming it (C < 2 with LN/RMS, grid < 1, ...).

    Examples
    --------
    >>> layer = FINOLA(64, grid=8)
    >>> layer(torch.randn(4, 64)).shape
    torch.Size([4, 64, 8, 8])
    """

    def __init__(
        self, channels: int, grid, *, center=None, order: str = "yx", reverse: str = "negate",
        norm: str = "layernorm", eps: float = 1e-6, paths: int = 1, combine: str = "mean",
        parametrization: str = "free", init_scale: float = 0.3, backend: str = "auto",
    ):  # fmt: skip
        super().__init__()
        check_scalar(channels, "channels", kind=numbers.Integral, low=1)
        check_choice(order, "order", ORDERS)
        check_choice(reverse, "reverse", REVERSES)
        check_choice(norm, "norm", NORMS)
        check_choice(combine, "combine", COMBINES)
        check_choice(parametrization, "parametrization", PARAMETRIZATIONS)
        check_scalar(paths, "paths", kind=numbers.Integral, low=1)
        check_scalar(eps, "eps", kind=numbers.Real, low=0.0, inclusive="neither")
        check_scalar(init_scale, "init_scale", kind=numbers.Real, low=0.0, inclusive="neither")
        if norm != "none" and channels < 2:
            raise ValueError(f"norm={norm!r} needs channels >= 2, got {channels}")
        if parametrization == "wave" and reverse == "separate":
            raise ValueError(
                "parametrization='wave' with reverse='separate' would leave A₋, B₋ free (their "
                "A₋B₋⁻¹ neither diagonal nor analysed): use reverse='negate'"
            )
        (h, w), center = check_grid(grid, center)
        self.channels, self.grid, self.center = int(channels), (h, w), center
        self.order, self.reverse, self.norm, self.eps = order, reverse, norm, float(eps)
        self.paths, self.combine, self.parametrization = int(paths), combine, parametrization
        self.backend = backend
        C = self.channels
        std = init_scale / math.sqrt(C)
        if parametrization == "wave":
            self.speeds = nn.Parameter(torch.randn(C) * init_scale)
        else:
            self.A = nn.Parameter(torch.randn(C, C) * std)
        self.B = nn.Parameter(torch.randn(C, C) * std)
        if reverse == "separate":
            self.A_rev = nn.Parameter(-self.A.detach().clone())
            self.B_rev = nn.Parameter(-self.B.detach().clone())

    def __getattr__(self, name: str):
        # With parametrization="wave", A is not a parameter but diag(λ) B (AB⁻¹ = diag(λ)).
        if name == "A" and self.__dict__.get("parametrization") == "wave":
            return self.speeds[:, None] * self.B
        return super().__getattr__(name)

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        """The map z (N, C, h, w) of q (N, C), or of q (N, M, C) combined over its M paths.

        Raises
        ------
        ValueError
            If q is not (N, C) with ``paths=1`` or (N, paths, C), has C ≠ `channels`, or holds
            NaN/Inf.

        Notes
        -----
        Runs in the wider of q's dtype and the layer's (float16/bfloat16 q, e.g. under
        ``torch.autocast``, runs in float32, autocast off inside), and returns that dtype.
        """
        if isinstance(q, torch.Tensor) and q.dtype in (torch.float16, torch.bfloat16):
            q = q.float()  # autocast: the recurrence runs in float32, as LayerNorm does
        check_q(q, self.channels)
        expected = 2 if self.paths == 1 else 3
        if q.ndim != expected or (q.ndim == 3 and q.shape[1] != self.paths):
            shape = "(N, C)" if self.paths == 1 else f"(N, {self.paths}, C)"
            raise ValueError(
                f"`q` must have shape {shape} for paths={self.paths}, got {tuple(q.shape)}"
            )
        dtype = torch.promote_types(q.dtype, self.B.dtype)  # the wider of q's and the layer's
        q, A, B = q.to(dtype), self.A.to(dtype), self.B.to(dtype)
        A_rev = B_rev = None
        if self.reverse == "separate":
            A_rev, B_rev = self.A_rev.to(dtype), self.B_rev.to(dtype)
        with torch.autocast(q.device.type, enabled=False):
            z = finola_scan(
                q, A, B, self.grid, center=self.center, order=self.order, reverse=self.reverse,
                A_rev=A_rev, B_rev=B_rev, norm=self.norm, eps=self.eps, backend=self.backend,
            )  # fmt: skip
        if self.paths > 1:
            z = z.mean(1) if self.combine == "mean" else z.sum(1)
        return z

    def extra_repr(self) -> str:
        return (
            f"channels={self.channels}, grid={self.grid}, center={self.center}, "
            f"order={self.order!r}, reverse={self.reverse!r}, norm={self.norm!r}, "
            f"eps={self.eps:g}, paths={self.paths}, combine={self.combine!r}, "
            f"parametrization={self.parametrization!r}"
        )
