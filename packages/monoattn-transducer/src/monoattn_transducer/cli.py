"""Console script of monoattn-transducer, the library for "Overcoming Non-monotonicity in
Transducer-based Streaming Generation" (ICML 2025).

Commands:
  reproduce [--out DIR] [--full] [--seed N]  measure the paper's claims on espeak-ng speech
  corpus [--cache DIR]                       synthesise / load the cached spoken-number corpus
  bench [--repeats N]                        time rnnt_loss fwd+bwd vs warprnnt-numba (CPU)
"""

import argparse
import sys

from icml25_core.cli import add_reproduce_command, console_parser, positive_int

from ._version import __version__


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: an integer >= 0") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: an integer >= 0")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``monoattn-transducer`` console script."""
    parser, commands = console_parser("monoattn-transducer", __version__, __doc__)
    rep = add_reproduce_command(
        commands,
        description="Measure the paper's claims on English spoken numbers -> German numeral "
        "morphemes; write the report as <out>/monoattn-transducer.md and .json.",
    )
    rep.add_argument("--seed", type=_seed, default=0, help="first seed (default: 0)")
    corpus = commands.add_parser("corpus", help="synthesise (once) and summarise the corpus")
    corpus.add_argument(
        "--cache",
        default=None,
        help="cache folder (default: reports/.checkpoints/monoattn-transducer/corpus)",
    )
    bench = commands.add_parser("bench", help="time rnnt_loss against warprnnt-numba on CPU")
    bench.add_argument("--repeats", type=positive_int, default=5, help="timed repeats (default 5)")
    return parser


def _missing_extra(exc: ImportError) -> int:
    name = exc.name or str(exc)
    print(
        f"monoattn-transducer: missing module {name!r}; this command needs the [speech] extra "
        "(pip install 'monoattn-transducer[speech]', or [reproduce] for the full reproduce)",
        file=sys.stderr,
    )
    return 1


def main(argv=None) -> int:
    """Run the console script; returns the exit status (130 after Ctrl-C)."""
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except KeyboardInterrupt:
        print(
            "\ninterrupted; rerun the same command to resume (models already trained and decoded "
            "are kept; the model in training restarts from step 0)",
            file=sys.stderr,
        )
        return 130
    except ModuleNotFoundError as exc:
        if exc.name in _SPEECH_MODULES:
            return _missing_extra(exc)
        raise


_SPEECH_MODULES = ("num2words", "librosa", "espeakng_loader", "sacrebleu", "matplotlib")


def _run(args: argparse.Namespace) -> int:
    if args.command == "reproduce":
        from . import reproduce  # imported here so that `--help` stays fast

        markdown, _ = reproduce.main(args.out, full=args.full, seed=args.seed)
        print(f"wrote {markdown} (and .json)")
    elif args.command == "corpus":
        from icml25_core import progress

        from .data.spoken_numbers import build_corpus
        from .reproduce import _cache_dir

        c = build_corpus(args.cache or _cache_dir(), progress=progress)
        frames = sum(len(f) for f in c["feats"])
        print(f"{len(c['feats'])} utterances, {frames / 100:.0f} s of speech, "
              f"voices {sorted(set(c['voices']))}")  # fmt: skip
    elif args.command == "bench":
        from .bench import bench_cpu

        for line in bench_cpu(repeats=args.repeats):
            print(line)
    return 0
