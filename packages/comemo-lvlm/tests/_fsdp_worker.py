"""One rank of the FSDP2 test: fully_shard with GatedCrossAttentionBlock as the wrap unit."""

import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(__file__))


def main() -> None:
    from _helpers import pixels, prompt, tiny_vlm
    from comemo_lvlm import GatedCrossAttentionBlock, TileGrid
    from torch.distributed.fsdp import fully_shard

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    model, _ = tiny_vlm(every_n=2, gate=0.5)
    model.train()
    for m in list(model.modules()):
        if isinstance(m, GatedCrossAttentionBlock):
            fully_shard(m)
    for layer in model.language_model.model.layers:
        fully_shard(layer)
    fully_shard(model)
    grids = [TileGrid(2, 1)]
    ids = prompt(grids, seed=10 + rank)[None]
    out = model(ids, pixels(grids, 10 + rank), [grids], labels=ids)
    out.loss.backward()
    grads = {}
    for name, p in model.named_parameters():
        if "comemo_blocks" in name and p.grad is not None:
            grads[name] = p.grad.full_tensor().detach().clone()
    losses = [torch.zeros(1) for _ in range(world)]
    dist.all_gather(losses, out.loss.detach().reshape(1))
    if rank == 0:
        torch.save({"grads": grads, "losses": torch.cat(losses)}, sys.argv[1])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
