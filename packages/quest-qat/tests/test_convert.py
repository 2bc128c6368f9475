"""Spec test 9: the converted layers reproduce the fake-quantized ones (W4A4 int4 GEMM, W8A8 and
5-8 bit grids through ``torch._int_mm``, weight-only W4A16/W8A16); packing; integer GEMMs."""

import copy
import io

import pytest
import torch
from quest_qat import (
    QuESTConfig,
    QuESTInt4Linear,
    QuESTInt8Linear,
    block_hadamard,
    convert_,
    int4_matmul,
    pack_int4,
    prepare_,
    quantize_codes,
    unpack_int4,
)
from quest_qat.nn import int8_gemm
from torch import nn
from torch.nn import functional as F


def _mlp(dtype):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(256, 128), nn.GELU(), nn.Linear(128, 40)).to(dtype)


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 1e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize("bits", [1, 2, 3, 4])
def test_convert_matches_prepare(dtype, tol, bits, gen):
    model = prepare_(_mlp(dtype), QuESTConfig(bits, bits))
    x = torch.randn(7, 256, generator=gen).to(dtype)
    with torch.no_grad():
        fake = model(x)
        converted = convert_(copy.deepcopy(model))(x)
    assert isinstance(converted, torch.Tensor)
    scale = max(1.0, fake.abs().max().item())
    assert (fake - converted).abs().max().item() <= tol * scale


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 1e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize(
    ("w_bits", "a_bits", "cls"),
    [(8, 8, QuESTInt8Linear), (5, 5, QuESTInt8Linear), (6, 7, QuESTInt8Linear),
     (4, 8, QuESTInt4Linear), (8, 3, QuESTInt8Linear)],
    ids=["W8A8", "W5A5", "W6A7", "W4A8", "W8A3"],
)  # fmt: skip
def test_int8_grids_match_prepare(dtype, tol, w_bits, a_bits, cls, gen):
    """W8A8 and the 5-8 bit grids convert through torch._int_mm; the output is the fake-quantized
    one to float rounding (exact maths: the epilogue equals Σ (q_a+½)Δ_a (q_w+½)Δ_w)."""
    model = prepare_(_mlp(dtype), QuESTConfig(w_bits, a_bits))
    x = torch.randn(7, 256, generator=gen).to(dtype)
    with torch.no_grad():
        fake = model(x)
        converted = convert_(copy.deepcopy(model))
        out = converted(x)
    assert isinstance(converted[0], cls)
    assert converted[0].qweight.dtype == (torch.uint8 if cls is QuESTInt4Linear else torch.int8)
    assert (fake - out).abs().max().item() <= tol * max(1.0, fake.abs().max().item())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("w_bits", [2, 4, 8])
def test_weight_only_equals_fake_quant_bit_for_bit(dtype, w_bits, gen):
    """W4A16 (and W2A16, W8A16): int weights, activations rotated but not quantized, in their
    own dtype; the very operations of the fake-quantized layer, so the outputs are equal."""
    model = prepare_(_mlp(dtype), QuESTConfig(w_bits, None))
    x = torch.randn(5, 3, 256, generator=gen).to(dtype)
    with torch.no_grad():
        fake = model(x)
        converted = convert_(copy.deepcopy(model))
        out = converted(x)
    assert out.dtype == dtype
    assert torch.equal(out, fake)
    layer = converted[0]
    assert layer.a_bits is None
    packed = w_bits <= 4
    assert layer.qweight.shape == (128, 128 if packed else 256)
    assert layer.qweight.dtype == (torch.uint8 if packed else torch.int8)
    # closed form from the public ops: rotated x times the dequantized codes of W·H
    codes, step = quantize_codes(model[0].weight.detach(), w_bits)
    w_hat = ((codes.to(step.dtype) + 0.5) * step).to(dtype)
    expected = F.linear(block_hadamard(x, 128), w_hat, model[0].bias.detach())
    assert torch.equal(layer(x), expected)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_weight_only_half_precision_takes_the_int4_kernel(dtype, gen):
    """bf16/fp16 on the CPU: torch's int4 x float kernel, within the dtype's rounding (2^-7 of
    the largest output) of the exact float64 product, as the fake-quantized layer is; a layer
    the kernel cannot take (N = 40, not a multiple of 16) dequantizes: bit for bit."""
    model = prepare_(_mlp(dtype), QuESTConfig(4, None))
    converted = convert_(copy.deepcopy(model))
    x = torch.randn(9, 256, generator=gen).to(dtype)
    codes, step = quantize_codes(model[0].weight.detach(), 4)
    w_hat = (codes.double() + 0.5) * step.double()
    exact = F.linear(block_hadamard(x.double(), 128), w_hat, model[0].bias.detach().double())
    with torch.no_grad():
        for out in (converted[0](x), model[0](x)):
            assert out.dtype == dtype
            err = (out.double() - exact).abs().max().item()
            assert err <= 2.0**-7 * exact.abs().max().item()
        assert converted[0]._tinygemm is not None
        h = torch.randn(4, 128, generator=gen).to(dtype)
        assert torch.equal(converted[2](h), model[2](h))
        assert converted[2]._tinygemm is None


def test_int4_kernel_cache_follows_load_state_dict(gen):
    """The kernel's packed weights are rebuilt when the layer's codes change."""
    a = convert_(prepare_(_mlp(torch.bfloat16), QuESTConfig(4, None)))
    torch.manual_seed(1)
    b = convert_(prepare_(nn.Sequential(nn.Linear(256, 128), nn.GELU(), nn.Linear(128, 40))
                          .bfloat16(), QuESTConfig(4, None)))  # fmt: skip
    x = torch.randn(3, 256, generator=gen).bfloat16()
    with torch.no_grad():
        before = b(x)
        b.load_state_dict(a.state_dict())
        assert torch.equal(b(x), a(x))
        assert not torch.equal(b(x), before)


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
def test_int8_gemm_is_exact(device):
    """torch._int_mm of full-range int8 codes equals an int64 matmul, odd shapes included (on
    CUDA: M > 16 with K, N multiples of 8 take torch._int_mm, the others the float64 product)."""
    g = torch.Generator().manual_seed(5)
    for m, k, n in [(1, 128, 3), (7, 100, 40), (17, 384, 33), (32, 256, 40)]:
        a = torch.randint(-128, 128, (m, k), generator=g, dtype=torch.int8)
        w = torch.randint(-128, 128, (n, k), generator=g, dtype=torch.int8)
        c = int8_gemm(a.to(device), w.to(device))
        assert c.dtype == torch.int32
        assert torch.equal(c.cpu().long(), a.long() @ w.long().T)


def test_convert_sparse48_matches_prepare(gen):
    model = prepare_(_mlp(torch.float64), QuESTConfig(4, 4, sparse48=True))
    x = torch.randn(5, 256, generator=gen, dtype=torch.float64)
    with torch.no_grad():
        assert torch.allclose(model(x), convert_(copy.deepcopy(model))(x), atol=1e-12, rtol=0)


def test_codes_in_int4_range(gen):
    codes, _ = quantize_codes(torch.randn(64, 256, generator=gen) * 100, 4)
    assert codes.min() >= -8
    assert codes.max() <= 7
    assert codes.min() == -8
    assert codes.max() == 7


def test_pack_layout_low_nibble_even_column():
    assert pack_int4(torch.tensor([[1, -2]], dtype=torch.int8)).item() == 0xE1


def test_pack_roundtrip_all_codes():
    codes = torch.arange(-8, 8, dtype=torch.int8).repeat(3, 2)
    assert torch.equal(unpack_int4(pack_int4(codes)), codes)


def test_int4_matmul_equals_int64_matmul(gen):
    a = torch.randint(-8, 8, (13, 512), generator=gen, dtype=torch.int8)
    w = torch.randint(-8, 8, (9, 512), generator=gen, dtype=torch.int8)
    c = int4_matmul(a, pack_int4(w))
    assert c.dtype == torch.int32
    assert torch.equal(c.long(), a.long() @ w.long().T)


def test_converted_state_dict_roundtrips(gen):
    model = convert_(prepare_(_mlp(torch.float32), QuESTConfig(4, 4)))
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    other = convert_(prepare_(_mlp(torch.float32), QuESTConfig(4, 4)))
    for m in other.modules():
        if isinstance(m, QuESTInt4Linear):
            m.qweight.zero_()
    buf.seek(0)
    other.load_state_dict(torch.load(buf, weights_only=True))
    x = torch.randn(3, 256, generator=gen)
    assert torch.equal(model(x), other(x))
    assert set(model.state_dict()) == {
        f"{i}.{b}" for i in (0, 2) for b in ("qweight", "w_step", "w_add", "bias", "_extra_state")
    }


@pytest.mark.parametrize(
    ("config", "field"),
    [(QuESTConfig(4, 2), "a_bits=4"), (QuESTConfig(4, 4, block=64), "block=128")],
    ids=["a_bits", "block"],
)
def test_state_dict_of_other_activation_settings_is_refused(config, field):
    """The int4 codes are only valid with the activation grid and block they were made for; such a
    load used to match every key and compute wrong outputs silently."""
    model = convert_(prepare_(_mlp(torch.float32), QuESTConfig(4, 4)))
    other = convert_(prepare_(_mlp(torch.float32), config))
    with pytest.raises(ValueError, match=field):
        other.load_state_dict(model.state_dict())


def test_convert_refusal_leaves_the_model_unchanged():
    model = _mlp(torch.float32)
    prepare_(model, QuESTConfig(4, 4), filter_fn=lambda m, fqn: fqn == "0")
    prepare_(model, QuESTConfig(4, 4, grid="fp4"), filter_fn=lambda m, fqn: fqn == "2")
    with pytest.raises(NotImplementedError, match=r"layer '2'.*unchanged"):
        convert_(model)
    assert [type(model[i]).__name__ for i in (0, 2)] == ["QuESTLinear", "QuESTLinear"]


def test_prepared_state_dict_roundtrips(gen):
    model = prepare_(_mlp(torch.float32), QuESTConfig(2, 2))
    plain = _mlp(torch.float32)
    assert set(model.state_dict()) == set(plain.state_dict())
    plain.load_state_dict(model.state_dict())
    again = prepare_(plain, QuESTConfig(2, 2))
    x = torch.randn(3, 256, generator=gen)
    assert torch.equal(model(x), again(x))


@pytest.mark.parametrize(
    "config", [QuESTConfig(4, 4, grid="fp4"), QuESTConfig(None, 4)], ids=["fp4", "w16"]
)
def test_convert_refusal_lists_what_converts(config):
    """FP4 stays training-only and W16A* keeps its full-precision weight: the refusal says
    exactly which configurations convert."""
    with pytest.raises(NotImplementedError, match=r"W1-8A1-8.*weight-only W1-8A16.*W16A\*"):
        convert_(prepare_(_mlp(torch.float32), config))


def test_convert_rejects_nonfinite_weights():
    model = prepare_(_mlp(torch.float32), QuESTConfig())
    with torch.no_grad():
        model[0].weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        convert_(model)
