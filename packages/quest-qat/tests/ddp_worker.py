"""One rank of the scale-out test over gloo, each rank training on its share of the batch.

Run as ``python ddp_worker.py MODE RANK WORLD PORT OUT`` with MODE ``ddp``
(``DistributedDataParallel``) or ``fsdp2`` (``fully_shard`` on each layer, then on the root);
rank 0 writes the final full (gathered) parameters to OUT.
"""

import sys

import torch
import torch.distributed as dist
from quest_qat import QuESTConfig, prepare_
from torch import nn
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel

from icml25_core import end_process

MODES = ("ddp", "fsdp2")


def model_and_data():
    torch.manual_seed(0)
    model = prepare_(nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 8)),
                     QuESTConfig(4, 4, block="auto"))  # fmt: skip
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 16, 128, generator=g, dtype=torch.float64)
    y = torch.randn(4, 16, 8, generator=g, dtype=torch.float64)
    return model.double(), x, y


def train(model, x, y):
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(x.shape[0]):
        opt.zero_grad()
        nn.functional.mse_loss(model(x[step]), y[step]).backward()
        opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


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
