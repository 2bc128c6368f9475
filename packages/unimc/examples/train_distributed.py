"""Scale-out example: train UniMC-style conditioning of a diffusers DiT with DDP or FSDP2, then
evaluate sharded by rank with detections gathered on rank 0.

    torchrun --nproc_per_node 2 examples/train_distributed.py --engine fsdp --out result.json

CPU + gloo here (the test runs 2 ranks); on GPUs use ``--backend nccl``. The DiT is a tiny random
config (no hub weights). FSDP2's wrap unit is ``GatedConditionAttention``.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np
import torch
import torch.distributed as dist
from diffusers.models.transformers.dit_transformer_2d import DiTTransformer2DModel
from torch import nn
from unimc import (
    AP10K17,
    COCO17,
    ConditionTokenizer,
    condition_dropout,
    flow_matching_loss,
    inject_conditions,
    keypoint_ap,
)
from unimc.distributed import fully_shard_conditioned, gather_detections, shard_indices

from icml25_core import end_process


def batch(rng: np.random.Generator, b: int = 4, n: int = 3):
    classes = torch.from_numpy(rng.integers(0, 2, (b, n)))
    lo = rng.uniform(0, 0.5, (b, n, 2))
    boxes = torch.from_numpy(
        np.concatenate([lo, lo + rng.uniform(0.1, 0.5, (b, n, 2))], -1)
    ).float()
    kp = torch.from_numpy(
        np.concatenate([rng.uniform(0, 1, (b, n, 17, 2)), np.full((b, n, 17, 1), 2.0)], -1)
    ).float()
    mask = torch.from_numpy(rng.random((b, n)) < 0.8)
    mask[:, 0] = True
    return classes, boxes, kp, mask


class Conditioned(nn.Module):
    """DiT + tokenizer behind one forward, so DDP / FSDP2 see every call."""

    def __init__(self, dit: nn.Module, tokenizer: ConditionTokenizer, handle) -> None:
        super().__init__()
        self.dit, self.tokenizer, self.handle = dit, tokenizer, handle

    def forward(self, x, t, conds, labels, gen):
        toks = condition_dropout(self.tokenizer(*conds), 0.1, gen)
        with self.handle.condition(toks):
            return self.dit(x, timestep=t * 999, class_labels=labels).sample[:, :4]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", choices=["ddp", "fsdp"], default="fsdp")
    ap.add_argument("--backend", default="gloo")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # same init on every rank
    dit = DiTTransformer2DModel(
        num_attention_heads=2, attention_head_dim=8, in_channels=4, num_layers=2,
        sample_size=8, patch_size=2, norm_num_groups=1,
    )  # fmt: skip
    tok = ConditionTokenizer(2, 16, skeleton_of_class={0: COCO17, 1: AP10K17})
    handle = inject_conditions(dit, d_cond=16)  # backbone frozen, gated layers trainable
    model = Conditioned(dit, tok, handle)
    if args.engine == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        wrapped: nn.Module = DistributedDataParallel(model)
    else:
        wrapped = fully_shard_conditioned(model)
    params = [p for p in wrapped.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-2)
    rng = np.random.default_rng(100 + rank)  # each rank its own data
    drop_gen = torch.Generator().manual_seed(1000 + rank)  # per-rank condition dropout
    losses = []
    for _ in range(args.steps):
        c, b, k, m = batch(rng)
        lat = torch.from_numpy(rng.standard_normal((c.shape[0], 4, 8, 8))).float()
        labels = torch.zeros(c.shape[0], dtype=torch.long)

        loss = flow_matching_loss(
            wrapped, lat, generator=drop_gen, conds=(c, b, k, m), labels=labels, gen=drop_gen
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    gammas = []
    for layer in handle.layers:
        gamma = layer.gamma
        gammas.append(
            float((gamma.full_tensor() if hasattr(gamma, "full_tensor") else gamma).item())
        )

    # sharded evaluation: each rank "detects" on its images, rank 0 gathers and scores
    gt = {"images": [{"id": i + 1, "width": 64, "height": 64} for i in range(5)],
          "categories": [{"id": 1, "name": "person"}], "annotations": []}  # fmt: skip
    g = np.random.default_rng(7)
    for i in range(5):
        kp = np.c_[g.uniform(8, 56, (17, 2)), np.full(17, 2)]
        gt["annotations"].append({"id": i + 1, "image_id": i + 1, "category_id": 1, "iscrowd": 0,
                                  "keypoints": kp.ravel().tolist(), "num_keypoints": 17,
                                  "bbox": [8, 8, 48, 48], "area": 1500.0})  # fmt: skip
    mine = []
    for idx in shard_indices(5, rank, world):
        a = gt["annotations"][idx]
        kp = np.asarray(a["keypoints"]).reshape(17, 3)
        kp[:, :2] += np.random.default_rng(idx).normal(0, 2.0 * idx, (17, 2))
        mine.append(
            {
                "image_id": a["image_id"],
                "category_id": 1,
                "keypoints": kp.ravel().tolist(),
                "score": 0.9,
            }
        )
    all_dets = gather_detections(mine)
    if rank == 0:
        assert all_dets is not None
        res = keypoint_ap(gt, all_dets, {1: COCO17.sigma_array()})
        out = {"world": world, "engine": args.engine, "losses": losses, "gammas": gammas,
               "n_dets": len(all_dets), "ap": res[1].tolist(),
               "dets": all_dets, "gt": gt}  # fmt: skip
        with open(args.out, "w") as f:
            json.dump(out, f)
    # every rank reports its gammas so the test can check they agree
    with open(f"{args.out}.rank{rank}", "w") as f:
        json.dump({"gammas": gammas, "losses": losses, "pid": os.getpid()}, f)
    dist.destroy_process_group()
    end_process(0)  # skip gloo's teardown (can abort after all work is done; icml25_core docs)


if __name__ == "__main__":
    main()
