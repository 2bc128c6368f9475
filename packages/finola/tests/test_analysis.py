"""The wave view of A and B (spec §2 "Wave view"; §5 tests 3 and 4): the exact wave identity on
the centre line, recovered speeds of constructed matrices, conditioning flags, the Hungarian
comparison of runs, and bad input. Every expected value is a closed form or an exact
construction."""

import math
import sys

import numpy as np
import pytest
import torch
from finola import FINOLA, finola_scan
from finola.analysis import WaveAnalysis, compare_runs, pde_residual, wave_analysis
from scipy.optimize import linear_sum_assignment

F64 = torch.float64


def _rng(seed=0):
    return np.random.default_rng(seed)


def _random_pair(C=6, seed=0, scale=0.3):
    g = torch.Generator().manual_seed(seed)
    A, B = (scale * torch.randn(C, C, generator=g, dtype=F64) / C**0.5 for _ in range(2))
    return A, B


def _well_conditioned(C, seed=0):
    """Q1 diag(s) Q2 with s in [1, 2]: cond <= 2."""
    rng = _rng(seed)
    q1, _ = np.linalg.qr(rng.standard_normal((C, C)))
    q2, _ = np.linalg.qr(rng.standard_normal((C, C)))
    return q1 @ np.diag(rng.uniform(1.0, 2.0, C)) @ q2


def _block(values):
    """Real block-diagonal matrix whose eigenvalues are `values`: a real x gives [x], a complex
    a + ib (listed once) gives [[a, b], [-b, a]] with eigenvalues a ± ib."""
    blocks = []
    for v in values:
        if isinstance(v, complex):
            blocks.append(np.array([[v.real, v.imag], [-v.imag, v.real]]))
        else:
            blocks.append(np.array([[float(v)]]))
    C = sum(b.shape[0] for b in blocks)
    out, i = np.zeros((C, C)), 0
    for b in blocks:
        k = b.shape[0]
        out[i : i + k, i : i + k] = b
        i += k
    return out


def _eigenvalues_of_block(values):
    out = []
    for v in values:
        out += [v, v.conjugate()] if isinstance(v, complex) else [complex(v)]
    return np.array(out)


def _matched_error(found, expected):
    """Largest |found − expected| after optimal matching in ℂ (never by sorting)."""
    cost = np.abs(np.asarray(found)[:, None] - np.asarray(expected)[None, :])
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].max())


# --- spec test 3: the wave identity is exact on the centre line, not elsewhere ---------------


@pytest.mark.parametrize(
    ("order", "center", "reverse"),
    [("yx", None, "negate"), ("xy", None, "negate"), ("yx", (1, 2), "separate"),
     ("xy", (5, 0), "negate")],
)  # fmt: skip
def test_wave_identity_is_exact_on_the_centre_line(order, center, reverse):
    C, grid = 6, (7, 6)
    A, B = _random_pair(C)
    Ar, Br = _random_pair(C, seed=1)
    q = torch.randn(3, C, dtype=F64, generator=torch.Generator().manual_seed(2))
    kw = {"center": center, "order": order}
    z = finola_scan(q, A, B, grid, reverse=reverse, A_rev=Ar, B_rev=Br, **kw)

    # The claim by hand, without the library: Δ_x z = A B⁻¹ Δ_y z at exactly these cells.
    h, w = grid
    yc, xc = center if center is not None else (h // 2, w // 2)
    M = torch.linalg.solve(B.T, A.T).T
    if order == "yx":
        path = [(y, xc) for y in range(yc, h - 1)]
    else:
        path = [(yc, x) for x in range(xc, w - 1)]
    assert path
    for y in range(h - 1):
        for x in range(w - 1):
            dx = z[:, :, y, x + 1] - z[:, :, y, x]
            dy = z[:, :, y + 1, x] - z[:, :, y, x]
            rel = float((dx - dy @ M.T).norm() / dx.norm())
            assert (rel < 1e-12) == ((y, x) in path), (y, x, rel)

    res = pde_residual(z, A, B, **kw)
    assert res["on_path"] < 1e-9
    assert res["recurrence"] < 1e-12  # z obeys the FINOLA step of these A, B on the path
    assert 0.05 < res["off_path"] < 10  # not near zero for random A, B


def test_residual_of_an_exact_transport_solution_is_zero_everywhere():
    # ζ_k(x, y) = c_k + a_k (y + λ_k x) solves Δ_x ζ_k = λ_k Δ_y ζ_k exactly; z = V ζ, M = VΛV⁻¹.
    C, h, w = 4, 5, 6
    rng = _rng(3)
    V, lam = _well_conditioned(C, seed=3), np.array([-1.5, -0.3, 0.4, 2.0])
    B = _well_conditioned(C, seed=4)
    A = V @ np.diag(lam) @ np.linalg.solve(V, B)  # A B⁻¹ = V Λ V⁻¹
    c, a = rng.standard_normal((2, C))
    y, x = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    zeta = c[:, None, None] + a[:, None, None] * (y[None] + lam[:, None, None] * x[None])
    z = np.einsum("ck,khw->chw", V, zeta)[None]
    res = pde_residual(z, A, B, norm="none")
    assert res["on_path"] < 1e-12
    assert res["off_path"] < 1e-12


def test_residual_is_pooled_in_the_frobenius_norm():
    # A = diag(λ), B = I: V = I. z_k = x + y gives Δ_x ζ = Δ_y ζ = 1 at every cell, so the
    # residual is sqrt(Σ_k (1 − λ_k)² / C); z_k = x gives Δ_y = 0 and the residual 1.
    C, h, w = 3, 4, 5
    lam = np.array([0.5, 2.0, -1.0])
    A, B = np.diag(lam), np.eye(C)
    y, x = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    z = np.broadcast_to((x + y)[None, None], (2, C, h, w)).astype(float)
    expected = math.sqrt(((1 - lam) ** 2).sum() / C)
    res = pde_residual(z, A, B)
    assert res["on_path"] == pytest.approx(expected, rel=1e-12)
    assert res["off_path"] == pytest.approx(expected, rel=1e-12)
    z = np.broadcast_to(x[None, None], (2, C, h, w)).astype(float)
    res = pde_residual(torch.from_numpy(z), A, B, order="xy")
    assert res["on_path"] == pytest.approx(1.0, rel=1e-12)
    assert res["off_path"] == pytest.approx(1.0, rel=1e-12)


def test_an_empty_set_of_cells_gives_nan():
    A, B = _random_pair(4)
    q = torch.randn(2, 4, dtype=F64)
    res = pde_residual(finola_scan(q, A, B, (1, 5)), A, B)  # no cell has a Δ_y
    assert all(math.isnan(v) for v in res.values())
    z = finola_scan(q, A, B, (4, 5), center=(1, 4))  # x_c = w − 1: the centre column has no Δ_x
    res = pde_residual(z, A, B, center=(1, 4))
    assert math.isnan(res["on_path"])
    assert math.isnan(res["recurrence"])
    assert res["off_path"] > 0.05


def test_a_map_of_other_matrices_fails_the_recurrence_check():
    A, B = _random_pair(5)
    A2, B2 = _random_pair(5, seed=7)
    z = finola_scan(torch.randn(2, 5, dtype=F64), A2, B2, (5, 5))
    res = pde_residual(z, A, B)
    assert res["recurrence"] > 0.05
    assert res["on_path"] > 0.05


# --- spec test 4: speeds of constructed matrices, conditioning flags -------------------------


@pytest.mark.parametrize(
    ("lam_a", "lam_b"),
    [
        ([0.5, -1.2, 2.0, 0.9, -0.4], [1.0, 2.0, -0.5, 1.5, 0.8]),
        (
            [complex(0.5, 1.0), -0.7, complex(-1.0, 0.3)],
            [complex(1.2, -0.4), 0.9, complex(0.6, 0.8)],
        ),
    ],
    ids=["real", "complex-conjugate"],
)
def test_speeds_of_a_simultaneously_diagonalised_pair(lam_a, lam_b):
    # A = V Λ_A V⁻¹, B = V Λ_B V⁻¹ (Λ in real block form) → speeds = eigenvalues of Λ_A Λ_B⁻¹.
    La, Lb = _block(lam_a), _block(lam_b)
    C = La.shape[0]
    V = _well_conditioned(C, seed=5)
    A, B = V @ La @ np.linalg.inv(V), V @ Lb @ np.linalg.inv(V)
    expected = _eigenvalues_of_block(lam_a) / _eigenvalues_of_block(lam_b)
    wa = wave_analysis(torch.from_numpy(A), B)
    assert isinstance(wa, WaveAnalysis)
    assert wa.speeds.shape == (C,)
    assert wa.speeds.dtype == np.complex128
    assert _matched_error(wa.speeds, expected) < 1e-10
    np.testing.assert_allclose(wa.M, V @ La @ np.linalg.inv(Lb) @ np.linalg.inv(V), atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(wa.V, axis=0), 1.0, atol=1e-14)
    np.testing.assert_allclose(wa.M @ wa.V, wa.V * wa.speeds, atol=1e-12)
    assert wa.real_speeds.sum() == sum(not isinstance(v, complex) for v in lam_a)
    assert wa.is_invertible()
    assert wa.is_diagonalizable()
    assert wa.diag_rel_err < 1e-12


def test_a_repeated_eigenvalue_with_a_full_eigenbasis_is_diagonalizable():
    wa = wave_analysis(2 * np.eye(4), np.eye(4))  # M = 2 I exactly
    np.testing.assert_array_equal(wa.speeds, np.full(4, 2.0 + 0j))
    assert wa.cond_V == pytest.approx(1.0)
    assert wa.is_diagonalizable()


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("similar", [False, True])
def test_a_jordan_block_is_not_diagonalizable(size, similar):
    J = 1.5 * np.eye(size) + np.eye(size, k=1)
    B = _well_conditioned(size, seed=6)
    S = _well_conditioned(size, seed=8) if similar else np.eye(size)
    A = S @ J @ np.linalg.solve(S, B)  # A B⁻¹ = S J S⁻¹
    wa = wave_analysis(A, B)
    assert wa.is_invertible()
    assert wa.cond_V > 1e4
    assert not wa.is_diagonalizable()
    assert _matched_error(wa.speeds, np.full(size, 1.5)) < 1e-4


def test_a_singular_b_or_a_is_flagged_non_invertible():
    C = 5
    A = _well_conditioned(C, seed=9)
    rng = _rng(10)
    B = rng.standard_normal((C, C))
    B[2] = 0.0  # exactly singular: no M
    wa = wave_analysis(A, B)
    assert wa.cond_B >= 1 / (C * np.finfo(float).eps)  # singular to working precision
    assert wa.M.dtype == np.float64
    assert not wa.is_invertible()
    assert not wa.is_diagonalizable()
    assert np.isnan(wa.speeds).all()
    assert not wa.real_speeds.any()
    B = rng.standard_normal((C, C - 1)) @ rng.standard_normal((C - 1, C))  # rank C − 1
    wa = wave_analysis(A, B)
    assert wa.cond_B > 1e10
    assert not wa.is_invertible()
    # A of rank C − 1 with an invertible B: M exists with a zero speed, and A is flagged.
    A = rng.standard_normal((C, C - 1)) @ rng.standard_normal((C - 1, C))
    wa = wave_analysis(A, _well_conditioned(C, seed=11))
    assert not wa.is_invertible()
    assert np.abs(wa.speeds).min() < 1e-12


def test_wave_parametrization_gives_its_speeds():
    layer = FINOLA(8, 4, parametrization="wave").double()
    wa = wave_analysis(layer.A, layer.B)
    lam = layer.speeds.detach().numpy()
    assert _matched_error(wa.speeds, lam.astype(complex)) < 1e-10
    assert wa.real_speeds.all()
    assert wa.is_diagonalizable()


# --- compare_runs ----------------------------------------------------------------------------


def test_a_run_against_itself_or_a_similar_copy_is_zero():
    A, B = _random_pair(6, seed=12)
    wa = wave_analysis(A, B)
    assert (~wa.real_speeds).sum() >= 2  # a conjugate pair: sorting would not do
    P = torch.eye(6, dtype=F64)[torch.randperm(6, generator=torch.Generator().manual_seed(0))]
    S = torch.from_numpy(_well_conditioned(6, seed=13))
    similar = (S @ A @ torch.linalg.inv(S), S @ B @ torch.linalg.inv(S))
    D = compare_runs([(A, B), wa, (P @ A @ P.T, P @ B @ P.T), similar])
    assert D.shape == (4, 4)
    assert D[0, 1] == 0.0
    np.testing.assert_array_equal(np.diag(D), 0.0)
    np.testing.assert_array_equal(D, D.T)
    assert D.max() < 1e-10


def test_a_common_shift_of_the_speeds_is_its_distance():
    # Λ + δ I shifts every speed by δ; by the triangle inequality no matching beats |δ|.
    lam = [complex(0.5, 1.0), -0.7, complex(-1.0, 0.3), 2.0]
    L = _block(lam)
    C = L.shape[0]
    V, B = _well_conditioned(C, seed=14), _well_conditioned(C, seed=15)
    runs = [(V @ (L + d * np.eye(C)) @ np.linalg.solve(V, B), B) for d in (0.0, 0.1, 0.25)]
    D = compare_runs(runs)
    expected = np.array([[0.0, 0.1, 0.25], [0.1, 0.0, 0.15], [0.25, 0.15, 0.0]])
    np.testing.assert_allclose(D, expected, atol=1e-10)


def test_compare_runs_names_the_missing_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy.optimize", None)
    A, B = _random_pair(3)
    with pytest.raises(ImportError, match=r"pip install 'finola\[analysis\]'"):
        compare_runs([(A, B), (A, B)])


# --- bad input -------------------------------------------------------------------------------


def _ab(C=3):
    return np.eye(C), 2 * np.eye(C)


@pytest.mark.parametrize(
    ("A", "B", "match"),
    [
        (np.ones((3, 4)), np.ones((3, 4)), "`A` must be square"),
        (np.eye(3), np.ones((4, 3)), "`B` must be square"),
        (np.ones(3), np.eye(3), "`A` must be 2-D"),
        (np.eye(3), np.eye(4), "`A` and `B` must have the same shape"),
        (np.eye(3), np.diag([1.0, np.nan, 1.0]), "`B` contains NaN or Inf"),
        (np.diag([1.0, np.inf, 1.0]), np.eye(3), "`A` contains NaN or Inf"),
        (np.eye(3) * 1j, np.eye(3), "`A` must hold real numbers"),
        (torch.eye(3, dtype=torch.complex64), np.eye(3), "`A` must hold real numbers"),
        (np.zeros((0, 0)), np.zeros((0, 0)), "`A` is empty"),
    ],
)
def test_wave_analysis_rejects_bad_matrices(A, B, match):
    with pytest.raises(ValueError, match=match):
        wave_analysis(A, B)


def test_flags_reject_bad_tolerances():
    wa = wave_analysis(*_ab())
    with pytest.raises(ValueError, match="`tol`"):
        wa.is_invertible(tol=0.0)
    with pytest.raises(ValueError, match="`tol`"):
        wa.is_diagonalizable(tol=1.5)
    with pytest.raises(ValueError, match="`err_tol`"):
        wa.is_diagonalizable(err_tol=-1.0)


@pytest.mark.parametrize(
    ("z", "kwargs", "match"),
    [
        (np.zeros((3, 4, 4)), {}, "`z` must be 4-D"),
        (np.zeros((1, 4, 4, 4)), {}, "`z` must have C = 3"),
        (np.full((1, 3, 4, 4), np.nan), {}, "`z` contains NaN or Inf"),
        (np.zeros((1, 3, 4, 4)), {"order": "zz"}, "`order`"),
        (np.zeros((1, 3, 4, 4)), {"norm": "batch"}, "`norm`"),
        (np.zeros((1, 3, 4, 4)), {"eps": 0.0}, "`eps`"),
        (np.zeros((1, 3, 4, 4)), {"center": (4, 0)}, "`center y_c`"),
        (np.zeros((1, 3, 4, 4)), {"center": (0, 9)}, "`center x_c`"),
    ],
)
def test_pde_residual_rejects_bad_input(z, kwargs, match):
    with pytest.raises(ValueError, match=match):
        pde_residual(z, *_ab(), **kwargs)


def test_pde_residual_rejects_a_singular_b():
    with pytest.raises(ValueError, match="`B` is singular"):
        pde_residual(np.zeros((1, 3, 4, 4)), np.eye(3), np.diag([1.0, 0.0, 1.0]))


@pytest.mark.parametrize(
    ("runs", "error", "match"),
    [
        ([_ab()], ValueError, "`runs` must hold at least 2"),
        ([], ValueError, "`runs` must hold at least 2"),
        (_ab, TypeError, "`runs` must be a sequence"),
        ([_ab(), _ab(4)], ValueError, "`runs` must all have the same C"),
        ([_ab(), "AB"], ValueError, r"`runs\[1\]` must be an \(A, B\) pair"),
        ([_ab(), (np.eye(3), np.eye(3), np.eye(3))], ValueError, r"`runs\[1\]` must be"),
        ([(np.eye(3), np.ones((3, 4))), _ab()], ValueError, r"`runs\[0\]`: `B` must be square"),
        ([(np.eye(3), np.zeros((3, 3))), _ab()], ValueError, r"`runs\[0\]` has no speeds"),
    ],
)
def test_compare_runs_rejects_bad_input(runs, error, match):
    with pytest.raises(error, match=match):
        compare_runs(runs)
