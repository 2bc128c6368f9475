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

from ._version import __version__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``leaps-ctmc`` console script."""
    parser = argparse.ArgumentParser(
        prog="leaps-ctmc", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    train = commands.add_parser("train", help="train a LEC sampler on an Ising or Potts torus")
    train.add_argument("--model", choices=("ising", "potts"), default="ising")
    train.add_argument("--L", type=int, default=8, help="torus side (default 8)")
    train.add_argument("--q", type=int, default=3, help="Potts states (default 3)")
    train.add_argument("--beta", type=float, default=None,
                       help="inverse temperature (default 0.4407 Ising, 1.0010 Potts)")  # fmt: skip
    train.add_argument("--steps", type=int, default=100, help="training steps (default 100)")
    train.add_argument("--n-steps", type=int, default=50, help="grid steps (default 50)")
    train.add_argument("--walkers", type=int, default=256, help="rollout walkers (default 256)")
    train.add_argument("--batch-size", type=int, default=512, help="(x, t) per loss batch")
    train.add_argument("--lr", type=float, default=3e-3, help="Adam learning rate")
    train.add_argument("--kernel-sizes", type=int, nargs="+", default=[3, 5, 5])
    train.add_argument("--channels", type=int, default=16)
    train.add_argument("--refresh-every", type=int, default=5)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--checkpoint-dir", default=None, help="resumable training checkpoints")
    train.add_argument("--out", required=True, help="file for the trained sampler (.pt)")
    smp = commands.add_parser("sample", help="sample with a trained sampler; print ESS, log Z")
    smp.add_argument("checkpoint", help="file written by `leaps-ctmc train`")
    smp.add_argument("--walkers", type=int, default=4096)
    smp.add_argument("--n-steps", type=int, default=None, help="grid steps (default: training's)")
    smp.add_argument("--mcmc-sweeps", type=int, default=0)
    smp.add_argument("--scheme", choices=("euler", "tau_leap"), default="euler")
    smp.add_argument("--seed", type=int, default=0)
    reproduce = commands.add_parser(
        "reproduce",
        help="measure the paper's headline claim on real input and write the report",
        description="Measure the paper's headline claim on real input; write the report "
        "as <out>/leaps-ctmc.md and .json.",
    )
    reproduce.add_argument(
        "--out", default="reports", help="directory of the report (default: reports)"
    )
    reproduce.add_argument(
        "--full", action="store_true", help="run at the paper's scale instead of the quick default"
    )
    return parser


def _setup(config):
    from .nets import LocallyEquivariantConv
    from .paths import IsingPath, PottsPath

    if config["model"] == "ising":
        path, q = IsingPath(config["L"], config["beta"]), 2
    else:
        path, q = PottsPath(config["L"], config["q"], config["beta"]), config["q"]
    net = LocallyEquivariantConv(q, tuple(config["kernel_sizes"]), config["channels"],
                                 residual=True)  # fmt: skip
    return path, net


def _train(args) -> int:
    import torch

    from .nets import FreeEnergyNet
    from .train import Trainer

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        torch.distributed.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    beta = args.beta if args.beta is not None else (0.4407 if args.model == "ising" else 1.0010)
    config = {
        "model": args.model, "L": args.L, "q": args.q, "beta": beta, "n_steps": args.n_steps,
        "kernel_sizes": list(args.kernel_sizes), "channels": args.channels,
    }  # fmt: skip
    torch.manual_seed(args.seed)  # the same initial nets on every rank
    path, net = _setup(config)
    fnet = FreeEnergyNet()
    trainer = Trainer(
        path, net, fnet, lr=args.lr, n_walkers=args.walkers, batch_size=args.batch_size,
        n_steps=args.n_steps, curriculum_steps=0, refresh_every=args.refresh_every,
        buffer_size=max(1, 100 // args.refresh_every), seed=args.seed,
        checkpoint_dir=args.checkpoint_dir,
    )  # fmt: skip
    trainer.fit(args.steps)
    if trainer.rank == 0:
        torch.save({"config": config, "net": net.state_dict(), "fnet": fnet.state_dict(),
                    "history": trainer.history_}, args.out)  # fmt: skip
        print(f"trained {args.steps} steps, final PINN loss {trainer.history_[-1]:.4g}; "
              f"wrote {args.out}")  # fmt: skip
    if distributed:
        torch.distributed.destroy_process_group()
    return 0


def _sample(args) -> int:
    import torch

    from . import exact
    from .estimators import snis
    from .sampler import sample

    state = torch.load(args.checkpoint, weights_only=True)
    config = state["config"]
    path, net = _setup(config)
    net.load_state_dict(state["net"])
    net.eval()
    res = sample(path, net, args.walkers, args.n_steps or config["n_steps"],
                 mcmc_sweeps=args.mcmc_sweeps, scheme=args.scheme,
                 generator=torch.Generator().manual_seed(args.seed))  # fmt: skip
    L, beta = config["L"], config["beta"]
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
    mean, se = snis(res.log_w, order)
    print(f"walkers {args.walkers}, steps {res.meta['n_steps']}, MCMC sweeps/step "
          f"{args.mcmc_sweeps}, scheme {args.scheme}")  # fmt: skip
    print(f"ESS {res.ess:.4f}")
    print(f"log Z {res.log_z + path.log_z0:.4f} +- {res.log_z_se:.4f}")
    print(f"exact log Z {reference:.4f}" if reference is not None else "exact log Z n/a")
    print(f"{label} {float(mean):.4f} +- {float(se):.4f}")
    return 0


def main(argv=None) -> int:
    """Run the console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "train":
        return _train(args)
    if args.command == "sample":
        return _sample(args)
    from . import reproduce  # imported here so that `--help` stays fast

    markdown, _ = reproduce.main(args.out, full=args.full)
    print(f"wrote {markdown} (and .json)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
