"""Finite input gives finite output at the dtype limits (the row RMS is computed scaled).

QuEST's σ, Δ and x̂ are positively homogeneous in x (QuEST §3: σ = RMS(x_h), Δ ∝ σ, x̂ = (q+½)Δ,
q = ⌊x_h/Δ⌋ scale-free) once the 1e-8 of the scale is negligible, and scaling by a power of two is
exact in floating point: so Q(2^k·x) must equal 2^k·Q(x) bit for bit. The unscaled sum of squares
overflowed for float32 rows above ~1e18 (σ = inf, Δ = inf, x̂ = inf).
"""

import copy

import pytest
import torch
from quest_qat import QuESTConfig, convert_, prepare_, quantize_codes, quest_quantize
from torch import nn

F32_MAX = torch.finfo(torch.float32).max
F16_MAX = torch.finfo(torch.float16).max


def _rows(dtype=torch.float64):
    """Gaussian rows with |x| in [1e-2, 4], a constant row (the Hadamard concentrates it:
    |x_h| = sqrt(128)·|x|) and a spike row, (4, 256)."""
    g = torch.Generator().manual_seed(11)
    x = torch.randn(4, 256, generator=g, dtype=dtype).clamp(-4, 4)
    x = torch.where(x < 0, -1.0, 1.0) * x.abs().clamp(min=1e-2)
    x[1] = 3.0
    x[2] = 1e-2
    x[2, 7] = -7.5
    return x


@pytest.mark.parametrize("rotate", [True, False], ids=["HT", "noHT"])
@pytest.mark.parametrize("bits", [1, 2, 4, 8])
@pytest.mark.parametrize(
    ("dtype", "ref_exp", "limit_exp"),
    [(torch.float32, 30, 120), (torch.float16, 4, 12), (torch.float64, 60, 1010)],
    ids=["fp32", "fp16", "fp64"],
)
def test_quantizer_is_homogeneous_up_to_the_dtype_limit(dtype, ref_exp, limit_exp, bits, rotate):
    """Rows near the largest finite values (fp32 ~1e37, fp64 ~1e305, fp16 3e4) give exactly
    2^k times the result of the same rows at a moderate scale, where the unscaled formulas hold
    (the 1e-8 of the scale is negligible there: x ~ 2^30 in fp32, 2^60 in fp64, 2^4 in fp16,
    whose statistics run in fp32)."""
    base = _rows(torch.float64)
    x_ref = (base * 2.0**ref_exp).to(dtype)
    x_big = (base * 2.0**limit_exp).to(dtype)
    factor = 2.0 ** (limit_exp - ref_exp)
    xhat_r, mask_r, step_r = quest_quantize(x_ref, bits, rotate=rotate)
    xhat_b, mask_b, step_b = quest_quantize(x_big, bits, rotate=rotate)
    assert bool(torch.isfinite(xhat_b).all())
    assert bool(torch.isfinite(step_b).all())
    assert torch.equal(mask_b, mask_r)
    assert torch.equal(step_b, step_r * factor)
    expected = xhat_r.to(step_r.dtype) * factor  # fp16 x̂ beyond 65504 saturates
    if dtype == torch.float16:
        expected = expected.clamp(-F16_MAX, F16_MAX)
    assert torch.equal(xhat_b, expected.to(dtype))
    codes_r, _ = quantize_codes(x_ref, bits, rotate=rotate)
    codes_b, _ = quantize_codes(x_big, bits, rotate=rotate)
    assert torch.equal(codes_b, codes_r)


@pytest.mark.parametrize("rotate", [True, False], ids=["HT", "noHT"])
@pytest.mark.parametrize("bits", [1, 4, 8])
def test_largest_float32_values_give_finite_output(bits, rotate):
    """Rows of ±3.4e38: x̂ and Δ stay finite (the exact values beyond the float32 range saturate
    at its maximum) and the codes are those of the same rows scaled down by 2^64."""
    x = torch.tensor([[F32_MAX, -F32_MAX] * 64, [F32_MAX] * 128, [-F32_MAX / 3] + [0.0] * 127])
    xhat, mask, step = quest_quantize(x, bits, rotate=rotate)
    assert bool(torch.isfinite(xhat).all())
    assert bool(torch.isfinite(step).all())
    assert xhat.abs().max().item() <= F32_MAX
    codes, _ = quantize_codes(x, bits, rotate=rotate)
    codes_small, _ = quantize_codes(x * 2.0**-64, bits, rotate=rotate)
    assert torch.equal(codes, codes_small)
    _, mask_small, _ = quest_quantize(x * 2.0**-64, bits, rotate=rotate)
    assert torch.equal(mask, mask_small)


def test_fp16_layer_with_the_largest_fp16_inputs_is_finite():
    """A constant fp16 row of 6e4 becomes 6.8e5 after the Hadamard (beyond fp16): the fake-quant
    and weight-only layers saturate their rotated operands instead of returning inf."""
    x = torch.full((2, 128), 60000.0, dtype=torch.float16)
    for config in (QuESTConfig(4, 4), QuESTConfig(4, None)):
        torch.manual_seed(0)
        model = prepare_(nn.Sequential(nn.Linear(128, 8)), config).half()
        with torch.no_grad():
            assert bool(torch.isfinite(model(x)).all())
            assert bool(torch.isfinite(convert_(copy.deepcopy(model))(x)).all())


@pytest.mark.parametrize(("w_bits", "a_bits"), [(4, 4), (8, 8), (4, None)])
def test_converted_layer_is_homogeneous_in_its_input(w_bits, a_bits):
    """Without bias, y(2^k·x) = 2^k·y(x) exactly for the converted layers too (activation codes
    are scale-free, Δ_a scales), up to inputs of ~1e36 in float32."""
    torch.manual_seed(0)
    model = convert_(
        prepare_(nn.Sequential(nn.Linear(256, 16, bias=False)), QuESTConfig(w_bits, a_bits))
    )
    x = _rows(torch.float32) * 2.0**30
    with torch.no_grad():
        small, big = model(x), model(x * 2.0**90)
    assert bool(torch.isfinite(big).all())
    assert torch.equal(big, small * 2.0**90)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize("bits", [1, 4, 8])
def test_scaled_statistics_give_the_unscaled_bits(dtype, bits, monkeypatch):
    """CUDA and torch.compile always take the scaled path (no host check of σ); on ordinary
    rows, a zero row included, it gives the very bits of the unscaled formulas that the CPU
    keeps there, since dividing and multiplying by a power of two is exact."""
    from quest_qat.kernels.quest.naive import quest_codes_naive, quest_fwd_naive

    x = (_rows(torch.float64) * 3).to(dtype)
    x[3] = 0.0
    plain = (*quest_fwd_naive(x, bits, trust=0.5), *quest_codes_naive(x, bits))
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    scaled = (*quest_fwd_naive(x, bits, trust=0.5), *quest_codes_naive(x, bits))
    for a, b in zip(plain, scaled, strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("w_bits", [4, 8])
def test_weight_only_layers_propagate_non_finite_input_like_nn_linear(dtype, w_bits):
    """Trial 28, finding 4: ±inf or NaN in a row gives non-finite outputs in that row, exactly
    where nn.Linear's are non-finite (the peer); finite rows, the row of the largest finite
    value included, stay finite in all three. The rotation used to clamp ±inf to the largest
    finite value, so W4A16/W8A16 turned ±inf into plausible finite outputs."""
    torch.manual_seed(0)
    linear = nn.Sequential(nn.Linear(256, 128))
    fake = prepare_(copy.deepcopy(linear), QuESTConfig(w_bits=w_bits, a_bits=None)).to(dtype)
    converted = convert_(copy.deepcopy(fake))
    x = torch.randn(5, 256, generator=torch.Generator().manual_seed(1)).to(dtype)
    x[0, 7] = float("inf")
    x[1, 3] = float("-inf")
    x[2, 9] = float("nan")
    x[3] = torch.finfo(dtype).max  # finite: saturates, stays finite
    with torch.no_grad():
        bad_rows = ~torch.isfinite(linear.to(dtype)(x[:3])).all(-1)
        assert bad_rows.all()  # the peer: every non-finite row gives a non-finite output
        for layer in (fake, converted):
            y = layer(x)
            assert not torch.isfinite(y[:3]).all(-1).any(), type(layer[0]).__name__
            assert torch.isfinite(y[3:]).all(), type(layer[0]).__name__


def _keep_48_brute_force(values):
    """The 4:8 rule by enumeration: in each group of 4 pairs, of the 6 ways to keep 2 pairs the
    one with the largest sum of squares; among equal sums, the lexicographically first pair
    indices (lower index wins a tie)."""
    import itertools

    m, k = values.shape
    keep = torch.zeros(m, k, dtype=torch.bool)
    for i in range(m):
        for g in range(k // 8):
            norms = [
                float((values[i, 8 * g + 2 * p : 8 * g + 2 * p + 2] ** 2).sum()) for p in range(4)
            ]
            best = max(
                itertools.combinations(range(4), 2),
                key=lambda c: (norms[c[0]] + norms[c[1]], [-p for p in c]),
            )
            for p in best:
                keep[i, 8 * g + 2 * p : 8 * g + 2 * p + 2] = True
    return keep


def test_keep_48_breaks_ties_by_index_and_ignores_the_step():
    """Trial 28, finding 3: the 4:8 mask is the brute-force choice, ties (frequent on a 2-bit
    grid) going to the lower pair, and it is chosen on the grid units, so two steps one ulp
    apart (row-wise tensor parallelism's σ) give the same mask and x̂ scaled by the step."""
    from quest_qat.kernels.quest.naive import keep_48, quest_fwd_naive

    g = torch.Generator().manual_seed(5)
    units = torch.randint(-2, 2, (16, 64), generator=g).double() + 0.5  # 2-bit codes + ½
    assert torch.equal(keep_48(units), _keep_48_brute_force(units))
    assert torch.equal(keep_48(units.float()), _keep_48_brute_force(units))
    # the fake-quant forward: scaling x by 1 + 2^-52 moves σ by an ulp, not the mask
    x = torch.randn(32, 256, generator=g, dtype=torch.float64)
    a, _, step_a = quest_fwd_naive(x, 2, sparse48=True)
    b, _, step_b = quest_fwd_naive(x * (1 + 2**-52), 2, sparse48=True)
    assert torch.equal(a != 0, b != 0)
    torch.testing.assert_close(b, a * step_b / step_a, rtol=1e-14, atol=0)
