"""One rank of the scale-out test: ``python ddp_worker.py RANK PORT OUT`` (2 ranks, gloo)."""

import os
import sys

import torch
import torch.distributed as dist
from fpt_snn import FPTLIF

from icml25_core import end_process

T, BATCH = 6, 8


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(5, 7), FPTLIF(T=T, sample="threshold", learnable_tau=True)
    )


def data():
    g = torch.Generator().manual_seed(1)
    return torch.randn(T, BATCH, 5, generator=g), torch.randn(T, BATCH, 7, generator=g)


def step(net, x, y):
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    ((net(x) - y) ** 2).mean().backward()
    opt.step()


def main(rank, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        net = torch.nn.parallel.DistributedDataParallel(model())
        x, y = data()
        half = slice(rank * BATCH // 2, (rank + 1) * BATCH // 2)
        step(net, x[:, half], y[:, half])
        if rank == 0:
            torch.save(net.module.state_dict(), out)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3])
    end_process(0)  # results written: skip the teardown gloo can abort (icml25_core docs)
