"""Console script of leaps-ctmc, the library for "LEAPS: A discrete neural sampler via locally
equivariant networks" (ICML 2025).

    leaps-ctmc train --model ising --L 8 --beta 0.4407 --out ckpt.pt
    leaps-ctmc sample ckpt.pt --walkers 4096
    leaps-ctmc reproduce [--out DIR] [--full]

`train` runs data-parallel when started by torchrun
(``torchrun --nproc-per-node 2 $(which leaps-ctmc) train ...``): one process per rank, gloo on
CPU, nccl on GPU.
"""

import argparse
import os
from pathlib import Path

from icml25_core import check_scalar, end_process
from icml25_core.cli import add_reproduce_command, console_parser

from ._version import __version__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``leaps-ctmc`` console script."""
    parser, commands = console_parser("leaps-ctmc", __version__, __doc__)
    defaults = argparse.ArgumentDefaultsHelpFormatter
    train = commands.add_parser("train", help="train a LEC sampler on an Ising or Potts torus",
                                formatter_class=defaults)  # fmt: skip
    train.add_argument("--model", choices=("ising", "potts"), default="ising", help="target")
    train.add_argument("--L", type=int, default=8, help="torus side (>= 3)")
    train.add_argument("--q", type=int, default=3, help="Potts states")
    train.add_argument("--beta", type=float, default=None,
                       help="inverse temperature (None: 0.4407 Ising, 1.0010 Potts)")  # fmt: skip
    train.add_argument("--steps", type=int, default=100, help="training steps")
    steps = train.add_mutually_exclusive_group()
    steps.add_argument("--n-steps", type=int, default=None, help="grid steps (50 unless --dt)")
    steps.add_argument(
        "--dt",
        type=float,
        default=None,
        help="grid step in the official configs' units (1/dt steps)",
    )
    train.add_argument("--walkers", type=int, default=256, help="rollout walkers")
    train.add_argument("--batch-size", type=int, default=512, help="(x, t) per loss batch")
    train.add_argument("--lr", type=float, default=3e-3, help="Adam learning rate")
    train.add_argument("--kernel-sizes", type=int, nargs="+", default=[3, 5, 5],
                       help="odd LEC kernel sizes, one per layer")  # fmt: skip
    train.add_argument("--channels", type=int, default=16, help="LEC channels")
    train.add_argument("--refresh-every", type=int, default=5,
                       help="training steps between new rollouts")  # fmt: skip
    train.add_argument("--seed", type=int, default=0, help="seed (plus the rank under torchrun)")
    train.add_argument("--checkpoint-dir", default=None, help="resumable training checkpoints")
    train.add_argument("--out", required=True, help="file for the trained sampler (.pt)")
    smp = commands.add_parser("sample", help="sample with a trained sampler; print ESS, log Z",
                              formatter_class=defaults)  # fmt: skip
    smp.add_argument("checkpoint", help="file written by `leaps-ctmc train --out`")
    smp.add_argument("--walkers", type=int, default=4096, help="walkers (per rank under torchrun)")
    smp.add_argument("--n-steps", type=int, default=None, help="grid steps (None: training's)")
    smp.add_argument("--mcmc-sweeps", type=int, default=0, help="Metropolis sweeps per step")
    smp.add_argument("--scheme", choices=("euler", "tau_leap"), default="euler",
                     help="CTMC step")  # fmt: skip
    smp.add_argument("--seed", type=int, default=0, help="seed (plus the rank under torchrun)")
    add_reproduce_command(
        commands,
        description="Measure the paper's headline claim on real input; write the report "
        "as <out>/leaps-ctmc.md and .json.",
    )
    return parser


def _setup(config):
    from .nets import LocallyEquivariantConv
    from .paths import IsingPath, PottsPath

    path: IsingPath | PottsPath
    if config["model"] == "ising":
        path, q = IsingPath(config["L"], config["beta"]), 2
    else:
        path, q = PottsPath(config["L"], config["q"], config["beta"]), config["q"]
    net = LocallyEquivariantConv(q, tuple(config["kernel_sizes"]), config["channels"],
                                 residual=True)  # fmt: skip
    return path, net


def _start_ranks() -> bool:
    """Join the torchrun process group (gloo on CPU, nccl on GPU); whether there is one."""
    import torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        torch.distributed.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return distributed


def _train(args) -> int:
    import torch

    from .nets import FreeEnergyNet
    from .train import Trainer

    check_scalar(args.refresh_every, "refresh_every", kind=int, low=1)
    if Path(args.out).is_dir():
        raise ValueError(f"--out {args.out} is a folder; give a file name (e.g. ckpt.pt)")
    if (
        args.checkpoint_dir is not None
        and Path(args.checkpoint_dir).exists()
        and not Path(args.checkpoint_dir).is_dir()
    ):
        raise ValueError(f"--checkpoint-dir {args.checkpoint_dir} is a file, not a folder")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)  # fail before, not after, training
    distributed = _start_ranks()
    beta = args.beta if args.beta is not None else (0.4407 if args.model == "ising" else 1.0010)
    n_steps = 50 if args.n_steps is None and args.dt is None else args.n_steps
    config = {
        "model": args.model, "L": args.L, "q": args.q, "beta": beta,
        "kernel_sizes": list(args.kernel_sizes), "channels": args.channels,
    }  # fmt: skip
    torch.manual_seed(args.seed)  # the same initial nets on every rank
    path, net = _setup(config)
    fnet = FreeEnergyNet()
    trainer = Trainer(
        path, net, fnet, lr=args.lr, n_walkers=args.walkers, batch_size=args.batch_size,
        n_steps=n_steps, dt=args.dt, curriculum_steps=0, refresh_every=args.refresh_every,
        buffer_size=max(1, 100 // args.refresh_every), seed=args.seed,
        checkpoint_dir=args.checkpoint_dir,
    )  # fmt: skip
    config["n_steps"] = trainer.n_steps
    trainer.fit(args.steps)
    if trainer.rank == 0:
        torch.save({"config": config, "net": net.state_dict(), "fnet": fnet.state_dict(),
                    "history": trainer.history_}, args.out)  # fmt: skip
        final = f", final PINN loss {trainer.history_[-1]:.4g}" if trainer.history_ else ""
        print(f"trained {args.steps} steps{final}; wrote {args.out}")
    if distributed:
        torch.distributed.destroy_process_group()
    return 0


def _load_sampler(checkpoint: str) -> dict:
    """The dict that `leaps-ctmc train --out` wrote, or a ValueError naming `checkpoint`."""
    import torch

    if not Path(checkpoint).is_file():
        raise ValueError(f"`checkpoint` {checkpoint!r} is not a file")
    try:
        state = torch.load(checkpoint, weights_only=True)
    except Exception as error:  # torch raises many types for a file it cannot read
        raise ValueError(f"`checkpoint` {checkpoint!r} is not a torch file ({error!r})") from error
    if not isinstance(state, dict) or not {"config", "net"} <= state.keys():
        raise ValueError(
            f"`checkpoint` {checkpoint!r} was not written by `leaps-ctmc train --out` (a "
            "trainer-rank<r>.pt of --checkpoint-dir only resumes training)"
        )
    return state


def _sample(args) -> int:
    import torch

    from . import exact
    from .estimators import snis
    from .sampler import _gather, sample

    state = _load_sampler(args.checkpoint)
    config = state["config"]
    path, net = _setup(config)
    net.load_state_dict(state["net"])
    net.eval()
    n_steps = config["n_steps"] if args.n_steps is None else args.n_steps
    distributed = _start_ranks()
    rank = torch.distributed.get_rank() if distributed else 0
    world = torch.distributed.get_world_size() if distributed else 1
    generator = torch.Generator().manual_seed(args.seed + rank)  # ranks draw different walkers
    res = sample(path, net, args.walkers, n_steps, mcmc_sweeps=args.mcmc_sweeps,
                 scheme=args.scheme, generator=generator)  # fmt: skip
    L, beta = config["L"], config["beta"]
    reference: float | None
    if config["model"] == "ising":
        reference = exact.ising_logz_kaufman(L, L, beta)
        order = res.x.to(torch.float64).mean((-1, -2)).abs()
        label = "<|M|> per site"
    else:
        q = config["q"]
        reference = exact.potts_logz_transfer(L, q, beta) if q**L <= 4096 else None
        frac = torch.nn.functional.one_hot(res.x, q).to(torch.float64).mean((1, 2))
        order = (q * frac.max(1).values - 1) / (q - 1)
        label = "<Potts order parameter>"
    mean, se = snis(_gather(res.log_w), _gather(order))  # every rank's walkers
    if distributed:
        torch.distributed.destroy_process_group()
    if rank != 0:
        return 0
    ranks = f" x {world} ranks" if world > 1 else ""
    print(f"walkers {args.walkers}{ranks}, steps {res.meta['n_steps']}, MCMC sweeps/step "
          f"{args.mcmc_sweeps}, scheme {args.scheme}")  # fmt: skip
    print(f"ESS {res.ess:.4f}, Pareto k-hat {res.pareto_k:.2f}")
    low, high = (v + path.log_z0 for v in res.log_z_ci)
    print(f"log Z {res.log_z + path.log_z0:.4f} +- {res.log_z_se:.4f} (delta method), "
          f"bootstrap 95% [{low:.4f}, {high:.4f}]")  # fmt: skip
    print(f"exact log Z {reference:.4f}" if reference is not None else "exact log Z n/a")
    print(f"{label} {float(mean):.4f} +- {float(se):.4f}")
    for problem in res.problems():
        print(f"do not trust the above: {problem}")
    print(f"(no check sees the O(h) bias of a non-stiff step: compare --n-steps {n_steps} with "
          f"--n-steps {2 * n_steps})")  # fmt: skip
    return 0


def main(argv=None) -> int:
    """Run the console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command in ("train", "sample"):
        try:
            code = _train(args) if args.command == "train" else _sample(args)
        except (
            ValueError,
            TypeError,
            OSError,
            FloatingPointError,
        ) as error:  # a message, not a trace
            parser.exit(2, f"leaps-ctmc {args.command}: error: {error}\n")
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            end_process(code)  # a torchrun rank, all written: gloo can abort the teardown
        return code
    from . import reproduce  # imported here so that `--help` stays fast

    markdown, _ = reproduce.main(args.out, full=args.full)
    print(f"wrote {markdown} (and .json)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
