"""Spec §7: a weight sharded along K (tensor parallelism) is refused; sharding N is fine."""

import os
import socket

import pytest
import torch
import torch.distributed as dist
from quest_qat import QuESTConfig, prepare_
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
