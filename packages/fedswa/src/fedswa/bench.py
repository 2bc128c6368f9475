"""Micro-benchmarks of the spec's §6 ratios (``fedswa bench``; ``benchmarks/bench_*.py``).

- local step: the corrected, clipped update with ``torch._foreach_*`` (ours) against a
  per-parameter Python loop (the official code's style), on ResNet-18's 62 parameter shapes and
  on the MLP 784-200-10;
- server: aggregating 10 client updates with :func:`~fedswa.server.server_step`, in GB/s of
  update bytes read, against ``torch`` memcpy of the same bytes;
- round time: one client round of FedMoSWA and FedSAM over FedAvg's (MLP, K = 50, batch 32).
"""

from __future__ import annotations

import time

import torch

from .algorithms import get_algorithm
from .control import ClientControl
from .local import LocalResult, _corrected_step, local_update
from .models import mlp
from .server import ServerState, server_step

__all__ = ["resnet18_shapes", "bench_local_step", "bench_server", "bench_round_time"]


def resnet18_shapes(num_classes: int = 10) -> list[tuple[int, ...]]:
    """Parameter shapes of torchvision's ``resnet18`` (62 tensors: convs, BatchNorm affine
    weights and biases, the final linear layer), written out so no torchvision is needed."""
    shapes = [(64, 3, 7, 7), (64,), (64,)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for block in range(2):
            first = cin if block == 0 else cout
            shapes += [(cout, first, 3, 3), (cout,), (cout,), (cout, cout, 3, 3), (cout,), (cout,)]
            if block == 0 and (stride != 1 or cin != cout):
                shapes += [(cout, cin, 1, 1), (cout,), (cout,)]
        cin = cout
    return [*shapes, (num_classes, 512), (num_classes,)]


def _best_of(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _loop_step(params, grads, lr, wd, corr, clip):
    """The official style: a Python loop over parameters, one small op at a time."""
    with torch.no_grad():
        total = sum(float(g.norm()) ** 2 for g in grads) ** 0.5
        scale = min(1.0, clip / (total + 1e-6))
        for p, g, c in zip(params, grads, corr, strict=True):
            d = g * scale + wd * p + c
            p.sub_(lr * d)


def bench_local_step(repeats: int = 20) -> list[dict]:
    """Seconds per update step, ours (foreach) and the per-parameter loop, and their ratio."""
    torch.manual_seed(0)
    cases = {
        "ResNet-18 (62 tensors)": resnet18_shapes(),
        "MLP 784-200-10": [(200, 784), (200,), (10, 200), (10,)],
    }
    rows = []
    for name, shapes in cases.items():
        params = [torch.randn(s) for s in shapes]
        grads = [torch.randn(s) for s in shapes]
        corr = [torch.randn(s) * 1e-3 for s in shapes]
        for p, g in zip(params, grads, strict=True):
            p.grad = g.clone()

        def ours(params=params, corr=corr):
            torch.nn.utils.clip_grad_norm_(params, 10.0)
            _corrected_step(params, 1e-3, 1e-3, corr)

        def loop(params=params, grads=grads, corr=corr):
            _loop_step(params, grads, 1e-3, 1e-3, corr, 10.0)

        t_ours, t_loop = _best_of(ours, repeats), _best_of(loop, repeats)
        rows.append(
            {"case": name, "tensors": len(shapes), "ours_s": t_ours, "loop_s": t_loop,
             "ratio": t_loop / t_ours}
        )  # fmt: skip
    return rows


def bench_server(num_clients: int = 10, repeats: int = 10) -> list[dict]:
    """GB/s of client-update bytes aggregated by :func:`server_step` against memcpy."""
    torch.manual_seed(0)
    cases = {
        "ResNet-18": {f"p{i}": torch.randn(s) for i, s in enumerate(resnet18_shapes())},
        "MLP 784-200-10": dict(mlp().state_dict()),
    }
    rows = []
    for name, state in cases.items():
        results = {
            i: LocalResult(
                delta={k: torch.randn_like(v) for k, v in state.items()},
                new_control=None,
                control_delta=None,
                local_control_delta=None,
                num_examples=100 + i,
                lr_sum=1.0,
                loss=0.0,
                steps=1,
            )
            for i in range(num_clients)
        }
        server = ServerState(state)
        nbytes = num_clients * sum(v.numel() * v.element_size() for v in state.values())
        src = torch.randn(nbytes // 4)
        dst = torch.empty_like(src)
        t_ours = _best_of(
            lambda server=server, results=results: server_step(server, results), repeats
        )
        t_copy = _best_of(lambda src=src, dst=dst: dst.copy_(src), repeats)
        gbs, copy_gbs = nbytes / t_ours / 1e9, nbytes / t_copy / 1e9
        rows.append(
            {"case": name, "bytes": nbytes, "ours_gbs": gbs, "memcpy_gbs": copy_gbs,
             "ratio": gbs / copy_gbs}
        )  # fmt: skip
    return rows


def bench_round_time(steps: int = 50, batch_size: int = 32, repeats: int = 3) -> list[dict]:
    """Seconds of one client round (MLP 784-200-10, random data) per algorithm, over FedAvg's."""
    torch.manual_seed(0)
    model = mlp()
    batches = [(torch.randn(batch_size, 1, 28, 28), torch.randint(0, 10, (batch_size,)))] * 4
    zeros = {k: torch.zeros_like(v) for k, v in model.named_parameters()}
    times = {}
    for name in ("fedavg", "fedmoswa", "fedsam"):
        cfg = get_algorithm(name)
        control = ClientControl(zeros, dict(zeros)) if cfg.uses_control else None

        def one(cfg=cfg, control=control):
            local_update(
                model, batches, steps=steps, eta=0.05, rho=cfg.rho, control=control,
                sam_rho=cfg.sam_rho,
            )  # fmt: skip

        times[name] = _best_of(one, repeats)
    return [
        {"case": f"{name} / fedavg", "seconds": t, "ratio": t / times["fedavg"]}
        for name, t in times.items()
    ]
