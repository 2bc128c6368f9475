"""One rank of the 2-process gloo DDP check (run by torchrun from test_scale_out.py).

Each rank takes half of a joint batch, computes the summed loss (``reduction="sum"``), divides by
the all-reduced token count, and back-propagates through DDP (which averages gradients over
ranks, so the loss is multiplied by the world size). Rank 0 saves the gradients.
"""

import os
import sys

import torch
from monoattn_transducer import MonoAttnTransducer, normalization_counts


def model() -> MonoAttnTransducer:
    torch.manual_seed(0)
    return MonoAttnTransducer.build(
        6, 5, d_model=16, enc_layers=1, pred_layers=1, num_heads=2, chunk_frames=4,
        left_chunks=1, downsample=2, dropout=0.0, reduction="sum",
    )  # fmt: skip


def data():
    g = torch.Generator().manual_seed(1)
    feats = torch.randn(4, 24, 6, generator=g)
    lengths = torch.tensor([24, 17, 20, 9])
    targets = torch.randint(1, 5, (4, 3), generator=g)
    return feats, lengths, targets, torch.tensor([3, 1, 2, 0])


def grads(m: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad.detach().clone() for n, p in m.named_parameters() if p.grad is not None}


def main() -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    net = model()
    ddp = torch.nn.parallel.DistributedDataParallel(net)
    feats, lengths, targets, t_len = (x[rank::world] for x in data())
    loss_sum = ddp(feats, lengths, targets, t_len).loss
    tokens = normalization_counts(lengths, t_len)["tokens"].clone()
    dist.all_reduce(tokens)
    total = loss_sum.detach().clone()
    dist.all_reduce(total)
    (loss_sum / tokens * world).backward()
    if rank == 0:
        torch.save({"grads": grads(net), "loss": total / tokens}, sys.argv[1])
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
