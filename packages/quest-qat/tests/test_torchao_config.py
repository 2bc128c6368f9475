"""Spec §3 ``api.py``: ``torchao.quantization.quantize_(model, QuESTAOConfig(...))`` swaps the
same layers, with the same Parameters, as ``prepare_(model, QuESTConfig(...))``."""

import copy
import subprocess
import sys

import pytest
import torch
from quest_qat import QuESTConfig, QuESTLinear, prepare_
from torch import nn

torchao_quant = pytest.importorskip("torchao.quantization")
from quest_qat.torchao_config import QuESTAOConfig  # noqa: E402
from torchao.core.config import AOBaseConfig  # noqa: E402


def _model():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(256, 384), nn.GELU(), nn.Sequential(nn.Linear(384, 96), nn.ReLU()),
        nn.Linear(96, 256),
    )  # fmt: skip


def _layers(model):
    return {fqn: type(m) for fqn, m in model.named_modules()}


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"w_bits": 2, "a_bits": 2, "block": "auto"}, {"w_bits": 1, "a_bits": None, "block": 32}],
    ids=["W4A4-b128-skip96", "W2A2-auto", "W1A16-b32"],
)
def test_quantize_equals_prepare(kwargs):
    kwargs = {"on_incompatible": "skip", **kwargs}
    ours, theirs = _model(), _model()
    params = {fqn: p for fqn, p in theirs.named_parameters()}
    prepare_(ours, QuESTConfig(**kwargs))
    torchao_quant.quantize_(theirs, QuESTAOConfig(**kwargs))
    assert _layers(theirs) == _layers(ours)
    assert any(t is QuESTLinear for t in _layers(theirs).values())
    for fqn, p in theirs.named_parameters():
        assert p is params[fqn], fqn  # the same Parameter objects, not copies
    x = torch.randn(5, 256)
    assert torch.equal(theirs(x), ours(x))


def test_filter_fn_respected():
    def keep(module, fqn):
        return isinstance(module, nn.Linear) and fqn != "2.0"

    ours, theirs = _model(), _model()
    prepare_(ours, QuESTConfig(block="auto"), filter_fn=keep)
    torchao_quant.quantize_(theirs, QuESTAOConfig(block="auto"), filter_fn=keep)
    assert type(theirs[2][0]) is nn.Linear
    assert _layers(theirs) == _layers(ours)
    x = torch.randn(3, 256)
    assert torch.equal(theirs(x), ours(x))


def test_config_is_an_aobaseconfig_that_validates():
    config = QuESTAOConfig(w_bits=2, a_bits=2)
    assert isinstance(config, AOBaseConfig)
    assert isinstance(config, QuESTConfig)
    assert QuESTAOConfig(**config.to_dict()) == config
    with pytest.raises(ValueError, match="w_bits"):
        QuESTAOConfig(w_bits=9)
    with pytest.raises(ValueError, match="w_bits=4"):  # at construction, not at quantize_
        QuESTAOConfig(w_bits=2, grid="fp4")


def test_bare_linear_is_left_unchanged_by_quantize_():
    """Documented limit: quantize_ cannot replace the root module it is given (torchao drops the
    handler's result for it), so a bare nn.Linear stays an nn.Linear; wrap it."""
    bare = nn.Linear(128, 8)
    torchao_quant.quantize_(bare, QuESTAOConfig())
    assert type(bare) is nn.Linear
    wrapped = nn.Sequential(bare)
    torchao_quant.quantize_(wrapped, QuESTAOConfig())
    assert isinstance(wrapped[0], QuESTLinear)


def test_incompatible_k_raises_naming_k_and_block():
    model = nn.Sequential(nn.Linear(96, 8))
    with pytest.raises(ValueError, match=r"K=96 .*block=128"):
        torchao_quant.quantize_(model, QuESTAOConfig())


def test_second_quantize_changes_nothing():
    model = _model()
    torchao_quant.quantize_(model, QuESTAOConfig(block="auto"))
    before = copy.deepcopy(_layers(model))
    torchao_quant.quantize_(model, QuESTAOConfig(block="auto"))
    assert _layers(model) == before


def test_module_without_torchao_names_the_extra_and_quest_qat_still_imports():
    code = (
        "import sys; sys.modules['torchao'] = None\n"
        "import quest_qat\n"
        "import quest_qat.torchao_config\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    last_line = out.stderr.strip().splitlines()[-1]
    assert out.returncode == 1
    assert last_line.startswith("ImportError: this part of quest-qat needs its optional extra")
    assert last_line.endswith("install it with: pip install 'quest-qat[torchao]'")
