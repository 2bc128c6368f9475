"""One rank of the scale-out test: DDP over gloo, each rank training on its half of the batch.

Run as ``python ddp_worker.py RANK WORLD PORT OUT``; writes the final parameters to OUT.
"""

import sys

import torch
import torch.distributed as dist
from quest_qat import QuESTConfig, prepare_
from torch import nn
from torch.nn.parallel import DistributedDataParallel


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


def main(rank, world, port, out):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)  # fmt: skip
    model, x, y = model_and_data()
    shard = slice(rank * x.shape[1] // world, (rank + 1) * x.shape[1] // world)
    ddp = DistributedDataParallel(model)
    state = train(ddp, x[:, shard], y[:, shard])
    if rank == 0:
        torch.save({k.removeprefix("module."): v for k, v in state.items()}, out)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
