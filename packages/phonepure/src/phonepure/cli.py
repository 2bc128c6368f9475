"""Console script of phonepure, the library for "De-AntiFake: Rethinking the Protective
Perturbations Against Voice Cloning Attacks" (ICML 2025).

Commands: `purify` (one file or a sharded corpus), `protect` (AttackVC-emb against GE2E),
`eval` (GE2E cosine of a clip to an enrolment clip), `reproduce [--out DIR] [--full]`.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

from icml25_core.cli import add_reproduce_command, console_parser, positive_int, shard_spec

from ._version import __version__


def _float_in(low: float, high: float, low_open: bool):
    """argparse type: a number in (low, high] (`low_open`) or [low, high]."""

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not ((low < v) if low_open else (low <= v)) or not v <= high:  # NaN fails too
            interval = f"{'(' if low_open else '['}{low:g}, {high:g}]"
            raise argparse.ArgumentTypeError(f"must be in {interval}, got {text}")
        return v

    return parse


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``phonepure`` console script.

    Returns
    -------
    argparse.ArgumentParser
    """
    parser, commands = console_parser("phonepure", __version__, __doc__)
    p = commands.add_parser("purify", help="purify a wav file, or a folder by shard")
    p.add_argument("input", type=Path, help="a .wav file, or a folder of .wav files")
    p.add_argument("--model", type=Path, required=True, help="bundle written by save_bundle")
    p.add_argument(
        "--text",
        default=None,
        help="transcript text itself, not a file (single-file input); folders read <name>.txt",
    )
    p.add_argument("-o", "--output", type=Path, required=True, help="output file or folder")
    p.add_argument("--stage1-only", action="store_true", help="AudioPure: stage 1 alone")
    p.add_argument(
        "--shard", type=shard_spec, default=(0, 1), help="i/n: this process's file shard"
    )
    p.add_argument(
        "--t-star", type=positive_int, default=None, help="stage-1 depth in [1, 200] (bundle's)"
    )
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    q = commands.add_parser("protect", help="AttackVC-emb protection against GE2E")
    q.add_argument("input", type=Path, help="the speaker's clip to protect")
    q.add_argument(
        "--target", type=Path, required=True, help="speech of another speaker (attack target)"
    )
    q.add_argument("-o", "--output", type=Path, required=True, help="protected wav")
    q.add_argument(
        "--eps",
        type=_float_in(0, 1, True),
        default=0.01,
        help="L-inf budget in (0, 1] (default: 0.01)",
    )
    q.add_argument("--iters", type=positive_int, default=150, help="Adam steps (default: 150)")
    q.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    e = commands.add_parser("eval", help="GE2E cosine of a clip to an enrolment clip")
    e.add_argument("input", type=Path, help="clip to verify")
    e.add_argument("--enrol", type=Path, required=True, help="enrolment clip of the speaker")
    e.add_argument(
        "--threshold",
        type=_float_in(-1, 1, False),
        default=None,
        help="print accept/reject at this cosine, in [-1, 1]",
    )
    add_reproduce_command(
        commands,
        description="Measure the paper's headline claim on real input; write the report "
        "as <out>/phonepure.md and .json.",
    )
    return parser


# bad input files / model files: one-line error instead of a traceback (soundfile's
# LibsndfileError is a RuntimeError)
_INPUT_ERRORS = (ValueError, TypeError, RuntimeError, OSError, EOFError, pickle.UnpicklingError)


def _reason(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}".splitlines()[0]


def _write(path: Path, wav) -> None:
    import soundfile as sf

    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(str(path), wav.reshape(-1).detach().numpy(), 16000)


def main(argv=None) -> int:
    """Run the console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        from . import reproduce  # imported here so that `--help` stays fast

        markdown, _ = reproduce.main(args.out, full=args.full)
        print(f"wrote {markdown} (and .json)")
        return 0
    import torch

    from .audio import load

    if args.command == "purify":
        from .pipeline import load_bundle

        if not args.input.exists():
            parser.error(f"input not found: {args.input}")
        if not args.model.exists():
            parser.error(f"--model not found: {args.model}")
        if not args.input.is_dir() and args.shard != (0, 1):
            parser.error("--shard needs a folder input (a single file is not sharded)")
        if args.t_star is not None and args.t_star > 200:
            parser.error(f"--t-star must be in [1, 200] (DDPM steps), got {args.t_star}")
        try:
            model = load_bundle(args.model, t_star=args.t_star)
        except _INPUT_ERRORS as err:
            parser.error(f"--model {args.model}: {_reason(err)}")
        g = torch.Generator().manual_seed(args.seed)
        if args.input.is_dir():
            i, n = args.shard
            every = sorted(args.input.glob("*.wav"))
            if not every:
                parser.error(f"no .wav files in {args.input}")
            files = every[i::n]
            failed = []
            for f in files:
                try:
                    txt = f.with_suffix(".txt")
                    text = txt.read_text(encoding="utf-8").strip() if txt.exists() else None
                    out = model(
                        load(f).clamp(-1, 1), text=text, generator=g, stage1_only=args.stage1_only
                    )
                    _write(args.output / f.name, out)
                except _INPUT_ERRORS as err:  # report, keep the rest of the shard
                    failed.append(f)
                    print(f"phonepure: skipped {f}: {_reason(err)}", file=sys.stderr)
            print(
                f"shard {i}/{n}: purified {len(files) - len(failed)} of {len(files)} files "
                f"into {args.output}"
            )
            return 1 if failed else 0
        try:
            out = model(
                load(args.input).clamp(-1, 1),
                text=args.text,
                generator=g,
                stage1_only=args.stage1_only,
            )
        except _INPUT_ERRORS as err:
            parser.error(f"{args.input}: {_reason(err)}")
        _write(args.output, out)
        print(f"wrote {args.output}")
        return 0
    from .sv import GE2E

    enc = GE2E.from_resemblyzer()
    if args.command == "protect":
        from .protect import attackvc_emb

        for f in (args.input, args.target):
            if not f.exists():
                parser.error(f"file not found: {f}")
        g = torch.Generator().manual_seed(args.seed)
        try:
            out = attackvc_emb(
                load(args.input)[0],
                enc.embed,
                load(args.target)[0],
                eps=args.eps,
                iters=args.iters,
                generator=g,
            )
        except _INPUT_ERRORS as err:
            parser.error(_reason(err))
        _write(args.output, out)
        print(f"wrote {args.output}")
        return 0
    from .metrics import cosine

    for f in (args.input, args.enrol):
        if not f.exists():
            parser.error(f"file not found: {f}")
    try:
        with torch.no_grad():
            c = cosine(enc.embed(load(args.input)[0]), enc.embed(load(args.enrol)[0]))
    except _INPUT_ERRORS as err:
        parser.error(_reason(err))
    msg = f"cosine {c:.4f}"
    if args.threshold is not None:
        msg += " accept" if c >= args.threshold else " reject"
    print(msg)
    return 0
