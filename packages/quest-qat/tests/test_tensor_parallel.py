"""Tensor parallelism in one process (1-rank mesh) and its refusals; the 2-rank comparison with
one process is in test_scale_out.py."""

import os
import socket

import pytest
import torch
import torch.distributed as dist
from quest_qat import QuESTConfig, QuESTLinear, prepare_
from torch import nn


@pytest.fixture
def one_rank_mesh(monkeypatch):
    from torch.distributed.device_mesh import init_device_mesh

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(port))
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        yield init_device_mesh("cpu", (1,))
    finally:
        dist.destroy_process_group()
        os.environ.pop("MASTER_PORT", None)


def test_sharded_weight_outside_a_style_is_refused(one_rank_mesh):
    """A hand-made DTensor weight has no layout for the input and output: the error names the
    styles that shard QuEST layers (it used to raise NotImplementedError)."""
    from torch.distributed.tensor import Shard, distribute_tensor

    layer = prepare_(nn.Sequential(nn.Linear(128, 8)), QuESTConfig())[0]
    layer.weight = nn.Parameter(distribute_tensor(layer.weight.detach(), one_rank_mesh, [Shard(1)]))
    with pytest.raises(ValueError, match=r"QuESTColwiseParallel.*QuESTRowwiseParallel"):
        layer(torch.randn(2, 128))


@pytest.mark.parametrize("transposed", [False, True], ids=["Linear", "Conv1D"])
def test_styles_on_one_rank_equal_the_plain_layers(one_rank_mesh, transposed):
    """On a 1-rank mesh the collectives are identities: outputs and gradients equal the
    unsharded layers' to float64 rounding (the row-wise bias is added after the reduction, not
    inside addmm); GPT-2 Conv1D weights, stored (K, N), shard on the other dimension."""
    from quest_qat.parallel import QuESTColwiseParallel, QuESTRowwiseParallel
    from torch.distributed.tensor import DTensor, Replicate
    from torch.distributed.tensor.parallel import parallelize_module

    def mlp():
        torch.manual_seed(0)
        first, second = nn.Linear(128, 256), nn.Linear(256, 8)
        if transposed:
            from transformers.pytorch_utils import Conv1D

            first, second = Conv1D(256, 128), Conv1D(8, 256)
            nn.init.normal_(first.weight)
            nn.init.normal_(second.weight)
        return prepare_(nn.Sequential(first, nn.ReLU(), second), QuESTConfig(4, 4)).double()

    plain, sharded = mlp(), mlp()
    plan = {
        "0": QuESTColwiseParallel(output_layouts=Replicate()),
        "2": QuESTRowwiseParallel(input_layouts=Replicate(), use_local_output=False),
    }
    parallelize_module(sharded, one_rank_mesh, plan)
    assert isinstance(sharded[0].weight, DTensor)
    x = torch.randn(5, 128, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    y_plain, y_sharded = plain(x), sharded(x)
    assert isinstance(y_sharded, DTensor)
    torch.testing.assert_close(y_sharded.to_local(), y_plain, rtol=1e-12, atol=1e-12)
    y_plain.square().sum().backward()
    y_sharded.to_local().square().sum().backward()
    for a, b in zip(plain.parameters(), sharded.parameters(), strict=True):
        torch.testing.assert_close(b.grad.full_tensor(), a.grad, rtol=1e-12, atol=1e-12)


class _Mesh:
    """A stand-in for a 1-D DeviceMesh of 2 ranks: the size checks run before any collective."""

    ndim = 1

    @staticmethod
    def size():
        return 2


@pytest.mark.parametrize(
    ("style", "layer", "error", "match"),
    [
        ("col", nn.Linear(128, 8), TypeError, "QuESTLinear"),
        ("col", (128, 7, QuESTConfig()), ValueError, "N=7"),
        ("row", (128, 8, QuESTConfig()), ValueError, r"K=128.*mesh size 2 times.*block 128"),
        ("row", (192, 8, QuESTConfig(block=64)), ValueError, "K=192"),
    ],
    ids=["linear", "odd-N", "one-block-K", "odd-blocks-K"],
)
def test_styles_refuse_layers_they_cannot_shard(style, layer, error, match):
    from quest_qat.parallel import QuESTColwiseParallel, QuESTRowwiseParallel

    if isinstance(layer, tuple):
        k, n, config = layer
        layer = prepare_(nn.Sequential(nn.Linear(k, n)), config)[0]
    parallel = QuESTColwiseParallel() if style == "col" else QuESTRowwiseParallel()
    with pytest.raises(error, match=match):
        parallel._apply(layer, _Mesh())


def test_styles_refuse_quantizers_with_parameters():
    from quest_qat import LSQQuantizer, STEQuantizer
    from quest_qat.parallel import QuESTColwiseParallel

    layer = QuESTLinear.from_linear(nn.Linear(128, 8), STEQuantizer(4), LSQQuantizer(4))
    with pytest.raises(TypeError, match=r"a_quantizer.*LSQQuantizer"):
        QuESTColwiseParallel()._apply(layer, _Mesh())


def test_convert_of_a_sharded_model_is_refused_with_the_recipe(one_rank_mesh):
    """convert_ on an FSDP2 model crashed inside the Hadamard ("mixed torch.Tensor and
    DTensor"); it now refuses, leaves the model as is, and the recipe it names works."""
    import copy

    from quest_qat import convert_
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(0)
    plain = prepare_(nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 8)),
                     QuESTConfig(block="auto"))  # fmt: skip
    sharded = copy.deepcopy(plain)
    for layer in (sharded[0], sharded[2]):
        fully_shard(layer, mesh=one_rank_mesh)
    fully_shard(sharded, mesh=one_rank_mesh)
    with pytest.raises(NotImplementedError, match=r"layer '0'.*DTensor.*full_state_dict"):
        convert_(sharded)
    assert isinstance(sharded[0], QuESTLinear)  # FSDP2 subclasses it: FSDPQuESTLinear
    full = get_model_state_dict(sharded, options=StateDictOptions(full_state_dict=True))
    fresh = prepare_(nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 8)),
                     QuESTConfig(block="auto"))  # fmt: skip
    fresh.load_state_dict(full)
    x = torch.randn(3, 128)
    with torch.no_grad():
        assert torch.equal(convert_(fresh)(x), convert_(plain)(x))
