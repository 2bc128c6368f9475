"""Scale-out path (spec §7): FSDP2 on 2 gloo ranks equals one process; gradient checkpointing
and torch.compile work with the hook-based memory path."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from _helpers import pixels, prompt, tiny_vlm
from comemo_lvlm import TileGrid

HERE = Path(__file__).resolve().parent


def test_fsdp2_two_gloo_ranks_match_single_process(tmp_path):
    out = tmp_path / "fsdp.pt"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(HERE)}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=2",
        "--master_port=0",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=localhost:0",
        str(HERE / "_fsdp_worker.py"),
        str(out),
    ]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        log, _ = proc.communicate(timeout=150)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("FSDP2 run timed out")
    assert proc.returncode == 0, log.decode()[-3000:]
    got = torch.load(out)
    # single process reference: mean of the two ranks' losses, gradient of the mean
    model, _ = tiny_vlm(every_n=2, gate=0.5)
    model.train()
    grids = [TileGrid(2, 1)]
    losses = []
    for rank in range(2):
        ids = prompt(grids, seed=10 + rank)[None]
        loss = model(ids, pixels(grids, 10 + rank), [grids], labels=ids).loss
        (loss / 2).backward()
        losses.append(loss.detach())
    torch.testing.assert_close(got["losses"], torch.stack(losses), atol=1e-5, rtol=0)
    ref = {
        f"language_model.{n}": p.grad
        for n, p in model.language_model.named_parameters()
        if "comemo_blocks" in n
    }
    assert set(got["grads"]) == set(ref)
    for name, g in got["grads"].items():
        torch.testing.assert_close(g, ref[name], atol=1e-5, rtol=1e-4)


def test_gradient_checkpointing_matches_plain_backward():
    grads = []
    for ckpt in (False, True):
        model, path = tiny_vlm(every_n=2, gate=0.5)
        model.train()
        if ckpt:
            model.language_model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False}
            )
        grids = [TileGrid(2, 1)]
        ids = prompt(grids)[None]
        model(ids, pixels(grids), [grids], labels=ids).loss.backward()
        grads.append({n: p.grad.clone() for n, p in path.blocks.named_parameters()})
    for name in grads[0]:
        torch.testing.assert_close(grads[1][name], grads[0][name], atol=1e-6, rtol=1e-5)


def test_torch_compile_block_and_wrapped_model():
    model, path = tiny_vlm(every_n=2, gate=0.5)
    grids = [TileGrid(2, 1)]
    ids = prompt(grids)[None]
    with torch.no_grad():
        want = model(ids, pixels(grids), [grids]).logits
    blk = path.blocks["1"]
    compiled = torch.compile(blk, backend="aot_eager", fullgraph=True)
    x, media = torch.randn(1, 5, 64), torch.randn(1, 7, 64)
    tp, mp = torch.arange(5)[None], torch.arange(7)[None]
    mask = torch.ones(1, 5, 7, dtype=torch.bool)
    torch.testing.assert_close(compiled(x, media, tp, mp, mask), blk(x, media, tp, mp, mask))
    model.language_model = torch.compile(model.language_model, backend="aot_eager")
    with torch.no_grad():
        got = model(ids, pixels(grids), [grids]).logits
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)


class _Toy(torch.nn.Module):
    """A decoder without a transformers config whose layers run inside torch.utils.checkpoint,
    hooks included, so the memory blocks are recomputed during backward."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layers = torch.nn.ModuleList([torch.nn.Linear(16, 16) for _ in range(2)])

    def forward(self, x, ckpt=False):
        from torch.utils.checkpoint import checkpoint

        for layer in self.layers:
            x = checkpoint(layer, x, use_reentrant=False) if ckpt else layer(x)
        return x


def test_recompute_inside_checkpoint_reuses_the_closed_context():
    from comemo_lvlm import attach_memory_path

    grads = []
    for ckpt in (False, True):
        toy = _Toy()
        path = attach_memory_path(
            toy, every_n=1, d_model=16, n_heads=2, head_dim=8, d_ff=32, rope_base=1e4, gate_init=0.5
        )
        x = torch.randn(1, 5, 16, generator=torch.Generator().manual_seed(1), requires_grad=True)
        media = torch.randn(1, 3, 16, generator=torch.Generator().manual_seed(2))
        with path.condition(media, torch.arange(5)[None], torch.arange(3)[None]):
            out = toy(x, ckpt=ckpt)
        out.square().sum().backward()  # after the context closed: recompute needs the context
        grads.append([p.grad.clone() for p in toy.parameters()] + [x.grad.clone()])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
