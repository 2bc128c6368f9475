"""One rank of the scale-out test, started by torchrun (see test_scale_out.py).

Trains a tiny LEC with DistributedDataParallel for a few steps, samples with all-gathered
log-weights, and writes what the test compares into <out>/rank<r>.pt.
"""

import sys

import torch
import torch.distributed as dist
from leaps_ctmc import FreeEnergyNet, IsingPath, LocallyEquivariantConv, Trainer, sample

from icml25_core import end_process

torch.set_num_threads(1)
out = sys.argv[1]
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)  # identical initial nets on every rank
path = IsingPath(3, 0.4407)
net = LocallyEquivariantConv(2, kernel_sizes=(3, 3), channels=4)
fnet = FreeEnergyNet(hidden=(8, 8))
trainer = Trainer(path, net, fnet, lr=1e-2, n_walkers=8, batch_size=16, n_steps=4,
                  curriculum_steps=0, refresh_every=2, seed=0)  # fmt: skip
trainer.fit(4, show_progress=False)
res = sample(path, net, 16, 4, generator=torch.Generator().manual_seed(10 + rank))
torch.save({
    "params": torch.cat([p.detach().reshape(-1) for p in [*net.parameters(), *fnet.parameters()]]),
    "log_w": res.log_w, "ess": res.ess, "log_z": res.log_z, "meta": res.meta,
    "history": trainer.history_,
}, f"{out}/rank{rank}.pt")  # fmt: skip
dist.destroy_process_group()
end_process(0)  # results written: skip the teardown gloo can abort (icml25_core docs)
