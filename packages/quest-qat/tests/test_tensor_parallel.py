"""Spec §7: a weight sharded along K (tensor parallelism) is refused; sharding N is fine."""

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


def test_k_sharded_weight_raises(one_rank_mesh):
    from torch.distributed.tensor import Shard, distribute_tensor

    layer = prepare_(nn.Sequential(nn.Linear(128, 8)), QuESTConfig())[0]
    layer.weight = nn.Parameter(distribute_tensor(layer.weight.detach(), one_rank_mesh, [Shard(1)]))
    with pytest.raises(NotImplementedError, match="K-sharded"):
        layer(torch.randn(2, 128))


def test_plain_weight_is_not_k_sharded():
    from quest_qat.nn import _k_sharded

    assert not _k_sharded(nn.Parameter(torch.zeros(2, 2)))


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
