"""The scan against the position-by-position loop, the closed form without normalisation,
LayerNorm invariance, the norm bound, gradients (gradcheck) and the Triton step (spec §5 tests 1,
2, 5, 7, 9)."""

import itertools

import pytest
import torch
from finola.functional import finola_scan, normalize

F64 = torch.float64


def _mats(C, n=4, dtype=F64, seed=0, scale=0.3):
    g = torch.Generator().manual_seed(seed)
    return [scale * torch.randn(C, C, generator=g, dtype=dtype) / C**0.5 for _ in range(n)]


GRIDS = [(1, 1), (1, 5), (8, 8), (7, 5)]
CENTRES = [None, (0, 0), "last"]


@pytest.mark.parametrize(
    ("grid", "centre", "order", "reverse", "paths"),
    [
        pytest.param(*case, id="{}x{}-c{}-{}-{}-M{}".format(*case[0], *case[1:]))
        for case in itertools.product(GRIDS, CENTRES, ("yx", "xy"), ("negate", "separate"), (1, 3))
    ],
)
def test_scan_equals_the_naive_loop(grid, centre, order, reverse, paths):
    C = 6
    centre = (grid[0] - 1, grid[1] - 1) if centre == "last" else centre
    A, B, Ar, Br = _mats(C)
    shape = (3, C) if paths == 1 else (3, paths, C)
    q = torch.randn(*shape, dtype=F64, generator=torch.Generator().manual_seed(1))
    kw = {"center": centre, "order": order, "reverse": reverse, "A_rev": Ar, "B_rev": Br}
    fast = finola_scan(q, A, B, grid, **kw)
    slow = finola_scan(q, A, B, grid, naive=True, **kw)
    assert fast.shape == (*shape[:-1], C, *grid)
    torch.testing.assert_close(fast, slow, rtol=0, atol=1e-12)


@pytest.mark.parametrize("order", ["yx", "xy"])
@pytest.mark.parametrize("centre", [None, (1, 4)])
def test_no_norm_is_the_matrix_power_closed_form(order, centre):
    C, (h, w) = 5, (6, 7)
    A, B = _mats(C, 2, seed=3)
    q = torch.randn(2, C, dtype=F64)
    z = finola_scan(q, A, B, (h, w), center=centre, order=order, norm="none")
    yc, xc = centre or (h // 2, w // 2)
    eye = torch.eye(C, dtype=F64)
    for y, x in itertools.product(range(h), range(w)):
        i, j = x - xc, y - yc
        Pa = torch.linalg.matrix_power(eye + (A if i >= 0 else -A), abs(i))
        Pb = torch.linalg.matrix_power(eye + (B if j >= 0 else -B), abs(j))
        P = Pa @ Pb if order == "yx" else Pb @ Pa  # the first phase acts first
        torch.testing.assert_close(z[:, :, y, x], q @ P.T, rtol=1e-10, atol=1e-10)


def test_first_steps_are_invariant_to_scale_and_shift_of_q():
    C = 8
    A, B = _mats(C, 2)
    q = torch.randn(4, C, dtype=F64)
    (h, w), (yc, xc) = (5, 5), (2, 2)

    def increments(q0):
        z = finola_scan(q0, A, B, (h, w), eps=1e-12)
        return [z[:, :, yc, xc + 1] - q0, z[:, :, yc + 1, xc] - q0, z[:, :, yc, xc - 1] - q0]

    for a, b in zip(increments(q), increments(2 * q + 3), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)


def test_a_long_float32_scan_has_finite_gradients_and_obeys_the_norm_bound():
    C = 16
    A, B = (m.float().requires_grad_() for m in _mats(C, 2, scale=1.0))
    q = torch.randn(2, C, requires_grad=True)
    z = finola_scan(q, A, B, (1, 65), center=(0, 0))  # 64 steps
    z.square().sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, A, B))
    # ‖ẑ‖ = √C under LayerNorm, so a cell k steps from the centre has ‖z‖ <= ‖q‖ + k·max‖·‖₂·√C
    A64, B64 = (m.detach().double() for m in (A, B))
    q64 = q.detach().double()
    h, w = 9, 9
    z = finola_scan(q64, A64, B64, (h, w))
    step = max(torch.linalg.matrix_norm(m, 2) for m in (A64, B64)) * C**0.5
    for y, x in itertools.product(range(h), range(w)):
        k = abs(y - h // 2) + abs(x - w // 2)
        bound = q64.norm(dim=1) + k * step
        assert (z[:, :, y, x].norm(dim=1) <= bound * (1 + 1e-12)).all()


@pytest.mark.parametrize(
    ("order", "reverse"), itertools.product(("yx", "xy"), ("negate", "separate"))
)
@pytest.mark.parametrize("norm", ["layernorm", "rms", "none"])
def test_gradcheck_of_the_scan(order, reverse, norm):
    C = 4
    mats = [m.requires_grad_() for m in _mats(C)]
    q = torch.randn(2, C, dtype=F64, requires_grad=True)

    def scan(q, A, B, Ar, Br):
        return finola_scan(q, A, B, (4, 3), center=(1, 1), order=order, reverse=reverse,
                           A_rev=Ar, B_rev=Br, norm=norm)  # fmt: skip

    assert torch.autograd.gradcheck(scan, (q, *mats))


@pytest.mark.parametrize(
    ("C", "grid", "norm"),
    [
        (5, (3, 4), "layernorm"),
        (37, (5, 3), "rms"),
        (16, (2, 2), "none"),
        (70, (4, 5), "layernorm"),
    ],
)
def test_triton_step_equals_the_reference_forward_and_backward(C, grid, norm):
    pytest.importorskip("triton")
    g = torch.Generator().manual_seed(C)
    q = torch.randn(3, C, generator=g).requires_grad_()
    A, B = (m.float().requires_grad_() for m in _mats(C, 2, seed=C))
    results = []
    for backend in ("torch", "triton"):
        z = finola_scan(q, A, B, grid, norm=norm, backend=backend)
        cotangent = torch.randn(z.shape, generator=torch.Generator().manual_seed(1))
        results.append((z, *torch.autograd.grad(z, (q, A, B), cotangent)))
    for name, ref, tri in zip(("z", "dq", "dA", "dB"), *results, strict=True):
        err = (ref - tri).norm() / ref.norm()
        assert err < 1e-5, f"{name}: relative error {err:.2e}"


def test_normalize_is_torch_layer_norm_with_population_variance():
    z = torch.randn(5, 7, dtype=F64)
    mean, var = z.mean(1, keepdim=True), z.var(1, unbiased=False, keepdim=True)
    torch.testing.assert_close(normalize(z, "layernorm", 1e-6), (z - mean) / (var + 1e-6).sqrt())
    rms = (z.square().mean(1, keepdim=True) + 1e-6).sqrt()
    torch.testing.assert_close(normalize(z, "rms", 1e-6), z / rms)


Q = torch.randn(2, 4, dtype=F64)
M4 = torch.eye(4, dtype=F64)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"q": torch.randn(4)}, ValueError, "`q`"),
        ({"q": torch.randn(0, 4, dtype=F64)}, ValueError, "`q`"),
        ({"q": torch.full((2, 4), float("nan"), dtype=F64)}, ValueError, "`q` contains NaN"),
        ({"q": torch.ones(2, 4, dtype=torch.int64)}, ValueError, "float32 or float64"),
        ({"q": [[1.0]]}, TypeError, "`q`"),
        ({"A": torch.eye(3, dtype=F64)}, ValueError, "`A` must have shape"),
        ({"B": torch.eye(4)}, ValueError, "`B` must have q's dtype"),
        ({"A": torch.full((4, 4), float("inf"), dtype=F64)}, ValueError, "`A` contains"),
        ({"grid": (0, 3)}, ValueError, "grid h"),
        ({"grid": (3, 3), "center": (3, 0)}, ValueError, "center y_c"),
        ({"grid": "8"}, ValueError, "`grid`"),
        (
            {"q": torch.randn(2, 1, dtype=F64), "A": M4[:1, :1], "B": M4[:1, :1]},
            ValueError,
            "C >= 2",
        ),
        ({"reverse": "separate"}, ValueError, "A_rev"),
        ({"order": "zz"}, ValueError, "order"),
        ({"norm": "batch"}, ValueError, "norm"),
        ({"eps": 0.0}, ValueError, "eps"),
        ({"backend": "cuda"}, ValueError, "backend"),
    ],
)
def test_scan_rejects_bad_input(kwargs, error, match):
    args = {"q": Q, "A": M4, "B": M4, "grid": (3, 3), **kwargs}
    with pytest.raises(error, match=match):
        finola_scan(args.pop("q"), args.pop("A"), args.pop("B"), args.pop("grid"), **args)


@pytest.mark.parametrize(
    ("norm", "eps"), [("ln", 1e-6), ("RMS", 1e-6), (None, 1e-6), ("rms", -1.0)]
)
def test_normalize_rejects_unknown_norms_and_bad_eps(norm, eps):
    # new-user trial: a typo silently meant "no normalisation", a negative eps gave NaN
    with pytest.raises((ValueError, TypeError), match=r"norm|eps"):
        normalize(torch.randn(2, 4), norm, eps)
