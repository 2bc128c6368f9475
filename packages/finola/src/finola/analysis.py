"""The learned coefficient matrices read as a bank of one-way wave equations (spec §2 "Wave view").

Where both FINOLA steps leave the same point, Δ_x z = A ẑ and Δ_y z = B ẑ, so

    Δ_x z = M Δ_y z,        M = A B⁻¹        (needs B invertible).

With M = V Λ V⁻¹ and ζ = V⁻¹ z this splits into C scalar equations Δ_x ζ_k = λ_k Δ_y ζ_k, the
discrete form of the one-way wave (transport) equation ∂ζ_k/∂x = λ_k ∂ζ_k/∂y, whose solutions
for a real λ_k are the travelling waves f_k(y + λ_k x). The eigenvalues λ_k do not depend on the
image: they are the "speeds" (Chen et al., ICML 2025, arXiv 2310.12976, v1 abstract).

What is and is not claimed. Diagonalizability of a generic matrix is automatic (the
non-diagonalizable ones have measure zero), so "M is diagonalizable" says nothing by itself: the
claim worth reporting is a *well-conditioned* V (``cond_V``, columns normalised to unit norm
first) and invertible A and B as *conditioning* (``cond_A``, ``cond_B``), not exact rank, and
speeds that are stable across training seeds (:func:`compare_runs`). The identity Δ_x ζ = Λ Δ_y ζ
is exact only on the cells listed in :func:`pde_residual`; elsewhere it is an approximation whose
relative residual that function measures.

Everything is computed in float64 / complex128 on the CPU from torch tensors or numpy arrays
(``torch.linalg.solve`` / ``eig`` / ``svdvals``; the Hungarian matching is
``scipy.optimize.linear_sum_assignment``, from the optional extra ``finola[analysis]``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from icml25_core import check_choice, check_scalar
from icml25_core.extras import requires_extra

from .functional import NORMS, ORDERS, check_grid, normalize

__all__ = ["WaveAnalysis", "compare_runs", "pde_residual", "wave_analysis"]

F64 = torch.float64
C128 = torch.complex128
_EPS = float(np.finfo(np.float64).eps)


def _as_float64(x, name: str, ndim: int) -> torch.Tensor:
    """`x` (torch tensor or array-like of real numbers) as a float64 CPU tensor, checked."""
    if isinstance(x, torch.Tensor):
        t = x.detach()
        if t.is_complex() or t.dtype == torch.bool:
            raise ValueError(f"`{name}` must hold real numbers, got dtype {t.dtype}")
        t = t.to(device="cpu", dtype=F64)
    else:
        try:
            arr = np.asarray(x)
        except (TypeError, ValueError) as error:
            raise TypeError(f"`{name}` must be a torch.Tensor or a numpy array: {error}") from None
        if arr.dtype.kind not in "iuf":
            raise ValueError(f"`{name}` must hold real numbers, got dtype {arr.dtype}")
        t = torch.from_numpy(arr.astype(np.float64))
    if t.ndim != ndim:
        raise ValueError(f"`{name}` must be {ndim}-D, got shape {tuple(t.shape)}")
    if t.numel() == 0:
        raise ValueError(f"`{name}` is empty (shape {tuple(t.shape)})")
    if not torch.isfinite(t).all():
        raise ValueError(f"`{name}` contains NaN or Inf")
    return t


def _check_pair(A, B) -> tuple[torch.Tensor, torch.Tensor]:
    """A and B as float64 (C, C) tensors of the same shape."""
    a = _as_float64(A, "A", 2)
    b = _as_float64(B, "B", 2)
    for t, name in ((a, "A"), (b, "B")):
        if t.shape[0] != t.shape[1]:
            raise ValueError(f"`{name}` must be square (C, C), got shape {tuple(t.shape)}")
    if a.shape != b.shape:
        raise ValueError(
            f"`A` and `B` must have the same shape (C, C), got {tuple(a.shape)} and "
            f"{tuple(b.shape)}"
        )
    return a, b


def _cond(s: torch.Tensor) -> float:
    """2-norm condition number σ_max / σ_min from singular values (descending); inf if σ_min = 0."""
    smax, smin = float(s[0]), float(s[-1])
    return smax / smin if smin > 0 else math.inf


def _singular(s: torch.Tensor) -> bool:
    """Singular to working precision: σ_min <= C · ε · σ_max (numpy.linalg.matrix_rank's rule)."""
    return float(s[-1]) <= len(s) * _EPS * float(s[0])


def _frozen(t: torch.Tensor) -> np.ndarray:
    arr = t.numpy().copy()
    arr.setflags(write=False)
    return arr


#: Default tolerance of :attr:`WaveAnalysis.real_speeds`: |Im λ| <= REAL_TOL · |λ|.
REAL_TOL = 1e-9


@dataclass(frozen=True, eq=False)
class WaveAnalysis:
    """M = A B⁻¹ = V Λ V⁻¹ and its conditioning (made by :func:`wave_analysis`).

    The speeds and eigenvectors are in LAPACK's order (no particular one): column k of `V`
    belongs to ``speeds[k]``. Compare the speeds of two runs with :func:`compare_runs`, never
    by sorting (real matrices give complex-conjugate pairs).

    Attributes
    ----------
    speeds : numpy.ndarray of shape (C,), complex128
        The eigenvalues λ_k of M: the speeds of the one-way wave equations
        ∂ζ_k/∂x = λ_k ∂ζ_k/∂y (spec §2 "Wave view"). NaN when B is singular to working
        precision (σ_min(B) <= C·ε·σ_max(B)).
    V : numpy.ndarray of shape (C, C), complex128
        Eigenvectors of M as columns, each of unit 2-norm; ζ = V⁻¹ z. NaN when B is singular.
    M : numpy.ndarray of shape (C, C), float64
        A B⁻¹, computed as ``solve(Bᵀ, Aᵀ)ᵀ`` (never an explicit inverse). NaN when B is
        singular.
    cond_A, cond_B : float
        2-norm condition numbers σ_max/σ_min of A and B from their singular values; inf when
        σ_min = 0 (the SVD of a singular matrix usually gives σ_min ~ ε·σ_max instead, so
        expect cond ~ 1e16 rather than inf).
    cond_V : float
        2-norm condition number of V (unit-norm columns); inf when V is exactly singular or B
        is singular.
    diag_rel_err : float
        ‖V Λ V⁻¹ − M‖_F / ‖M‖_F (V⁻¹ applied by a solve; 0 when M = 0); inf when V is exactly
        singular, NaN when B is singular.
    """

    speeds: np.ndarray
    V: np.ndarray
    M: np.ndarray
    cond_A: float
    cond_B: float
    cond_V: float
    diag_rel_err: float

    @property
    def channels(self) -> int:
        """C, the size of the matrices."""
        return int(self.speeds.shape[0])

    def is_invertible(self, tol: float = 1e-6) -> bool:
        """Whether A and B are both invertible *as conditioning*: cond(A) < 1/tol and
        cond(B) < 1/tol.

        The default ``tol=1e-6`` is the "invertible" threshold of the spec's verdict (§4:
        cond(A), cond(B) < 1e6); exact rank is not a meaningful question for trained floats.

        Parameters
        ----------
        tol : float, default=1e-6
            In (0, 1).

        Returns
        -------
        bool

        Raises
        ------
        ValueError
            If `tol` is not in (0, 1).
        """
        check_scalar(tol, "tol", low=0.0, high=1.0, inclusive="neither")
        return bool(self.cond_A < 1.0 / tol and self.cond_B < 1.0 / tol)

    def is_diagonalizable(self, tol: float = 1e-4, err_tol: float = 1e-8) -> bool:
        """Whether M is diagonalizable *in a well-conditioned basis*: cond(V) < 1/tol and
        ``diag_rel_err <= err_tol``.

        A generic matrix is always diagonalizable, so only the conditioning of V carries
        information; a Jordan block gives nearly parallel eigenvectors and cond(V) ~ 1/ε. The
        default ``tol=1e-4`` is the "diagonalizable" threshold of the spec's verdict (§4:
        cond(V) < 1e4). False when B is singular (no M).

        Parameters
        ----------
        tol : float, default=1e-4
            In (0, 1): the largest accepted cond(V) is 1/tol.
        err_tol : float, default=1e-8
            The largest accepted ``diag_rel_err`` (> 0).

        Returns
        -------
        bool

        Raises
        ------
        ValueError
            If `tol` is not in (0, 1) or `err_tol` is not positive.
        """
        check_scalar(tol, "tol", low=0.0, high=1.0, inclusive="neither")
        check_scalar(err_tol, "err_tol", low=0.0, inclusive="neither")
        return bool(self.cond_V < 1.0 / tol and self.diag_rel_err <= err_tol)

    def real_mask(self, tol: float = REAL_TOL) -> np.ndarray:
        """Which speeds are real: |Im λ_k| <= tol · |λ_k|.

        Parameters
        ----------
        tol : float, default=1e-9
            Relative tolerance (>= 0).

        Returns
        -------
        numpy.ndarray of shape (C,), bool
            False for NaN speeds.

        Raises
        ------
        ValueError
            If `tol` is negative.
        """
        check_scalar(tol, "tol", low=0.0)
        with np.errstate(invalid="ignore"):
            return np.abs(self.speeds.imag) <= tol * np.abs(self.speeds)

    @property
    def real_speeds(self) -> np.ndarray:
        """Mask (C,) of the real speeds, |Im λ_k| <= 1e-9 · |λ_k| (:meth:`real_mask`); their
        count is ``real_speeds.sum()``. Only real speeds give travelling waves f(y + λx)."""
        return self.real_mask(REAL_TOL)


def wave_analysis(A, B) -> WaveAnalysis:
    """Read FINOLA's A and B as one-way wave equations: M = A B⁻¹ = V Λ V⁻¹ (spec §2 "Wave view").

    ζ = V⁻¹ z then obeys Δ_x ζ_k = λ_k Δ_y ζ_k where both steps leave the same point, the
    discrete ∂ζ_k/∂x = λ_k ∂ζ_k/∂y (one-way wave / transport equation). M is computed with a
    solve, ``M = solve(Bᵀ, Aᵀ)ᵀ``, then ``torch.linalg.eig``; V's columns are normalised to unit
    2-norm before cond(V) is taken. Diagonalizability of a generic matrix is automatic — the
    claim worth reporting is a well-conditioned V (:meth:`WaveAnalysis.is_diagonalizable`).

    Parameters
    ----------
    A, B : torch.Tensor or numpy.ndarray of shape (C, C), real
        FINOLA's step matrices along x (columns) and y (rows), any float dtype and device;
        analysed in float64 on the CPU (gradients are not tracked).

    Returns
    -------
    WaveAnalysis
        Speeds (C,) complex128, V (C, C) complex128 with unit columns, M (C, C) float64,
        cond_A, cond_B, cond_V, diag_rel_err. A B singular to working precision
        (σ_min <= C·ε·σ_max) does not raise: M, V and the speeds are NaN, cond_V is inf, and
        :meth:`~WaveAnalysis.is_invertible` / :meth:`~WaveAnalysis.is_diagonalizable` are False.

    Raises
    ------
    TypeError
        If `A` or `B` is neither a tensor nor convertible to a numpy array.
    ValueError
        Naming the argument: not 2-D, not square, empty, complex, NaN/Inf, or A and B of
        different shapes.
    """
    a, b = _check_pair(A, B)
    C = a.shape[0]
    cond_A = _cond(torch.linalg.svdvals(a))
    sb = torch.linalg.svdvals(b)
    cond_B = _cond(sb)
    if _singular(sb):
        nan_c = torch.full((C, C), complex(math.nan, math.nan), dtype=C128)
        nan_r = torch.full((C, C), math.nan, dtype=F64)
        return WaveAnalysis(
            speeds=_frozen(nan_c[0]), V=_frozen(nan_c), M=_frozen(nan_r),
            cond_A=cond_A, cond_B=cond_B, cond_V=math.inf, diag_rel_err=math.nan,
        )  # fmt: skip
    M = torch.linalg.solve(b.T, a.T).T  # A B⁻¹
    lam, V = torch.linalg.eig(M)
    V = V / torch.linalg.vector_norm(V, dim=0, keepdim=True)
    cond_V = _cond(torch.linalg.svdvals(V))
    m_norm = float(torch.linalg.matrix_norm(M))
    try:
        recon = torch.linalg.solve(V.T, (V * lam).T).T  # V Λ V⁻¹
        err = float(torch.linalg.matrix_norm(recon - M.to(C128)))
        diag_rel_err = err / m_norm if m_norm > 0 else err
    except RuntimeError:  # torch.linalg.LinAlgError: V exactly singular
        diag_rel_err = math.inf
    if not math.isfinite(diag_rel_err):
        diag_rel_err = math.inf
    return WaveAnalysis(
        speeds=_frozen(lam), V=_frozen(V), M=_frozen(M), cond_A=cond_A, cond_B=cond_B,
        cond_V=cond_V, diag_rel_err=diag_rel_err,
    )  # fmt: skip


def _path_mask(h: int, w: int, yc: int, xc: int, order: str) -> torch.Tensor:
    """Cells (h−1, w−1) with both forward differences where both steps leave the same point."""
    mask = torch.zeros(h - 1, w - 1, dtype=torch.bool)
    if order == "yx" and xc <= w - 2:
        mask[yc : h - 1, xc] = True
    elif order == "xy" and yc <= h - 2:
        mask[yc, xc : w - 1] = True
    return mask


def _ratio(num2: torch.Tensor, den2: torch.Tensor, mask: torch.Tensor) -> float:
    """sqrt(Σ num² / Σ den²) over the masked cells: NaN for no cell, 0/0 → 0, x/0 → inf."""
    if not bool(mask.any()):
        return math.nan
    num, den = float(num2[..., mask].sum()), float(den2[..., mask].sum())
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return math.sqrt(num / den)


def pde_residual(
    z, A, B, center=None, order: str = "yx", norm: str = "layernorm", eps: float = 1e-6
) -> dict[str, float]:
    """Relative residual of the wave identity V⁻¹Δ_x z = Λ V⁻¹Δ_y z on and off the exact path.

    With forward differences Δ_x z(x, y) = z(x+1, y) − z(x, y) and Δ_y z(x, y) = z(x, y+1) −
    z(x, y), ζ-differences V⁻¹Δz (a solve, M = A B⁻¹ = V Λ V⁻¹ from :func:`wave_analysis`), the
    residual over a set S of cells and all N images is pooled in the Frobenius norm::

        sqrt( Σ_{n, cell ∈ S} ‖V⁻¹Δ_x z − Λ V⁻¹Δ_y z‖² / Σ_{n, cell ∈ S} ‖V⁻¹Δ_x z‖² )

    over the cells where both forward differences exist (x + 1 < w and y + 1 < h).

    Where it is exact. For a map made by :func:`finola.functional.finola_scan` with the same A,
    B, `center`, `order`, `norm` and `eps` (either reverse mode), both steps leave the same point
    only on the forward half of the first line: for ``order="yx"`` the centre column x = x_c
    with y_c <= y <= h − 2 (and only if x_c + 1 < w); for ``order="xy"`` the centre row
    y = y_c with x_c <= x <= w − 2 (and only if y_c + 1 < h). There Δ_y z = B ẑ and
    Δ_x z = A ẑ of the same ẑ by construction, so Δ_x z = M Δ_y z up to rounding (at most of
    order cond(V)·cond(B)·ε; we measured 1e-14 to 2e-13 for random C = 16 to 256). Everywhere
    else the two differences come from different cells' ẑ — the cells y < y_c of the centre
    column included (z(x_c, y) = z(x_c, y+1) − B ẑ(x_c, y+1)) — and the identity is only an
    approximation (we measured 0.1 to 2 for random A, B; spec §2 reports 0.88
    off-path on a small trained model).

    Parameters
    ----------
    z : torch.Tensor or numpy.ndarray of shape (N, C, h, w), real
        Maps, e.g. from ``finola_scan`` (analysed in float64 on the CPU).
    A, B : torch.Tensor or numpy.ndarray of shape (C, C), real
        The step matrices; B must be invertible to working precision.
    center : (int, int), optional
        (y_c, x_c) the maps were grown from; default (h // 2, w // 2).
    order : {"yx", "xy"}, default="yx"
        The generation order of the maps.
    norm : {"layernorm", "rms", "none"}, default="layernorm"
        The normaliser of the maps, used only for the "recurrence" check.
    eps : float, default=1e-6
        ε of the normaliser, used only for the "recurrence" check.

    Returns
    -------
    dict of str to float
        ``"on_path"``: the residual over the exact path above (rounding-level when z, A, B and
        the options match). ``"off_path"``: over all other cells with both forward
        differences. ``"recurrence"``: over the exact path, how far z is from obeying the
        FINOLA step there, sqrt(Σ ‖Δ_x z − A ẑ‖² + ‖Δ_y z − B ẑ‖²) / sqrt(Σ ‖Δ_x z‖² + ‖Δ_y z‖²)
        with ẑ from `norm`, `eps` — rounding-level exactly when z was made with these A, B and
        options, so it tells whether "on_path" is meaningful. A set with no cell (e.g. a 1×w
        map) gives NaN, not an error; a zero denominator gives 0 if the numerator is 0 too,
        else inf.

    Raises
    ------
    TypeError
        If an input is neither a tensor nor convertible to a numpy array.
    ValueError
        Naming the argument: `z` not 4-D, with C ≠ A's size, NaN/Inf; `A`, `B` as in
        :func:`wave_analysis`; `B` singular to working precision; `center` outside the map;
        an unknown `order` or `norm`; `eps` <= 0; `norm` with C < 2.
    """
    a, b = _check_pair(A, B)
    zz = _as_float64(z, "z", 4)
    check_choice(order, "order", ORDERS)
    check_choice(norm, "norm", NORMS)
    check_scalar(eps, "eps", low=0.0, inclusive="neither")
    N, C, h, w = zz.shape
    if a.shape[0] != C:
        raise ValueError(
            f"`z` must have C = {a.shape[0]} channels (axis 1, the size of A and B), got {C}"
        )
    if norm != "none" and C < 2:
        raise ValueError(f"norm={norm!r} needs C >= 2 channels, got C = {C}")
    (h, w), (yc, xc) = check_grid((h, w), center)
    wa = wave_analysis(a, b)
    if not np.isfinite(wa.speeds).all():
        raise ValueError(
            f"`B` is singular to working precision (cond(B) = {wa.cond_B:.3g}): M = A B⁻¹ and "
            "the wave view do not exist"
        )
    if h < 2 or w < 2:  # no cell has both forward differences
        return {"on_path": math.nan, "off_path": math.nan, "recurrence": math.nan}
    mask = _path_mask(h, w, yc, xc, order)
    dx = (zz[:, :, :, 1:] - zz[:, :, :, :-1])[:, :, : h - 1, :]  # (N, C, h−1, w−1)
    dy = (zz[:, :, 1:, :] - zz[:, :, :-1, :])[:, :, :, : w - 1]
    V = torch.from_numpy(wa.V.copy())
    lam = torch.from_numpy(wa.speeds.copy())

    def to_zeta(d: torch.Tensor) -> torch.Tensor:  # V⁻¹ d per cell, (N, C, h−1, w−1) complex
        cols = d.permute(1, 0, 2, 3).reshape(C, -1).to(C128)
        return torch.linalg.solve(V, cols).reshape(C, N, h - 1, w - 1).permute(1, 0, 2, 3)

    zx, zy = to_zeta(dx), to_zeta(dy)
    res2 = (zx - lam[None, :, None, None] * zy).abs().square().sum(1)  # (N, h−1, w−1)
    den2 = zx.abs().square().sum(1)
    out = {"on_path": _ratio(res2, den2, mask), "off_path": _ratio(res2, den2, ~mask)}
    if bool(mask.any()):
        cells = zz[:, :, : h - 1, : w - 1][..., mask]  # (N, C, K)
        cells = cells.permute(0, 2, 1)  # (N, K, C)
        zhat = normalize(cells, norm, eps)
        step_x = dx[..., mask].permute(0, 2, 1)
        step_y = dy[..., mask].permute(0, 2, 1)
        num2 = (step_x - zhat @ a.T).square().sum() + (step_y - zhat @ b.T).square().sum()
        den2_step = step_x.square().sum() + step_y.square().sum()
        every = torch.ones(1, dtype=torch.bool)
        out["recurrence"] = _ratio(num2.reshape(1), den2_step.reshape(1), every)
    else:
        out["recurrence"] = math.nan
    return out


def _run_speeds(run, i: int) -> np.ndarray:
    if isinstance(run, WaveAnalysis):
        wa = run
    elif isinstance(run, Sequence) and not isinstance(run, str) and len(run) == 2:
        try:
            wa = wave_analysis(*run)
        except (TypeError, ValueError) as error:
            raise type(error)(f"`runs[{i}]`: {error}") from None
    else:
        raise ValueError(
            f"`runs[{i}]` must be an (A, B) pair or a WaveAnalysis, got {type(run).__name__}"
        )
    if not np.isfinite(wa.speeds).all():
        raise ValueError(f"`runs[{i}]` has no speeds: its B is singular to working precision")
    return wa.speeds


def compare_runs(runs) -> np.ndarray:
    """Distances between the speed spectra of several runs, matched in ℂ (Hungarian algorithm).

    For runs i and j with speeds λ and μ (complex, C each), the distance is
    min over permutations σ of (1/C) Σ_k |λ_k − μ_σ(k)|, solved exactly by
    ``scipy.optimize.linear_sum_assignment`` on the cost |λ_k − μ_l|. Matching, not sorting:
    real matrices give complex-conjugate pairs whose order in any sort is arbitrary (spec §9).

    Parameters
    ----------
    runs : sequence of (A, B) pairs or WaveAnalysis
        At least two runs, all with the same C; each (A, B) goes through :func:`wave_analysis`.

    Returns
    -------
    numpy.ndarray of shape (R, R), float64
        The mean matched distance; symmetric with a zero diagonal.

    Raises
    ------
    ImportError
        If scipy (the extra ``pip install 'finola[analysis]'``) is not installed.
    TypeError
        If `runs` is not a sequence, or a matrix is not array-like.
    ValueError
        Naming the argument: fewer than two runs, a run that is neither an (A, B) pair nor a
        WaveAnalysis, bad A/B (as in :func:`wave_analysis`), a singular B, or runs of
        different C.
    """
    if not isinstance(runs, Sequence) or isinstance(runs, str):
        raise TypeError(f"`runs` must be a sequence of (A, B) pairs, got {type(runs).__name__}")
    if len(runs) < 2:
        raise ValueError(f"`runs` must hold at least 2 runs to compare, got {len(runs)}")
    with requires_extra("finola", "analysis"):
        from scipy.optimize import linear_sum_assignment
    spectra = [_run_speeds(run, i) for i, run in enumerate(runs)]
    sizes = {s.shape[0] for s in spectra}
    if len(sizes) != 1:
        raise ValueError(f"`runs` must all have the same C, got sizes {sorted(sizes)}")
    R = len(spectra)
    out = np.zeros((R, R))
    for i in range(R):
        for j in range(i + 1, R):
            cost = np.abs(spectra[i][:, None] - spectra[j][None, :])
            rows, cols = linear_sum_assignment(cost)
            out[i, j] = out[j, i] = float(cost[rows, cols].mean())
    return out
