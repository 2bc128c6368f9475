"""The FINOLA recurrence: one vector q grows into a feature map by a shared norm+linear step.

Axes: N images, M paths, C channels, h × w map; y indexes rows, x columns; (y_c, x_c) is the
centre where q is placed (default (h // 2, w // 2)).

Step (Chen et al., arXiv 2305.16319, "first-order norm+linear autoregression"; ICML 2025,
arXiv 2310.12976)::

    z(x+1, y) = z(x, y) + A ẑ(x, y)        z(x, y+1) = z(x, y) + B ẑ(x, y)

with ẑ = LN(z) over channels, no affine, population variance, ε inside the square root
(exactly ``F.layer_norm(z, (C,), eps=eps)``; ``norm="rms"`` is ``F.rms_norm``, ``"none"`` the
identity). Toward −x / −y [our reconstruction]: ``reverse="negate"`` steps with −A / −B,
``reverse="separate"`` with learned A₋ / B₋ (z(x−1, y) = z(x, y) + A₋ ẑ(x, y)).
Generation order [our reconstruction of "q placed at the center"]: ``order="yx"`` first grows the
centre column along y, then every row along x in parallel; ``"xy"`` swaps the roles. With
``norm="none"`` and ``order="yx"`` this is z(x_c+i, y_c+j) = (I ± A)^|i| (I ± B)^|j| q.

Cost: max(y_c, h−1−y_c) + max(x_c, w−1−x_c) sequential steps, each a (rows, C) × (C, C) GEMM
per direction. The scan's backward recomputes ẑ from the stored map (the map is the only saved
activation); ``naive=True`` is the position-by-position loop it is tested against.
"""

from __future__ import annotations

import numbers
import os

import torch
import torch.nn.functional as F

from icml25_core import BACKEND_ENV, check_choice, check_scalar, select_backend

NORMS = ("layernorm", "rms", "none")
ORDERS = ("yx", "xy")
REVERSES = ("negate", "separate")
BACKENDS = ("auto", "torch", "triton")

__all__ = ["BACKENDS", "NORMS", "ORDERS", "REVERSES", "finola_scan", "normalize"]


def normalize(z: torch.Tensor, norm: str = "layernorm", eps: float = 1e-6) -> torch.Tensor:
    """ẑ over the last (channel) axis: ``F.layer_norm`` (no affine, population variance, ε in
    the square root), ``F.rms_norm`` (z / √(mean z² + ε)) or the identity ("none").

    Raises
    ------
    ValueError
        If `norm` is not one of ``NORMS`` or `eps` is not > 0.
    """
    check_choice(norm, "norm", NORMS)
    check_scalar(eps, "eps", kind=numbers.Real, low=0.0, inclusive="neither")
    return _normalize(z, norm, eps)


def _normalize(z: torch.Tensor, norm: str, eps: float) -> torch.Tensor:
    if norm == "layernorm":
        return F.layer_norm(z, (z.shape[-1],), eps=eps)
    if norm == "rms":
        return F.rms_norm(z, (z.shape[-1],), eps=eps)
    return z


def _torch_step(z: torch.Tensor, m: torch.Tensor, out: torch.Tensor, norm: str, eps: float):
    """out ← z + ẑ Mᵀ for rows z (R, C)."""
    torch.addmm(z, _normalize(z, norm, eps), m.t(), out=out)


def _torch_step_vjp(z, m, g, norm: str, eps: float):
    """For z' = z + ẑ Mᵀ and g = ∂L/∂z': (∂L/∂z, ∂L/∂M) = (g + J_ẑ(z)ᵀ (g M), gᵀ ẑ); ẑ and
    its vector-Jacobian product come from torch's own LayerNorm forward/backward kernels
    (``native_layer_norm``), or from autograd for RMS."""
    dzhat = g @ m
    if norm == "layernorm":
        C = z.shape[-1]
        zhat, mean, rstd = torch.ops.aten.native_layer_norm(z, [C], None, None, eps)
        dz = torch.ops.aten.native_layer_norm_backward(
            dzhat, z, [C], mean, rstd, None, None, [True, False, False]
        )[0]
    elif norm == "rms":
        with torch.enable_grad():
            leaf = z.detach().requires_grad_()
            zhat = _normalize(leaf, norm, eps)
            dz = torch.autograd.grad(zhat, leaf, dzhat)[0]
        zhat = zhat.detach()
    else:
        zhat, dz = z, dzhat
    return g + dz, g.t() @ zhat


def _kernels(backend: str):
    """The (step, step_vjp) pair of a backend ("torch" or "triton")."""
    if backend == "triton":
        from .kernels.scan_triton import triton_step, triton_step_vjp

        return triton_step, triton_step_vjp
    return _torch_step, _torch_step_vjp


class _LineScan(torch.autograd.Function):
    """Rows z0 (R, C) stepped n_fwd times with M_fwd and n_bwd times with M_bwd; returns the
    line (R, n_bwd + 1 + n_fwd, C) with z0 at index n_bwd. Backward walks the steps in reverse
    and recomputes ẑ from the saved line."""

    @staticmethod
    def forward(ctx, z0, m_fwd, m_bwd, n_fwd: int, n_bwd: int, norm: str, eps: float, backend):
        step, _ = _kernels(backend)
        R, C = z0.shape
        line = z0.new_empty(R, n_bwd + 1 + n_fwd, C)
        line[:, n_bwd] = z0
        for k in range(1, n_fwd + 1):
            step(line[:, n_bwd + k - 1], m_fwd, line[:, n_bwd + k], norm, eps)
        for k in range(1, n_bwd + 1):
            step(line[:, n_bwd - k + 1], m_bwd, line[:, n_bwd - k], norm, eps)
        ctx.save_for_backward(line, m_fwd, m_bwd)
        ctx.setup = (n_fwd, n_bwd, norm, eps, backend)
        return line

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g_line):
        line, m_fwd, m_bwd = ctx.saved_tensors
        n_fwd, n_bwd, norm, eps, backend = ctx.setup
        _, step_vjp = _kernels(backend)
        g = g_line.clone()
        dm_fwd = torch.zeros_like(m_fwd)
        dm_bwd = torch.zeros_like(m_bwd)
        for k in range(n_fwd, 0, -1):
            i = n_bwd + k
            dz, dm = step_vjp(line[:, i - 1], m_fwd, g[:, i], norm, eps)
            g[:, i - 1] += dz
            dm_fwd += dm
        for k in range(n_bwd, 0, -1):
            i = n_bwd - k
            dz, dm = step_vjp(line[:, i + 1], m_bwd, g[:, i], norm, eps)
            g[:, i + 1] += dz
            dm_bwd += dm
        return g[:, n_bwd], dm_fwd, dm_bwd, None, None, None, None, None


def _naive_map(q, first, second, h, w, yc, xc, norm, eps, order):
    """The position-by-position reference: every cell from its neighbour toward the centre."""
    (f_fwd, f_bwd), (s_fwd, s_bwd) = first, second
    cell = {(yc, xc): q}

    def step(z, m):
        return z + _normalize(z, norm, eps) @ m.t()

    if order == "yx":
        for y in range(yc + 1, h):
            cell[y, xc] = step(cell[y - 1, xc], f_fwd)
        for y in range(yc - 1, -1, -1):
            cell[y, xc] = step(cell[y + 1, xc], f_bwd)
        for y in range(h):
            for x in range(xc + 1, w):
                cell[y, x] = step(cell[y, x - 1], s_fwd)
            for x in range(xc - 1, -1, -1):
                cell[y, x] = step(cell[y, x + 1], s_bwd)
    else:
        for x in range(xc + 1, w):
            cell[yc, x] = step(cell[yc, x - 1], f_fwd)
        for x in range(xc - 1, -1, -1):
            cell[yc, x] = step(cell[yc, x + 1], f_bwd)
        for x in range(w):
            for y in range(yc + 1, h):
                cell[y, x] = step(cell[y - 1, x], s_fwd)
            for y in range(yc - 1, -1, -1):
                cell[y, x] = step(cell[y + 1, x], s_bwd)
    rows = [torch.stack([cell[y, x] for x in range(w)], dim=-1) for y in range(h)]
    return torch.stack(rows, dim=-2)  # (R, C, h, w)


def check_grid(grid, center=None) -> tuple[tuple[int, int], tuple[int, int]]:
    """(h, w) and the centre (y_c, x_c), default (h // 2, w // 2).

    Raises
    ------
    ValueError, TypeError
        If `grid` is not two ints >= 1, or `center` is not two ints inside the grid.
    """
    if isinstance(grid, numbers.Integral) and not isinstance(grid, bool):
        grid = (grid, grid)
    if not isinstance(grid, tuple | list) or len(grid) != 2:
        raise ValueError(f"`grid` must be (h, w) or one int, got {grid!r}")
    for n, name in zip(grid, ("grid h", "grid w"), strict=True):
        check_scalar(n, name, kind=numbers.Integral, low=1)
    h, w = int(grid[0]), int(grid[1])
    if center is None:
        return (h, w), (h // 2, w // 2)
    if not isinstance(center, tuple | list) or len(center) != 2:
        raise ValueError(f"`center` must be (y_c, x_c), got {center!r}")
    check_scalar(center[0], "center y_c", kind=numbers.Integral, low=0, high=h - 1)
    check_scalar(center[1], "center x_c", kind=numbers.Integral, low=0, high=w - 1)
    return (h, w), (int(center[0]), int(center[1]))


def _check_matrix(m, name: str, q: torch.Tensor) -> None:
    C = q.shape[-1]
    if not isinstance(m, torch.Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(m).__name__}")
    if m.shape != (C, C):
        raise ValueError(f"`{name}` must have shape ({C}, {C}) for C = {C}, got {tuple(m.shape)}")
    if m.dtype != q.dtype or m.device != q.device:
        raise ValueError(
            f"`{name}` must have q's dtype and device ({q.dtype}, {q.device}), got "
            f"({m.dtype}, {m.device})"
        )
    if not torch.isfinite(m).all():
        raise ValueError(f"`{name}` contains NaN or Inf")


def check_q(q, channels: int | None = None) -> torch.Tensor:
    """Validate an initial condition q: (N, C) or (N, M, C), float32/float64, finite.

    Raises
    ------
    TypeError, ValueError
        Naming `q`: not a tensor, wrong rank, empty, C ≠ `channels`, not floating, NaN or Inf.
    """
    if not isinstance(q, torch.Tensor):
        raise TypeError(f"`q` must be a torch.Tensor, got {type(q).__name__}")
    if q.ndim not in (2, 3) or q.numel() == 0:
        raise ValueError(
            f"`q` must be a non-empty (N, C) or (N, M, C) tensor, got {tuple(q.shape)}"
        )
    if channels is not None and q.shape[-1] != channels:
        raise ValueError(f"`q` must have C = {channels} channels (last axis), got {q.shape[-1]}")
    if q.dtype not in (torch.float32, torch.float64):
        raise ValueError(f"`q` must be float32 or float64, got {q.dtype}")
    if not torch.isfinite(q).all():
        raise ValueError("`q` contains NaN or Inf")
    return q


def resolve_backend(backend: str, device: torch.device, dtype: torch.dtype) -> str:
    """ "torch" or "triton": "auto" takes Triton for float32 on a CUDA device when it is
    installed (or when ``ICML25_BACKEND=triton-interpret``), else PyTorch.

    Raises
    ------
    RuntimeError
        If `backend` is "triton" and Triton cannot run here (no GPU and no TRITON_INTERPRET=1),
        or the input is not float32 (the kernel's precision).
    """
    check_choice(backend, "backend", BACKENDS)
    if backend == "triton" and dtype != torch.float32:
        raise RuntimeError(f"backend='triton' runs float32, got {dtype}; use backend='torch'")
    if backend == "torch" or dtype != torch.float32:
        return "torch"
    requested = os.environ.get(BACKEND_ENV)
    if backend == "triton" or requested in ("triton", "triton-interpret"):
        available = select_backend(override=requested if requested else None)
        if available in ("triton", "triton-interpret"):
            return "triton"
        if backend == "triton":
            raise RuntimeError(
                "backend='triton' needs Triton with a CUDA GPU, or TRITON_INTERPRET=1 for the "
                "interpreter; backend='torch' runs anywhere"
            )
        return "torch"
    if requested != "torch" and device.type == "cuda" and select_backend() == "triton":
        return "triton"
    return "torch"


def finola_scan(
    q: torch.Tensor,
    A: torch.Tensor,
    B: torch.Tensor,
    grid,
    *,
    center=None,
    order: str = "yx",
    reverse: str = "negate",
    A_rev: torch.Tensor | None = None,
    B_rev: torch.Tensor | None = None,
    norm: str = "layernorm",
    eps: float = 1e-6,
    naive: bool = False,
    backend: str = "auto",
) -> torch.Tensor:
    """Grow the feature map of q by the FINOLA recurrence (module docstring; Chen et al. 2025).

    Parameters
    ----------
    q : Tensor of shape (N, C) or (N, M, C), float32 or float64
        Initial condition(s), placed at the centre.
    A, B : Tensor of shape (C, C), q's dtype and device
        Step matrices along x (columns) and y (rows).
    grid : int or (int, int)
        Map size (h, w).
    center : (int, int), optional
        (y_c, x_c); default (h // 2, w // 2).
    order : {"yx", "xy"}, default="yx"
        "yx": centre column along y first, then every row along x.
    reverse : {"negate", "separate"}, default="negate"
        Steps toward −x / −y: with −A / −B, or with `A_rev` / `B_rev`.
    A_rev, B_rev : Tensor of shape (C, C), optional
        Required with ``reverse="separate"``; not used with ``"negate"``.
    norm : {"layernorm", "rms", "none"}, default="layernorm"
    eps : float, default=1e-6
        ε inside the normaliser's square root.
    naive : bool, default=False
        Run the position-by-position reference loop (plain autograd) instead of the scan.
    backend : {"auto", "torch", "triton"}, default="auto"
        Kernel of the scan's steps (``ICML25_BACKEND`` overrides "auto").

    Returns
    -------
    Tensor of shape (N, C, h, w), or (N, M, C, h, w) for a 3-D q
        The map z, q's dtype and device.

    Raises
    ------
    TypeError, ValueError
        Naming the argument: q not (N, C) / (N, M, C) or not finite; A, B not (C, C) of q's
        dtype and device; grid < 1; centre outside the grid; LN/RMS with C < 2; a missing
        `A_rev` / `B_rev`; an unknown option.
    RuntimeError
        If ``backend="triton"`` cannot run here.
    """
    check_q(q)
    check_choice(order, "order", ORDERS)
    check_choice(reverse, "reverse", REVERSES)
    check_choice(norm, "norm", NORMS)
    check_scalar(eps, "eps", kind=numbers.Real, low=0.0, inclusive="neither")
    if norm != "none" and q.shape[-1] < 2:
        raise ValueError(f"norm={norm!r} needs C >= 2 channels, got C = {q.shape[-1]}")
    (h, w), (yc, xc) = check_grid(grid, center)
    _check_matrix(A, "A", q)
    _check_matrix(B, "B", q)
    if reverse == "separate":
        if A_rev is None or B_rev is None:
            raise ValueError("reverse='separate' needs `A_rev` and `B_rev`")
        _check_matrix(A_rev, "A_rev", q)
        _check_matrix(B_rev, "B_rev", q)
        a_bwd, b_bwd = A_rev, B_rev
    else:
        a_bwd, b_bwd = -A, -B
    kernel = resolve_backend(backend, q.device, q.dtype)
    rows = q.reshape(-1, q.shape[-1])
    R, C = rows.shape
    first, second = ((B, b_bwd), (A, a_bwd)) if order == "yx" else ((A, a_bwd), (B, b_bwd))
    if naive:
        z = _naive_map(rows, first, second, h, w, yc, xc, norm, eps, order)
    else:
        n1, c1 = (h, yc) if order == "yx" else (w, xc)
        n2, c2 = (w, xc) if order == "yx" else (h, yc)
        scan = _LineScan.apply
        centre_line = scan(rows, *first, n1 - 1 - c1, c1, norm, eps, kernel)
        lines = scan(centre_line.reshape(R * n1, C), *second, n2 - 1 - c2, c2, norm, eps, kernel)
        z = lines.reshape(R, n1, n2, C)
        z = z.permute(0, 3, 1, 2) if order == "yx" else z.permute(0, 3, 2, 1)
    return z.reshape(*q.shape[:-1], C, h, w)
