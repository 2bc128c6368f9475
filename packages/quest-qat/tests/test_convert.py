"""Spec test 9: the int4 conversion reproduces the fake-quantized layer; packing; int4 GEMM."""

import copy
import io

import pytest
import torch
from quest_qat import (
    QuESTConfig,
    QuESTInt4Linear,
    convert_,
    int4_matmul,
    pack_int4,
    prepare_,
    quantize_codes,
    unpack_int4,
)
from torch import nn


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
    prepare_(model, QuESTConfig(8, 8), filter_fn=lambda m, fqn: fqn == "2")
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
    "config",
    [QuESTConfig(4, 4, grid="fp4"), QuESTConfig(8, 8), QuESTConfig(4, None), QuESTConfig(None, 4)],
    ids=["fp4", "8bit", "a16", "w16"],
)
def test_convert_unsupported_raises(config):
    with pytest.raises(NotImplementedError):
        convert_(prepare_(_mlp(torch.float32), config))


def test_convert_rejects_nonfinite_weights():
    model = prepare_(_mlp(torch.float32), QuESTConfig())
    with torch.no_grad():
        model[0].weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        convert_(model)
