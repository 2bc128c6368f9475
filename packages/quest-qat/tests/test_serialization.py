"""A converted model round-trips through safetensors: save_quantized, then load_quantized in a
fresh process (a tiny random-initialised transformers Llama, no download) gives identical
logits; the directory carries a transformers ``quantization_config`` naming QuEST."""

import json
import os
import subprocess
import sys

import pytest
import torch
from quest_qat import (
    QuESTConfig,
    QuESTInt4Linear,
    QuESTInt8Linear,
    convert_,
    load_quantized,
    prepare_,
    save_quantized,
)
from torch import nn

LLAMA = dict(vocab_size=64, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
             num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32,
             tie_word_embeddings=True)  # fmt: skip

# The fresh process: the architecture from config.json, other random weights, then the file.
RELOAD = """
import sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
from quest_qat import load_quantized
torch.set_num_threads(1)
torch.manual_seed(123)
model = LlamaForCausalLM(LlamaConfig.from_pretrained(sys.argv[1])).eval()
load_quantized(model, sys.argv[1])
with torch.no_grad():
    logits = model(torch.load(sys.argv[2])).logits
torch.save({"logits": logits, "classes": [type(m).__name__ for m in model.modules()]}, sys.argv[3])
"""


def _converted_llama():
    """A tiny Llama with three QuEST configurations: attention W4A4, MLP up/gate W8A8, MLP down
    weight-only W4A16 (the head, tied to the embedding, stays in full precision)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**LLAMA)).eval()
    prepare_(model, QuESTConfig(4, None), filter_fn=lambda m, fqn: fqn.endswith("down_proj"))
    prepare_(model, QuESTConfig(8, 8), filter_fn=lambda m, fqn: ".mlp." in fqn)
    prepare_(model, QuESTConfig(4, 4))
    return convert_(model)


@pytest.mark.slow
def test_converted_llama_reloads_in_a_fresh_process_with_identical_logits(tmp_path):
    model = _converted_llama()
    ids = torch.randint(0, 64, (2, 12), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        logits = model(ids).logits
    save_quantized(model, tmp_path / "ckpt")
    torch.save(ids, tmp_path / "ids.pt")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    argv = [str(tmp_path / "ckpt"), str(tmp_path / "ids.pt"), str(tmp_path / "out.pt")]
    subprocess.run([sys.executable, "-c", RELOAD, *argv], check=True, env=env, timeout=120)
    out = torch.load(tmp_path / "out.pt", weights_only=True)
    assert torch.equal(out["logits"], logits)
    assert out["classes"].count("QuESTInt4Linear") == 2 * 5  # q, k, v, o, down per layer
    assert out["classes"].count("QuESTInt8Linear") == 2 * 2  # gate, up per layer
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())["quantization_config"]
    assert config["quant_method"] == "quest"
    assert (config["w_bits"], config["a_bits"], config["block"], config["rotate"]) == (
        None, None, 128, True,
    )  # fmt: skip
    assert config["layers"]["model.layers.0.mlp.down_proj"] == {
        "class": "QuESTInt4Linear", "w_bits": 4, "a_bits": None, "block": 128, "rotate": True,
    }  # fmt: skip
    assert config["layers"]["model.layers.1.mlp.up_proj"]["w_bits"] == 8


def test_plain_module_round_trips_in_process(tmp_path):
    """A model without a transformers config: no config.json, the file alone suffices."""
    torch.manual_seed(0)
    model = convert_(prepare_(nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 8)),
                              QuESTConfig(4, 4, block="auto", sparse48=True)))  # fmt: skip
    save_quantized(model, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.safetensors"]
    torch.manual_seed(1)
    fresh = load_quantized(nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 8)), tmp_path)
    assert isinstance(fresh[0], QuESTInt4Linear)
    assert fresh[0].w_keep is not None
    x = torch.randn(3, 128)
    assert torch.equal(fresh(x), model(x))


def test_refusals(tmp_path):
    prepared = prepare_(nn.Sequential(nn.Linear(128, 8)), QuESTConfig(8, 8))
    with pytest.raises(ValueError, match="convert_"):
        save_quantized(prepared, tmp_path)
    with pytest.raises(ValueError, match="no converted"):
        save_quantized(nn.Sequential(nn.Linear(128, 8)), tmp_path)
    with pytest.raises(TypeError, match="model"):
        save_quantized("model", tmp_path)
    with pytest.raises(FileNotFoundError, match=r"model\.safetensors"):
        load_quantized(nn.Sequential(nn.Linear(128, 8)), tmp_path / "missing")
    save_quantized(convert_(prepared), tmp_path / "w8")
    assert isinstance(prepared[0], QuESTInt8Linear)
    with pytest.raises(ValueError, match=r"layer '0'.*K=128, N=8.*K=128, N=9"):
        load_quantized(nn.Sequential(nn.Linear(128, 9)), tmp_path / "w8")
    with pytest.raises(ValueError, match="no layer '0'"):
        load_quantized(nn.Sequential(), tmp_path / "w8")
    with pytest.raises(ValueError, match="do not fit"):
        load_quantized(nn.Sequential(nn.Linear(128, 8), nn.Linear(8, 8)), tmp_path / "w8")
    from safetensors.torch import save_file

    (tmp_path / "plain").mkdir()
    save_file({"0.weight": torch.zeros(8, 128)}, str(tmp_path / "plain" / "model.safetensors"))
    with pytest.raises(ValueError, match="no QuEST quantization_config"):
        load_quantized(nn.Sequential(nn.Linear(128, 8)), tmp_path / "plain")
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError, match="directory"):
        save_quantized(prepared, tmp_path / "file")


# --- strict loading of the quantized layers (trial 28, findings 1, 2, 5, 6) ---------------------


def _net(bias=True):
    return nn.Sequential(nn.Linear(256, 128, bias=bias), nn.GELU(), nn.Linear(128, 256, bias=bias))


def _saved(tmp_path, bias=True, config=None):
    """A converted W4A4 (or `config`) MLP saved in tmp_path/"ck"; returns the directory."""
    torch.manual_seed(0)
    save_quantized(convert_(prepare_(_net(bias), config or QuESTConfig())), tmp_path / "ck")
    return tmp_path / "ck"


def _tampered(src, dst, tensors=None, metadata=None):
    """A copy of the checkpoint `src` in `dst`, its tensors and metadata edited by the
    callables `tensors(dict)` and `metadata(dict)` (in place)."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    state = load_file(str(src / "model.safetensors"))
    with safe_open(str(src / "model.safetensors"), framework="pt") as f:
        meta = dict(f.metadata())
    if tensors:
        tensors(state)
    if metadata:
        metadata(meta)
    dst.mkdir()
    save_file(state, str(dst / "model.safetensors"), metadata=meta)
    return dst


def _snapshot(model):
    return [type(m).__name__ for m in model.modules()], {
        k: v.clone() for k, v in model.state_dict().items()
    }


def _assert_unchanged(model, snapshot):
    kinds, state = _snapshot(model)
    assert kinds == snapshot[0]
    assert set(state) == set(snapshot[1])
    assert all(torch.equal(state[k], snapshot[1][k]) for k in state)


@pytest.mark.parametrize(
    ("model_bias", "file_bias", "match"),
    [
        (True, False, r"missing tensor 0\.bias"),  # the bias deleted from the file
        (False, True, r"unexpected tensor 0\.bias"),  # a biased file into a bias-free model
    ],
)
def test_bias_layout_must_match_the_model(tmp_path, model_bias, file_bias, match):
    """Finding 1: a bias present in the model but absent from the file (or the reverse) raises,
    naming the tensor and the file, and leaves the model as it was."""
    ck = _saved(tmp_path, bias=file_bias)
    target = _net(model_bias)
    before = _snapshot(target)
    with pytest.raises(ValueError, match=match) as err:
        load_quantized(target, ck)
    assert "model.safetensors" in str(err.value)
    _assert_unchanged(target, before)


def test_deleted_bias_of_a_biased_checkpoint_is_refused(tmp_path):
    ck = _tampered(_saved(tmp_path), tmp_path / "nobias", tensors=lambda t: t.pop("0.bias"))
    with pytest.raises(ValueError, match=r"nobias.*missing tensor 0\.bias"):
        load_quantized(_net(), ck)


def _cut(key, n=10):
    return lambda t: t.__setitem__(key, t[key][:n].clone())


def _cast(key, dtype):
    return lambda t: t.__setitem__(key, t[key].to(dtype))


def _layer_field(field, value):
    def edit(meta):
        config = json.loads(meta["quantization_config"])
        config["layers"]["0"][field] = value
        meta["quantization_config"] = json.dumps(config)

    return edit


@pytest.mark.parametrize(
    ("tensors", "metadata", "match"),
    [
        (_cut("0.w_add"), None, r"`0\.w_add` must have shape \(128,\).*got \(10,\)"),
        (_cut("0.bias"), None, r"`0\.bias` must have shape \(128,\)"),
        (_cut("0.w_step"), None, r"`0\.w_step` must have shape \(128, 1\)"),
        (_cast("0.w_step", torch.int32), None, r"`0\.w_step` must be a floating dtype"),
        (_cast("0.w_add", torch.float32), None, r"`0\.w_add` must be torch\.int32"),
        (_cast("0.qweight", torch.float32), None, r"`0\.qweight` must be torch\.uint8"),
        (_cast("0.bias", torch.int64), None, r"`0\.bias` must be a floating dtype"),
        (lambda t: t.__setitem__("2.qweight", t["2.qweight"][:, :32].clone()), None, "K=64"),
        (lambda t: t.__setitem__("0.extra", torch.zeros(1)), None, r"unexpected.*'0\.extra'"),
        (None, _layer_field("w_bits", 9), r"`0\.w_bits` must be an int in 1\.\.4, got 9"),
        (None, _layer_field("w_bits", 2), r"codes in \[-8, 7\].*w_bits=2 grid \[-2, 1\]"),
        (None, _layer_field("a_bits", 99), r"`0\.a_bits` must be an int in 1\.\.8"),
        (None, _layer_field("block", 100), r"`0\.block` must be a power of 2"),
        (None, _layer_field("block", 512), r"K=256 must be a multiple of `0\.block`=512"),
        (None, _layer_field("rotate", "yes"), r"`0\.rotate` must be a bool"),
        (None, _layer_field("class", "QuESTInt8Linear"), r"`0\.qweight` must be torch\.int8"),
        (None, _layer_field("class", "Linear"), "unknown class 'Linear'"),
    ],
)
def test_tampered_tensors_and_metadata_are_refused_at_load(tmp_path, tensors, metadata, match):
    """Finding 2: each tampered tensor or metadata value raises at load (not at the first
    forward, not silently), naming the tensor or field and the file; the model is unchanged
    (finding 5). The expected shapes come from the layer sizes (N=128, K=256), not the code."""
    ck = _tampered(_saved(tmp_path), tmp_path / "bad", tensors, metadata)
    target = _net()
    before = _snapshot(target)
    with pytest.raises(ValueError, match=match) as err:
        load_quantized(target, ck)
    assert str(tmp_path / "bad" / "model.safetensors") in str(err.value)
    _assert_unchanged(target, before)


def _meta(key, value):
    return lambda meta: meta.__setitem__(key, value)


def _config_without(field):
    def edit(meta):
        config = json.loads(meta["quantization_config"])
        config["layers"]["0"].pop(field) if field == "a_bits" else config.pop(field)
        meta["quantization_config"] = json.dumps(config)

    return edit


@pytest.mark.parametrize(
    ("metadata", "match"),
    [
        (_meta("quantization_config", "{oops"), "malformed quantization_config"),
        (_meta("quantization_config", "[1, 2]"), "no QuEST quantization_config"),
        (_config_without("layers"), "malformed quantization_config: `layers`"),
        (_config_without("a_bits"), r"layers\['0'\] lacks \['a_bits'\]"),
        (_meta("aliases", "oops"), "malformed aliases"),
        (_meta("aliases", "[1]"), "malformed aliases"),
        (_meta("aliases", '{"0.bias": "nope"}'), r"malformed aliases: '0\.bias' -> 'nope'"),
    ],
)
def test_malformed_metadata_is_a_value_error_naming_the_file(tmp_path, metadata, match):
    """Finding 6: no raw JSONDecodeError/KeyError/AttributeError."""
    ck = _tampered(_saved(tmp_path), tmp_path / "bad", metadata=metadata)
    target = _net()
    before = _snapshot(target)
    with pytest.raises(ValueError, match=match) as err:
        load_quantized(target, ck)
    assert "model.safetensors" in str(err.value)
    _assert_unchanged(target, before)


def test_failed_load_leaves_the_model_unchanged(tmp_path):
    """Finding 5: a model with one layer more than the checkpoint is refused before any layer
    is replaced (it used to come back half converted)."""
    ck = _saved(tmp_path)
    target = nn.Sequential(*_net(), nn.Linear(256, 256))
    before = _snapshot(target)
    with pytest.raises(ValueError, match=r"missing tensor\(s\) \['3\.bias', '3\.weight'\]"):
        load_quantized(target, ck)
    _assert_unchanged(target, before)


def test_constructors_validate_their_arguments():
    """The public constructors refuse what would fail (or be wrong) at the first forward."""
    n, k = 4, 16
    codes8 = torch.zeros(n, k, dtype=torch.int8)
    ok = dict(w_step=torch.ones(n, 1), w_add=torch.zeros(n, dtype=torch.int32), bias=None)
    meta = dict(w_bits=8, a_bits=8, block=16, rotate=True)
    assert QuESTInt8Linear(codes8, **ok, **meta).in_features == k
    with pytest.raises(ValueError, match=r"`w_bits` must be an int in 1\.\.8, got 12"):
        QuESTInt8Linear(codes8, **ok, **{**meta, "w_bits": 12})
    with pytest.raises(ValueError, match=r"`w_bits` must be an int in 1\.\.4, got 5"):
        QuESTInt4Linear(torch.zeros(n, k // 2, dtype=torch.uint8), **ok, **{**meta, "w_bits": 5})
    with pytest.raises(TypeError, match=r"`qweight` must be torch\.int8, got torch\.float32"):
        QuESTInt8Linear(codes8.float(), **ok, **meta)
    with pytest.raises(TypeError, match=r"`qweight` must be torch\.uint8"):
        QuESTInt4Linear(codes8, **ok, **{**meta, "w_bits": 4})
    with pytest.raises(ValueError, match=r"`w_step` must have shape \(4, 1\)"):
        QuESTInt8Linear(codes8, **{**ok, "w_step": torch.ones(n)}, **meta)
    with pytest.raises(TypeError, match=r"`w_keep` must be torch\.bool"):
        QuESTInt8Linear(codes8, **ok, **meta, w_keep=torch.ones(n, k))
    with pytest.raises(ValueError, match=r"K=16 must be a multiple of `block`=32"):
        QuESTInt8Linear(codes8, **ok, **{**meta, "block": 32})
    # codes outside the w_bits grid: 3 does not fit 2 bits ([-2, 1]), -2 does
    with pytest.raises(ValueError, match=r"codes in \[3, 3\].*\[-2, 1\]"):
        QuESTInt8Linear(codes8 + 3, **ok, **{**meta, "w_bits": 2})
    QuESTInt8Linear(codes8 - 2, **ok, **{**meta, "w_bits": 2})
