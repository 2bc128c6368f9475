"""One rank of the scale-out test over gloo.

Run as ``python ddp_worker.py MODE RANK WORLD PORT OUT`` with MODE ``ddp``
(``DistributedDataParallel``) or ``fsdp2`` (``fully_shard`` on each layer, then on the root),
each rank training on its share of the batch, or ``tp`` (tensor parallelism: the first layer
column-wise, the second row-wise, every rank on the whole batch; three models, W4A4 and 4:8 W4A4
with the default layouts and W4A16 with replicated layouts in between); rank 0 writes the final
full (gathered) parameters to OUT.
"""

import sys

import torch
import torch.distributed as dist
from quest_qat import QuESTConfig, prepare_
from torch import nn
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel

from icml25_core import end_process

MODES = ("ddp", "fsdp2", "tp")


def model_and_data():
    torch.manual_seed(0)
    model = prepare_(nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 8)),
                     QuESTConfig(4, 4, block="auto"))  # fmt: skip
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 16, 128, generator=g, dtype=torch.float64)
    y = torch.randn(4, 16, 8, generator=g, dtype=torch.float64)
    return model.double(), x, y


def tp_models_and_data():
    """Two MLPs whose second layer has K = 256 (two 128-blocks, one per rank), and their data."""
    models = {}
    configs = (
        ("w4a4", QuESTConfig(4, 4)),
        ("w4a16", QuESTConfig(4, None)),
        ("w4a4_48", QuESTConfig(4, 4, sparse48=True)),  # 4:8 ties must not depend on σ's last bit
    )
    for name, config in configs:
        torch.manual_seed(0)
        mlp = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 16))
        models[name] = prepare_(mlp, config).double()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 8, 128, generator=g, dtype=torch.float64)
    y = torch.randn(3, 8, 16, generator=g, dtype=torch.float64)
    return models, x, y


def train(model, x, y):
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(x.shape[0]):
        opt.zero_grad()
        nn.functional.mse_loss(model(x[step]), y[step]).backward()
        opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _parallelize(name, model):
    """Column-wise then row-wise: default layouts for w4a4, replicated in between for w4a16."""
    from quest_qat.parallel import QuESTColwiseParallel, QuESTRowwiseParallel
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate
    from torch.distributed.tensor.parallel import parallelize_module

    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    if name.startswith("w4a4"):
        plan = {"0": QuESTColwiseParallel(), "2": QuESTRowwiseParallel()}
    else:
        plan = {
            "0": QuESTColwiseParallel(output_layouts=Replicate()),
            "2": QuESTRowwiseParallel(input_layouts=Replicate()),
        }
    return parallelize_module(model, mesh, plan)


def _wrap(model, mode):
    """DDP wraps the model; FSDP2 shards each layer holding parameters, then the root."""
    if mode == "ddp":
        return DistributedDataParallel(model)
    for layer in model:
        if any(True for _ in layer.parameters()):
            fully_shard(layer)
    return fully_shard(model)


def main(mode, rank, world, port, out):
    if mode not in MODES:
        raise ValueError(f"MODE must be one of {MODES}, got {mode!r}")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)  # fmt: skip
    if mode == "tp":
        models, x, y = tp_models_and_data()
        state = {
            f"{name}.{k}": v
            for name, model in models.items()
            for k, v in train(_parallelize(name, model), x, y).items()
        }
    else:
        model, x, y = model_and_data()
        shard = slice(rank * x.shape[1] // world, (rank + 1) * x.shape[1] // world)
        state = train(_wrap(model, mode), x[:, shard], y[:, shard])
    # FSDP2 keeps each parameter as a DTensor sharded on dim 0: gather it on every rank.
    state = {k: v.full_tensor() if hasattr(v, "full_tensor") else v for k, v in state.items()}
    if rank == 0:
        torch.save({k.removeprefix("module."): v for k, v in state.items()}, out)
    dist.barrier()  # no rank tears gloo down while another still talks to it
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    end_process(0)  # results written: skip the teardown gloo can abort (icml25_core docs)
