"""Spec test 13: model surgery keeps Parameters and keys, skips lm_head, compiles, trains."""

import warnings

import numpy as np
import pytest
import torch
from quest_qat import QuESTConfig, QuESTLinear, mask_stats, prepare_
from torch import nn


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 128)
        self.proj = nn.Linear(128, 256)
        self.out = nn.Linear(256, 128, bias=False)
        self.lm_head = nn.Linear(128, 50)
        self.tied = nn.Linear(128, 50, bias=False)
        self.tied.weight = self.embed.weight

    def forward(self, ids):
        h = self.embed(ids)
        return self.lm_head(self.out(torch.relu(self.proj(h)))) + self.tied(h)


def test_prepare_keeps_parameters_and_keys():
    model = Tiny()
    before = dict(model.named_parameters())
    keys = set(model.state_dict())
    opt = torch.optim.AdamW(model.parameters())
    prepare_(model, QuESTConfig())
    assert isinstance(model.proj, QuESTLinear)
    assert isinstance(model.out, QuESTLinear)
    assert type(model.lm_head) is nn.Linear
    assert type(model.tied) is nn.Linear
    after = dict(model.named_parameters())
    assert all(after[k] is before[k] for k in before)
    assert set(model.state_dict()) == keys
    assert opt.param_groups[0]["params"][1] is model.proj.weight
    with pytest.warns(UserWarning, match=r"swapped no layer.*already holds 2 QuEST layers"):
        prepare_(model, QuESTConfig())  # second call: a no-op
    assert isinstance(model.proj.w_quantizer, nn.Module)
    assert model.proj.weight is before["proj.weight"]


def test_warning_names_layers_that_are_not_plain_linear():
    """nn.Linear subclasses are not swapped (they may override forward); the warning names them
    (it said "(already prepared?)")."""

    class MyLinear(nn.Linear):
        pass

    model = nn.Sequential(MyLinear(128, 128))
    with pytest.warns(UserWarning, match="MyLinear are not plain nn.Linear") as record:
        prepare_(model, QuESTConfig())
    assert "already holds" not in str(record[0].message)
    assert type(model[0]) is MyLinear


def test_output_head_is_skipped_by_role_not_name():
    """The module get_output_embeddings() returns stays in full precision whatever its name
    (GPT-NeoX called it embed_out); the other layers are swapped."""

    class NeoXLike(nn.Module):
        def __init__(self):
            super().__init__()
            self.mlp = nn.Linear(128, 128)
            self.embed_out = nn.Linear(128, 50)

        def get_output_embeddings(self):
            return self.embed_out

    model = prepare_(NeoXLike(), QuESTConfig())
    assert type(model.embed_out) is nn.Linear
    assert isinstance(model.mlp, QuESTLinear)


def test_hf_gpt_neox_head_stays_full_precision():
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    config = GPTNeoXConfig(vocab_size=64, hidden_size=128, num_hidden_layers=1,
                           num_attention_heads=2, intermediate_size=256)  # fmt: skip
    model = prepare_(GPTNeoXForCausalLM(config), QuESTConfig())
    head = model.get_output_embeddings()
    assert type(head) is nn.Linear
    assert sum(isinstance(m, QuESTLinear) for m in model.modules()) == 4  # qkv, dense, h->4h, 4h->h


def _gpt2(seed=0):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=64, n_embd=128, n_layer=1, n_head=2, n_positions=16,
                        bos_token_id=0, eos_token_id=0)  # fmt: skip
    return GPT2LMHeadModel(config).eval()


def test_gpt2_conv1d_is_quantized_as_the_transposed_linear(gen):
    """Conv1D computes x·W + b with W stored (K, N): as a QuESTLinear it keeps its Parameter
    (same object, same state_dict keys) and gives what nn.Linear with weight Wᵀ gives."""
    from transformers.pytorch_utils import Conv1D

    model = _gpt2()
    keys = set(model.state_dict())
    c_fc = model.transformer.h[0].mlp.c_fc
    weight = c_fc.weight
    linear = nn.Linear(128, 512)
    with torch.no_grad():
        linear.weight.copy_(weight.T)
        linear.bias.copy_(c_fc.bias)
    reference = prepare_(nn.Sequential(linear), QuESTConfig())[0]
    prepare_(model, QuESTConfig())
    layer = model.transformer.h[0].mlp.c_fc
    assert isinstance(layer, QuESTLinear)
    assert layer.transposed
    assert layer.weight is weight
    assert not any(isinstance(m, Conv1D) for m in model.modules())
    assert type(model.lm_head) is nn.Linear  # tied to wte, and the output head
    assert set(model.state_dict()) == keys
    x = torch.randn(3, 5, 128, generator=gen)
    assert torch.equal(layer(x), reference(x))
    loss = model(torch.arange(12).reshape(2, 6), labels=torch.arange(12).reshape(2, 6)).loss
    loss.backward()
    assert weight.grad is not None
    assert weight.grad.shape == (128, 512)


def test_gpt2_converts_and_matches_fake_quant_per_layer(gen):
    from quest_qat import QuESTInt4Linear, convert_

    model = prepare_(_gpt2(), QuESTConfig(4, 4))
    fake = model.transformer.h[0].attn.c_attn
    x = torch.randn(4, 128, generator=gen)
    with torch.no_grad():
        expected = fake(x)
        convert_(model)
        layer = model.transformer.h[0].attn.c_attn
        assert isinstance(layer, QuESTInt4Linear)
        assert (layer(x) - expected).abs().max().item() <= 1e-5 * expected.abs().max().item()
        assert torch.isfinite(model(torch.arange(6)[None]).logits).all()


def test_filter_fn_and_block_auto():
    model = nn.Sequential(nn.Linear(96, 64), nn.Linear(64, 8))
    prepare_(model, QuESTConfig(block="auto"), filter_fn=lambda m, fqn: fqn == "0")
    assert isinstance(model[0], QuESTLinear)
    assert model[0].w_quantizer.block == 32
    assert type(model[1]) is nn.Linear


@pytest.mark.slow
def test_torch_compile_matches_eager(gen):
    model = prepare_(nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 32)))
    x = torch.randn(8, 256, generator=gen)
    eager = model(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = torch.compile(model)(x)
    assert (eager - compiled).abs().max().item() <= 1e-5
    assert not [w for w in caught if "lru_cache" in str(w.message)]  # found in the trial


@pytest.mark.slow
def test_hf_llama_trains_on_fortunes():
    pytest.importorskip("transformers")
    from quest_qat.data import load_fortunes, split_bytes
    from quest_qat.training import tiny_llama, train

    model = prepare_(tiny_llama(0), QuESTConfig(4, 4))
    assert type(model.lm_head) is nn.Linear
    n_quest = sum(isinstance(m, QuESTLinear) for m in model.modules())
    assert n_quest == 14  # q, k, v, o, gate, up, down x 2 layers
    train_data, _ = split_bytes(load_fortunes())
    curve = train(model, train_data, steps=60, batch=8, seq=64, log_every=10)
    assert np.isfinite([v for _, v in curve]).all()
    assert curve[-1][1] < curve[0][1]
    stats = mask_stats(model)
    assert all(0.9 < s["weight"] <= 1 and 0.9 < s["activation"] <= 1 for s in stats.values())
