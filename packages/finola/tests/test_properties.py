"""Property-based tests of the recurrence's invariants: the scan is the position-by-position
loop, the normaliser removes scale and shift, the unnormalised map is a product of matrix powers,
the wave view recovers constructed speeds, and PSNR of a constant offset is its closed form."""

import numpy as np
import torch
from finola import finola_scan, psnr, wave_analysis
from hypothesis import given, settings
from hypothesis import strategies as st

F64 = torch.float64


@st.composite
def scans(draw):
    """A random scan setting: grid, centre inside it, order, reverse rule, normaliser, seed."""
    h, w = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    centre = (draw(st.integers(0, h - 1)), draw(st.integers(0, w - 1)))
    return {
        "grid": (h, w),
        "center": centre,
        "order": draw(st.sampled_from(["yx", "xy"])),
        "reverse": draw(st.sampled_from(["negate", "separate"])),
        "norm": draw(st.sampled_from(["layernorm", "rms", "none"])),
        "C": draw(st.integers(2, 6)),
        "seed": draw(st.integers(0, 2**31 - 1)),
    }


def _setting(case):
    g = torch.Generator().manual_seed(case["seed"])
    C = case["C"]
    q = torch.randn(2, C, generator=g, dtype=F64)
    A, B, Ar, Br = (0.3 * torch.randn(C, C, generator=g, dtype=F64) / C**0.5 for _ in range(4))
    kw = {k: case[k] for k in ("center", "order", "reverse", "norm")}
    return q, A, B, {**kw, "A_rev": Ar, "B_rev": Br}


@settings(max_examples=40, deadline=None)
@given(scans())
def test_scan_is_the_position_by_position_loop(case):
    q, A, B, kw = _setting(case)
    fast = finola_scan(q, A, B, case["grid"], **kw)
    slow = finola_scan(q, A, B, case["grid"], naive=True, **kw)
    torch.testing.assert_close(fast, slow, rtol=0, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(scans(), st.floats(0.1, 50.0), st.floats(-20.0, 20.0))
def test_layernorm_makes_every_first_step_blind_to_scale_and_shift(case, scale, shift):
    q, A, B, kw = _setting({**case, "norm": "layernorm"})
    h, w = case["grid"]
    yc, xc = case["center"]
    z1 = finola_scan(q, A, B, (h, w), eps=1e-12, **{**kw, "norm": "layernorm"})
    q2 = scale * q + shift
    z2 = finola_scan(q2, A, B, (h, w), eps=1e-12, **{**kw, "norm": "layernorm"})
    first = {"yx": [(yc + 1, xc), (yc - 1, xc)], "xy": [(yc, xc + 1), (yc, xc - 1)]}
    for y, x in first[case["order"]]:
        if 0 <= y < h and 0 <= x < w:
            torch.testing.assert_close(z1[..., y, x] - q, z2[..., y, x] - q2, rtol=1e-8, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(scans())
def test_unnormalised_map_is_a_product_of_matrix_powers(case):
    q, A, B, kw = _setting({**case, "norm": "none", "reverse": "negate"})
    kw.update(norm="none", reverse="negate")
    z = finola_scan(q, A, B, case["grid"], **kw)
    h = case["grid"][0]
    yc, xc = case["center"]
    eye = torch.eye(case["C"], dtype=F64)
    y, x = h - 1, 0  # a corner: both phases act
    i, j = x - xc, y - yc
    Pa = torch.linalg.matrix_power(eye + (A if i >= 0 else -A), abs(i))
    Pb = torch.linalg.matrix_power(eye + (B if j >= 0 else -B), abs(j))
    P = Pa @ Pb if case["order"] == "yx" else Pb @ Pa
    torch.testing.assert_close(z[..., y, x], q @ P.T, rtol=1e-9, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 8), st.integers(0, 2**31 - 1))
def test_wave_analysis_recovers_constructed_real_speeds(C, seed):
    rng = np.random.default_rng(seed)
    V = np.linalg.qr(rng.normal(size=(C, C)))[0] + 0.1 * rng.normal(size=(C, C))
    lam_b = rng.uniform(0.5, 2.0, C) * rng.choice([-1, 1], C)
    speeds = rng.uniform(-3, 3, C)
    B = V @ np.diag(lam_b) @ np.linalg.inv(V)
    A = V @ np.diag(speeds * lam_b) @ np.linalg.inv(V)
    found = np.sort(np.real(wave_analysis(A, B).speeds))
    np.testing.assert_allclose(found, np.sort(speeds), rtol=1e-7, atol=1e-7)


@settings(max_examples=30, deadline=None)
@given(st.floats(1e-3, 0.2), st.integers(0, 2**31 - 1))
def test_psnr_of_a_constant_offset_is_its_closed_form(delta, seed):
    g = torch.Generator().manual_seed(seed)
    y = 0.2 + 0.6 * torch.rand(3, 3, 8, 8, generator=g, dtype=F64)  # offset stays in [0, 1]
    expected = 10 * np.log10(1.0 / delta**2)
    assert abs(psnr(y + delta, y) - expected) < 1e-9
