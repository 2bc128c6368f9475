"""Console script of fedswa, the library for "FedSWA: Improving Generalization in Federated
Learning with Highly Heterogeneous Data via Momentum-Based Stochastic Controlled Weight
Averaging" (ICML 2025).

  fedswa reproduce [--out DIR] [--full] [--engine local|flower]   the paper's claims, real data
  fedswa run --alg fedswa --data digits [...]                     one federated run
  fedswa bench                                                    the spec's speed ratios
"""

import argparse

from icml25_core.cli import add_reproduce_command, console_parser

from ._version import __version__
from .algorithms import ALGORITHMS


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``fedswa`` console script."""
    parser, commands = console_parser("fedswa", __version__, __doc__)
    reproduce = add_reproduce_command(
        commands,
        description="Measure the paper's headline claims on Fashion-MNIST (Debian "
        "dataset-fashion-mnist); write <out>/fedswa.md and .json and a plot.",
        full_help="100 clients, T=100, 3 seeds, small CNN",
    )
    reproduce.add_argument(
        "--engine",
        choices=("local", "flower"),
        default="local",
        help="in-process driver on worker processes (default) or Flower's simulation engine",
    )
    run = commands.add_parser(
        "run",
        help="one federated run; prints test accuracy per round",
        description="One federated run on scikit-learn's digits (needs scikit-learn) or "
        "Fashion-MNIST (Debian dataset-fashion-mnist); prints test accuracy per round.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    # every option has a help text: ArgumentDefaultsHelpFormatter shows "(default: ...)" only then
    run.add_argument("--alg", choices=sorted(ALGORITHMS), default="fedswa", help="algorithm")
    run.add_argument(
        "--data", choices=("digits", "fashion-mnist"), default="digits", help="dataset"
    )
    run.add_argument("--clients", type=int, default=10, help="number of clients N")
    run.add_argument("--per-round", type=int, default=5, help="clients sampled per round")
    run.add_argument("--rounds", type=int, default=10, help="rounds T")
    run.add_argument("--local-steps", type=int, default=50, help="K")
    run.add_argument("--batch-size", type=int, default=32, help="minibatch size B")
    run.add_argument("--eta0", type=float, default=0.05, help="round-0 LR before lr_factor")
    run.add_argument("--dirichlet-alpha", type=float, default=0.1, help="label skew")
    run.add_argument("--seed", type=int, default=0, help="model init and minibatch order")
    commands.add_parser("bench", help="time the local step, the server step and a round")
    return parser


def _check_run_args(args) -> str | None:
    """The first out-of-range ``fedswa run`` option, as an error message (None if all hold)."""
    rules = [
        ("--clients", args.clients, args.clients >= 1, ">= 1"),
        ("--per-round", args.per_round, 1 <= args.per_round <= max(args.clients, 1),
         f"in [1, --clients={args.clients}]"),
        ("--rounds", args.rounds, args.rounds >= 1, ">= 1"),
        ("--local-steps", args.local_steps, args.local_steps >= 1, ">= 1"),
        ("--batch-size", args.batch_size, args.batch_size >= 1, ">= 1"),
        ("--eta0", args.eta0, 0 < args.eta0 < float("inf"), "a finite number > 0"),
        ("--dirichlet-alpha", args.dirichlet_alpha, 0 < args.dirichlet_alpha < float("inf"),
         "a finite number > 0"),
        ("--seed", args.seed, args.seed >= 0, ">= 0"),
    ]  # fmt: skip
    for flag, value, ok, wanted in rules:
        if not ok:  # NaN fails every comparison, so it lands here too
            return f"argument {flag}: must be {wanted}, got {value}"
    return None


def _run(args) -> None:
    import numpy as np
    import torch

    from .metrics import accuracy
    from .models import mlp
    from .partition import dirichlet_fixed_size
    from .simulate import run_federated

    if args.data == "digits":
        from .data import load_digits

        x, y = load_digits()
        order = torch.from_numpy(np.random.default_rng(0).permutation(len(x)))
        cut = int(0.8 * len(x))
        x_tr, y_tr, x_te, y_te = x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]
        size, model_fn = len(y_tr) // args.clients, (lambda: mlp(64, 64, 10))
        replace = False
    else:
        from .data import load_fashion_mnist

        x_tr, y_tr, x_te, y_te = load_fashion_mnist()
        size, model_fn, replace = 500, mlp, True
    parts = dirichlet_fixed_size(
        y_tr.numpy(), args.clients, args.dirichlet_alpha, size, seed=42, replace=replace
    )
    partitions = [(x_tr[torch.from_numpy(p)], y_tr[torch.from_numpy(p)]) for p in parts]
    history = run_federated(
        model_fn, partitions, args.alg, rounds=args.rounds, clients_per_round=args.per_round,
        local_steps=args.local_steps, batch_size=args.batch_size, eta0=args.eta0,
        seed=args.seed, eval_fn=lambda m: {"test_acc": accuracy(m, x_te, y_te)},
        show_progress=True,
    )  # fmt: skip
    for r in history.rounds:
        print(
            f"round {r['round']:3d}  train loss {r['train_loss']:.4f}  test acc {r['test_acc']:.4f}"
        )


def _bench() -> None:
    from .bench import bench_local_step, bench_round_time, bench_server

    for row in bench_local_step():
        print(
            f"local step  {row['case']:<24} foreach {1e3 * row['ours_s']:.3f} ms  "
            f"loop {1e3 * row['loop_s']:.3f} ms  ratio {row['ratio']:.2f}"
        )
    for row in bench_server():
        print(
            f"server      {row['case']:<24} {row['ours_gbs']:.2f} GB/s  memcpy "
            f"{row['memcpy_gbs']:.2f} GB/s  ratio {row['ratio']:.2f}"
        )
    for row in bench_round_time():
        print(f"round time  {row['case']:<24} {row['seconds']:.3f} s  ratio {row['ratio']:.2f}")


def main(argv=None) -> int:
    """Run the console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        from . import reproduce  # imported here so that `--help` stays fast

        markdown, _ = reproduce.main(args.out, full=args.full, engine=args.engine)
        print(f"wrote {markdown} (and .json)")
    elif args.command == "run":
        message = _check_run_args(args)
        if message is None:
            try:
                _run(args)
            except (ImportError, FileNotFoundError, ValueError, TypeError) as err:
                message = str(err)
        if message is not None:
            parser.exit(2, f"fedswa run: error: {message}\n")
    elif args.command == "bench":
        _bench()
    return 0
