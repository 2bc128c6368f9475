"""One training stage under torchrun (2 gloo ranks on CPU): run by tests/test_training.py.

python -m torch.distributed.run --nproc_per_node 2 --standalone tests/ddp_stage.py OUT_DIR
"""

import os
import sys

import torch
from tiny_llava import build, records
from wmarkgpt.training import StageConfig, train_stage

out = sys.argv[1]
make, processor = build()
model = make()
initial = model.model.multi_modal_projector.linear_1.weight.detach().clone()
config = StageConfig(
    "S1",
    "WQA-Position",
    learning_rate=1e-3,
    max_steps=3,
    batch_size=2,
    warmup_ratio=0.0,
    device="cpu",
    trainer_kwargs={"ddp_backend": "gloo"},
)
model, history = train_stage(
    model, processor, records(8), config, output_dir=os.path.join(out, "trainer")
)
rank = int(os.environ["RANK"])
world = torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1
weight = model.model.multi_modal_projector.linear_1.weight.detach()
torch.save(
    {"world": world, "initial": initial, "weight": weight}, os.path.join(out, f"rank{rank}.pt")
)
