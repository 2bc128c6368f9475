"""Benchmark the LEAPS sampler (spec section 6).

1. Seconds per sampler step at B = 1000 walkers on the 15 x 15 Ising torus with the official LEC
   (kernels 3, 5, 7, 9, 15; 20 channels), one net pass per step, and where a step spends its time
   (issue 30's profile): the net pass, the neighbour Delta U of all single-site moves, the rates
   and the corrector K, the jump.
2. ESS per wall-second of the trained sampler of `leaps-ctmc reproduce` (its checkpoint in
   reports/.checkpoints/leaps-ctmc/*/ising/) against AIS with vectorised checkerboard Metropolis
   sweeps, at the same 50 steps. Skipped with a message when the checkpoint is missing.

Usage: python bench_sampler.py [--walkers 1000] [--steps 3] [--reports reports]
"""

import argparse
import platform
import time
from pathlib import Path

import torch
from leaps_ctmc import IsingPath, LocallyEquivariantConv, ais, corrector, rates, sample
from leaps_ctmc.sampler import _jump


def profile_step(path, net, walkers):
    """Seconds of each part of one sampler step (inference mode, best of 2)."""
    x = path.sample_base(walkers, torch.Generator().manual_seed(0))
    t = torch.full((walkers,), 0.5, dtype=torch.float64)
    parts = {
        "net pass G(x, t)": lambda: net(x.float(), t.float()),
        "neighbour Delta U (all moves)": lambda: path.neighbor_delta(x, t),
    }
    G = net(x.float(), t.float()).double()
    delta = path.neighbor_delta(x, t).double()
    parts["rates + corrector K"] = lambda: (rates(G, x), corrector(G, x, delta))
    out = rates(G, x)[0]
    parts["jump (euler)"] = lambda: _jump(path, x, out, 0.01, "euler", None)
    times = {}
    with torch.inference_mode():
        for name, fn in parts.items():
            best = float("inf")
            for _ in range(2):
                start = time.perf_counter()
                fn()
                best = min(best, time.perf_counter() - start)
            times[name] = best
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--walkers", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--reports", default="reports")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{platform.machine()} CPU, 1 thread, torch {torch.__version__}")
    path = IsingPath(15, 0.4407)
    net = LocallyEquivariantConv(2)
    start = time.perf_counter()
    sample(path, net, args.walkers, args.steps, generator=torch.Generator().manual_seed(0))
    per_step = (time.perf_counter() - start) / args.steps
    print(f"15x15 LEC (3,5,7,9,15) x 20: {per_step:.2f} s/step at B={args.walkers}")
    times = profile_step(path, net, args.walkers)
    total = sum(times.values())
    for name, seconds in times.items():
        print(f"  {name:32s} {seconds:8.3f} s  {100 * seconds / total:5.1f} %")

    found = sorted(
        (Path(args.reports) / ".checkpoints" / "leaps-ctmc").glob("*/ising/trainer-rank0.pt")
    )
    ckpt = found[-1] if found else None
    if ckpt is None:
        print(f"no trained checkpoint under {args.reports}: run `leaps-ctmc reproduce` first")
        return
    from leaps_ctmc.reproduce import BETA, DEFAULT

    path = IsingPath(DEFAULT.L, BETA)
    net = LocallyEquivariantConv(2, DEFAULT.kernel_sizes, DEFAULT.channels, residual=True)
    net.load_state_dict(torch.load(ckpt, weights_only=False)["net"])
    net.eval()
    rows = []
    for name, run in [
        ("LEAPS", lambda g: sample(path, net, 2048, DEFAULT.n_steps, generator=g)),
        ("AIS + 1 sweep/step", lambda g: ais(path, 2048, DEFAULT.n_steps, mcmc_sweeps=1,
                                              generator=g)),
        ("AIS + 10 sweeps/step", lambda g: ais(path, 2048, DEFAULT.n_steps, mcmc_sweeps=10,
                                                generator=g)),
    ]:  # fmt: skip
        start = time.perf_counter()
        res = run(torch.Generator().manual_seed(1))
        seconds = time.perf_counter() - start
        rows.append((name, res.ess, seconds, res.ess / seconds))
    print(f"{DEFAULT.L}x{DEFAULT.L}, 2048 walkers, {DEFAULT.n_steps} steps:")
    for name, ess, seconds, rate in rows:
        print(f"  {name:22s} ESS {ess:.4f}  {seconds:7.2f} s  ESS/s {rate:.4f}")


if __name__ == "__main__":
    main()
