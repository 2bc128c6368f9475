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
    """GPT-2's transformers Conv1D (W stored (K, N)) and nn.Linear subclasses are not swapped;
    the warning said "(already prepared?)" instead of naming them."""
    from transformers.pytorch_utils import Conv1D

    class MyLinear(nn.Linear):
        pass

    model = nn.Sequential(Conv1D(128, 128), MyLinear(128, 128))
    with pytest.warns(UserWarning, match="Conv1D, MyLinear are not plain nn.Linear") as record:
        prepare_(model, QuESTConfig())
    assert "already holds" not in str(record[0].message)
    assert type(model[0]) is Conv1D


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
