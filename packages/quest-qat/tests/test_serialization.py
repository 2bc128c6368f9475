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
    with pytest.raises(ValueError, match=r"layer '0'.*K=128, N=8.*\(9, 128\)"):
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
