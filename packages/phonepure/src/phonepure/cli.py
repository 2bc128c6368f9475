"""Console script of phonepure, the library for "De-AntiFake: Rethinking the Protective
Perturbations Against Voice Cloning Attacks" (ICML 2025).

Commands: `purify` (one file or a sharded corpus), `protect` (AttackVC-emb against GE2E),
`eval` (GE2E cosine of a clip to an enrolment clip), `reproduce [--out DIR] [--full]`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from icml25_core.cli import add_reproduce_command, console_parser

from ._version import __version__


def _shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(v) for v in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard must look like i/n, got {text!r}") from None
    if n < 1 or not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"--shard i/n needs 0 <= i < n, got {text!r}")
    return i, n


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {v}")
    return v


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
    p.add_argument("--text", default=None, help="transcript (file input); folders use <name>.txt")
    p.add_argument("-o", "--output", type=Path, required=True, help="output file or folder")
    p.add_argument("--stage1-only", action="store_true", help="AudioPure: stage 1 alone")
    p.add_argument("--shard", type=_shard, default=(0, 1), help="i/n: this process's file shard")
    p.add_argument("--t-star", type=_positive_int, default=None)
    p.add_argument("--seed", type=int, default=0)
    q = commands.add_parser("protect", help="AttackVC-emb protection against GE2E")
    q.add_argument("input", type=Path)
    q.add_argument("--target", type=Path, required=True, help="speech of another speaker")
    q.add_argument("-o", "--output", type=Path, required=True)
    q.add_argument("--eps", type=_positive_float, default=0.01)
    q.add_argument("--iters", type=_positive_int, default=150)
    q.add_argument("--seed", type=int, default=0)
    e = commands.add_parser("eval", help="GE2E cosine of a clip to an enrolment clip")
    e.add_argument("input", type=Path)
    e.add_argument("--enrol", type=Path, required=True)
    e.add_argument("--threshold", type=float, default=None)
    add_reproduce_command(
        commands,
        description="Measure the paper's headline claim on real input; write the report "
        "as <out>/phonepure.md and .json.",
    )
    return parser


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
        model = load_bundle(args.model, t_star=args.t_star)
        g = torch.Generator().manual_seed(args.seed)
        if args.input.is_dir():
            i, n = args.shard
            files = sorted(args.input.glob("*.wav"))[i::n]
            for f in files:
                txt = f.with_suffix(".txt")
                text = txt.read_text(encoding="utf-8").strip() if txt.exists() else None
                out = model(
                    load(f).clamp(-1, 1), text=text, generator=g, stage1_only=args.stage1_only
                )
                _write(args.output / f.name, out)
            print(f"shard {i}/{n}: purified {len(files)} files into {args.output}")
        else:
            out = model(
                load(args.input).clamp(-1, 1),
                text=args.text,
                generator=g,
                stage1_only=args.stage1_only,
            )
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
        out = attackvc_emb(
            load(args.input)[0],
            enc.embed,
            load(args.target)[0],
            eps=args.eps,
            iters=args.iters,
            generator=g,
        )
        _write(args.output, out)
        print(f"wrote {args.output}")
        return 0
    from .metrics import cosine

    for f in (args.input, args.enrol):
        if not f.exists():
            parser.error(f"file not found: {f}")
    with torch.no_grad():
        c = cosine(enc.embed(load(args.input)[0]), enc.embed(load(args.enrol)[0]))
    msg = f"cosine {c:.4f}"
    if args.threshold is not None:
        msg += " accept" if c >= args.threshold else " reject"
    print(msg)
    return 0
