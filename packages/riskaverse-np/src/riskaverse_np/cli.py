"""Console script of riskaverse-np: train a neural process for its worst tasks (CVaR mirror
prox) or the mean, evaluate a checkpoint, or reproduce the paper's headline claim.

    riskaverse-np train --tasks digits --alpha 0.7 --method mirror_prox --grad-budget 24000 \\
        --out ckpt.msgpack
    riskaverse-np eval ckpt.msgpack --tasks digits
    riskaverse-np reproduce [--out reports] [--full]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from icml25_core.cli import add_reproduce_command, console_parser, positive_int

from ._version import __version__

TASKS = ("gp-mix", "digits")
METHOD_NAMES = ("mirror_prox", "erm", "topk_cvar", "kde_var", "worst")


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not 0.0 <= value < 1.0:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return value


def build_parser():
    """The argument parser of the ``riskaverse-np`` console script."""
    parser, commands = console_parser("riskaverse-np", __version__, __doc__)
    train = commands.add_parser("train", help="train a CNP on a task pool; write a checkpoint")
    train.add_argument(
        "--tasks", choices=TASKS, default="gp-mix", help="task pool (default gp-mix)"
    )
    train.add_argument("--alpha", type=_alpha, default=0.7, help="CVaR confidence level in [0, 1)")
    train.add_argument("--method", choices=METHOD_NAMES, default="mirror_prox")
    train.add_argument("--grad-budget", type=positive_int, default=24000,
                       help="per-task gradient evaluations (default 24000)")  # fmt: skip
    train.add_argument("--hidden", type=positive_int, default=64, help="CNP width (default 64)")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument(
        "--out", type=Path, required=True,
        help="checkpoint file (missing parent folders are created); an existing one of the "
        "same settings is resumed; Ctrl-C writes it and exits with status 130",
    )  # fmt: skip
    train.add_argument("--checkpoint-every", type=positive_int, default=200,
                       help="steps between checkpoints (default 200)")  # fmt: skip
    ev = commands.add_parser("eval", help="evaluate a checkpoint on held-out tasks (JSON out)")
    ev.add_argument("checkpoint", type=Path)
    ev.add_argument("--tasks", choices=TASKS, default="gp-mix",
                    help="the pool the checkpoint was trained on (default gp-mix)")  # fmt: skip
    ev.add_argument("--hidden", type=positive_int, default=64,
                    help="the CNP width it was trained with (default 64)")  # fmt: skip
    ev.add_argument(
        "--alpha",
        type=_alpha,
        default=None,
        help="CVaR level of the reported cvar (default: the training alpha)",
    )
    add_reproduce_command(
        commands,
        description="Measure the paper's headline claim on real input; write the report "
        "as <out>/riskaverse-np.md and .json.",
    )
    return parser


def _pools(tasks: str, seed: int):
    from .tasks import digits_pool, gp_pool

    if tasks == "digits":
        return digits_pool("train", seed=seed), digits_pool("test", seed=1000)
    return gp_pool(256, seed=seed), gp_pool(1000, seed=1000)


def main(argv=None) -> int:
    """Run the console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        from . import reproduce  # imported here so that `--help` stays fast

        markdown, _ = reproduce.main(args.out, full=args.full)
        print(f"wrote {markdown} (and .json)")
        return 0
    from .models import CNP
    from .trainer import RiskAverseTrainer, evaluate_model

    if args.command == "train":
        if args.seed < 0:
            parser.error("argument --seed: must be >= 0")
        if args.out.is_dir():
            parser.error(f"argument --out: {str(args.out)!r} is a directory, not a file")
        train, test = _pools(args.tasks, args.seed)
        model = CNP(2 if args.tasks == "digits" else 1, 1, hidden=args.hidden, rngs=args.seed)
        try:  # loads an existing --out: corrupt files and other settings are user errors
            trainer = RiskAverseTrainer(
                model, train, args.alpha, args.method, args.grad_budget, args.seed, args.out,
                checkpoint_every=args.checkpoint_every,
            )  # fmt: skip
        except ValueError as error:
            message = str(error)
            if "checkpoint" in message:
                parser.error(f"argument --out: {message} (or pass another --out)")
            parser.error(message.replace("`grad_budget`=", "argument --grad-budget: "))
        try:
            trainer.fit()
        except KeyboardInterrupt:
            print(
                f"interrupted at step {trainer.step} of {trainer.total_steps}: checkpoint "
                f"written to {str(args.out)!r}; rerun the same command to resume",
                file=sys.stderr,
            )
            return 130
        out = trainer.evaluate(test)
        print(
            json.dumps({"alpha": args.alpha, **{k: out[k] for k in ("mean", "cvar", "worst_1pct")}})
        )
        return 0
    # eval
    if not args.checkpoint.is_file():
        parser.error(f"argument checkpoint: no such file: {str(args.checkpoint)!r}")
    from flax import serialization

    try:
        state = serialization.msgpack_restore(args.checkpoint.read_bytes())
        config = state["config"]
    except Exception:
        parser.error(
            f"argument checkpoint: not a riskaverse-np checkpoint: {str(args.checkpoint)!r}"
        )
    seed = int(config["seed"])
    train, test = _pools(args.tasks, seed)
    saved_pool = config.get("pool")
    if int(config["n_tasks"]) != train.n_tasks or saved_pool != train.fingerprint():
        other = next(
            (
                t
                for t in TASKS
                if t != args.tasks and _pools(t, seed)[0].fingerprint() == saved_pool
            ),
            None,
        )
        where = f"--tasks {other}" if other else "a pool this command does not build"
        if saved_pool is None:
            where = "an older riskaverse-np without pool fingerprints: retrain it"
        parser.error(
            f"argument --tasks: the checkpoint was not trained on {args.tasks} (seed {seed}): "
            f"it was trained on {where}"
        )
    model = CNP(2 if args.tasks == "digits" else 1, 1, hidden=args.hidden)
    alpha = float(config["alpha"])
    trainer = RiskAverseTrainer(
        model, train, alpha, str(config["method"]), int(config["grad_budget"]),
        seed, progress=False, tasks_per_step=config["tasks_per_step"],
        lr=float(config["lr"]), inner_steps=int(config["inner_steps"]),
    )  # fmt: skip
    try:
        trainer.load_state_dict(state)
    except ValueError as error:
        parser.error(f"argument checkpoint: {error}; was it trained with another --hidden?")
    report_alpha = alpha if args.alpha is None else args.alpha
    out = evaluate_model(trainer.final_model(), test, report_alpha)
    print(
        json.dumps({"alpha": report_alpha, **{k: out[k] for k in ("mean", "cvar", "worst_1pct")}})
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
