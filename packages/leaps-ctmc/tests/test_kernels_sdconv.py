"""Hollow state-dependent conv: every form against the reference (spec test 13)."""

import os

import pytest
import torch
from leaps_ctmc.kernels.sdconv import FORMS, sdconv
from leaps_ctmc.kernels.sdconv.naive import naive_sdconv, offset_index

CASES = [
    # B, C, rows, cols, k, input channels, scale
    (1, 1, 3, 3, 3, 1, 1.0),
    (2, 4, 5, 7, 5, 1, 1.0),
    (3, 5, 15, 15, 15, 1, 1.0),
    (2, 3, 6, 6, 15, 3, 1.0),  # kernel wider than the torus: aliased offsets are dropped
    (4, 6, 9, 9, 3, 6, 1.0),
    (2, 4, 7, 7, 5, 4, 0.0),  # zeros
    (2, 4, 7, 7, 5, 1, 30.0),  # large inputs
]


def rel_rms(a, b):
    return float((a - b).pow(2).mean().sqrt() / b.pow(2).mean().sqrt().clamp(min=1e-12))


def inputs(B, C, rows, cols, k, ce, scale, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)

    def r(*shape):
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale).to(dtype)

    return (r(B, C, rows, cols), r(B, ce, rows, cols), r(C, k * k, C) / max(C, 1),
            r(C, k * k), r(C, k * k), r(B, k * k))  # fmt: skip


@pytest.mark.parametrize("inference", [False, True], ids=["grad-mode", "inference-mode"])
@pytest.mark.parametrize("form", [f for f in FORMS if f != "naive"])
@pytest.mark.parametrize(
    "case", [pytest.param(c, id="B{}-C{}-{}x{}-k{}-in{}-s{}".format(*c)) for c in CASES]
)
def test_form_matches_naive_float32(form, case, inference):
    # inference mode takes the loop form's in-place SiLU; rows of >= 12 its padded views
    args = inputs(*case)
    ref = naive_sdconv(*args)
    with torch.inference_mode(inference):
        out = sdconv(*args, form=form)
    assert out.shape == ref.shape
    assert torch.isfinite(out).all()
    if float(ref.abs().max()) == 0:
        assert float(out.abs().max()) < 1e-6
    else:
        assert rel_rms(out, ref) < 1e-5


@pytest.mark.parametrize("form", list(FORMS))
def test_backward_matches_naive(form):
    args = [a.requires_grad_() for a in inputs(2, 3, 5, 5, 5, 3, 1.0, torch.float64)]
    cot = torch.randn(2, 3, 5, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    ref = torch.autograd.grad((naive_sdconv(*args) * cot).sum(), args)
    got = torch.autograd.grad((sdconv(*args, form=form) * cot).sum(), args)
    for r, g in zip(ref, got, strict=True):
        torch.testing.assert_close(g, r, atol=1e-10, rtol=1e-10)


def test_reference_gradcheck_float64():
    args = [a.requires_grad_() for a in inputs(1, 2, 3, 4, 3, 2, 1.0, torch.float64)]
    assert torch.autograd.gradcheck(naive_sdconv, args)


def test_output_never_reads_the_own_site():
    # Changing e at one site changes no output at that site (hollow), for k > side too.
    args = list(inputs(2, 3, 4, 4, 7, 3, 1.0))
    out = sdconv(*args)
    args[1] = args[1].clone()
    args[1][:, :, 1, 2] += 5.0
    changed = sdconv(*args)
    torch.testing.assert_close(changed[:, :, 1, 2], out[:, :, 1, 2], atol=0, rtol=0)
    assert not torch.allclose(changed, out)


def test_offset_index_is_circular():
    index, keep = offset_index(3, 4, 3)
    assert index.shape == (9, 12)
    assert int(keep.sum()) == 8
    # offset (-1, -1) of site (0, 0) is site (2, 3)
    assert int(index[0, 0]) == 2 * 4 + 3


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"h": torch.zeros(2, 3, 5)}, "h"),
        ({"e": torch.zeros(2, 2, 5, 5)}, "e"),
        ({"A": torch.zeros(3, 4, 3)}, "A"),
        ({"b1": torch.zeros(3, 8)}, "b1"),
        ({"m": torch.zeros(3, 9)}, "m"),
        ({"h": torch.full((2, 3, 5, 5), float("nan"))}, "h"),
        ({"form": "fast"}, "form"),
    ],
)
def test_sdconv_rejects_bad_input(change, match):
    h, e, A, b1, b2, m = inputs(2, 3, 5, 5, 3, 3, 1.0)
    kwargs = {"h": h, "e": e, "A": A, "b1": b1, "b2": b2, "m": m, **change}
    with pytest.raises((ValueError, TypeError), match=match):
        sdconv(**kwargs)


TRITON_CASES = [
    CASES[0],
    (2, 3, 5, 7, 5, 1, 1.0),
    pytest.param((1, 1, 15, 15, 15, 1, 1.0), marks=pytest.mark.slow),  # odd L = k = 15
    pytest.param((1, 2, 6, 6, 9, 2, 1.0), marks=pytest.mark.slow),  # kernel wider than the torus
    (1, 2, 5, 5, 3, 2, 0.0),  # zeros
    (1, 2, 5, 5, 3, 1, 30.0),  # large inputs
]


def case_id(case):
    values = case.values[0] if hasattr(case, "values") else case
    return "B{}-C{}-{}x{}-k{}-in{}-s{}".format(*values)


@pytest.fixture
def interpret(monkeypatch):
    """Run the Triton kernel on CPU through Triton's interpreter (TRITON_INTERPRET=1)."""
    pytest.importorskip("triton")
    assert os.environ.get("TRITON_INTERPRET") == "1"  # set by conftest before triton's import
    monkeypatch.setenv("ICML25_BACKEND", "triton-interpret")


@pytest.mark.parametrize("case", TRITON_CASES, ids=case_id)
def test_triton_interpreted_matches_naive_float32(case, interpret):
    args = inputs(*case)
    ref = naive_sdconv(*args)
    out = sdconv(*args)  # dispatched to the Triton kernel by ICML25_BACKEND
    assert out.shape == ref.shape
    assert torch.isfinite(out).all()
    if float(ref.abs().max()) == 0:
        assert float(out.abs().max()) < 1e-6
    else:
        assert rel_rms(out, ref) < 1e-5


def test_triton_backward_matches_naive(interpret):
    args = [a.requires_grad_() for a in inputs(1, 2, 4, 4, 3, 1, 1.0)]
    cot = torch.randn(1, 2, 4, 4, generator=torch.Generator().manual_seed(1))
    ref = torch.autograd.grad((naive_sdconv(*args) * cot).sum(), args)
    got = torch.autograd.grad((sdconv(*args, form="triton") * cot).sum(), args)
    for r, g in zip(ref, got, strict=True):
        assert rel_rms(g, r) < 1e-5
