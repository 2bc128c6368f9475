"""Console script of fsl-sage (FSL-SAGE, Nair et al., ICML 2025).

fsl-sage reproduce [--out DIR] [--full]   the paper's claim, small, on Fashion-MNIST
fsl-sage run --alg fsl_sage ...           one algorithm on Fashion-MNIST or digits
fsl-sage bench                            alignment-step and round benchmarks
"""

import argparse
import json

from icml25_core.cli import add_reproduce_command, console_parser

from ._version import __version__

ALGORITHMS = ("fsl_sage", "cse_fsl", "splitfed_v1", "splitfed_v2", "fedavg")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``fsl-sage`` console script."""
    parser, commands = console_parser("fsl-sage", __version__, __doc__)
    add_reproduce_command(
        commands,
        description="Measure the paper's headline claim on real input; write the report "
        "as <out>/fsl-sage.md and .json.",
    )
    run = commands.add_parser(
        "run",
        help="train one algorithm and print accuracy and bytes",
        description="Train one algorithm on simple_conv and print the final test accuracy "
        "(fraction) and official bytes as JSON.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    run.add_argument("--alg", choices=ALGORITHMS, default="fsl_sage", help="algorithm")
    run.add_argument(
        "--dataset", choices=("fashion-mnist", "digits"), default="fashion-mnist", help="data set"
    )
    run.add_argument("--clients", type=int, default=5, help="number of clients")
    run.add_argument("--per-client", type=int, default=1200, help="training samples per client")
    run.add_argument("--alpha", type=float, default=1.0, help="Dirichlet concentration")
    run.add_argument("--widths", default="16,32", help="simple_conv widths (official 64,64)")
    run.add_argument("--rounds", type=int, default=5, help="communication rounds")
    run.add_argument("--batch-size", type=int, default=64, help="local batch size")
    run.add_argument("--q", type=int, default=5, help="server update interval (iterations)")
    run.add_argument("--l", type=int, default=10, help="alignment interval (rounds)")
    run.add_argument("--seed", type=int, default=200, help="seed")
    run.add_argument("--flower", action="store_true", help="on Flower's Ray simulation engine")
    run.add_argument("--checkpoint", default=None, help="folder to checkpoint/resume (not Flower)")
    commands.add_parser("bench", help="alignment-step and per-round benchmarks")
    return parser


def _run_config(args):
    """The validated run configuration of ``fsl-sage run`` (raises ValueError / TypeError)."""
    from .flower.config import FlowerConfig, load_partition

    if args.flower and args.alg != "fsl_sage":
        raise ValueError("--flower runs FSL-SAGE only (--alg fsl_sage)")
    if args.flower and args.checkpoint is not None:
        raise ValueError("--checkpoint is not supported with --flower")
    cfg = FlowerConfig(
        dataset=args.dataset, num_clients=args.clients, per_client=args.per_client,
        alpha=args.alpha, widths=args.widths, rounds=args.rounds, batch_size=args.batch_size,
        q=args.q, l=args.l, seed=args.seed,
    )  # fmt: skip
    load_partition(cfg, 0, cfg.num_clients)  # the data exist and are large enough
    if args.checkpoint is not None:
        from .simulate import _checkpoint_folder

        _checkpoint_folder(args.checkpoint)
    return cfg


def _run(args, cfg) -> dict:
    if args.flower:
        from .flower.simulation import run_flower_simulation

        records = run_flower_simulation(cfg)["history"]
    else:
        from . import algorithms
        from .flower.config import build_split, load_partition, load_test
        from .simulate import run

        alg = cfg.algorithm() if args.alg == "fsl_sage" else getattr(algorithms, args.alg)()
        if args.alg == "cse_fsl":
            alg = algorithms.cse_fsl(args.q)
        parts = [load_partition(cfg, i, cfg.num_clients) for i in range(cfg.num_clients)]
        records = run(
            build_split(cfg), parts, alg, rounds=cfg.rounds, batch_size=cfg.batch_size,
            seed=cfg.seed, test=load_test(cfg), checkpoint=args.checkpoint,
        ).records  # fmt: skip
    last = records[-1]
    return {"algorithm": args.alg, "rounds": len(records), "accuracy": last["accuracy"],
            "official_bytes": last["official_bytes"]}  # fmt: skip


def main(argv=None) -> int:
    """Run the console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "run":
        try:  # bad arguments: a usage error (exit 2), not a traceback
            cfg = _run_config(args)
        except (ValueError, TypeError, OSError) as err:
            parser.exit(2, f"fsl-sage run: error: {err}\n")
    if args.command == "reproduce":
        from . import reproduce  # imported here so that `--help` stays fast

        markdown, _ = reproduce.main(args.out, full=args.full)
        print(f"wrote {markdown} (and .json)")
    elif args.command == "run":
        print(json.dumps(_run(args, cfg)))
    else:
        from .benchmark import align_step_timings, round_timings

        print(json.dumps({"align_step": align_step_timings(), "round": round_timings()}, indent=1))
    return 0
