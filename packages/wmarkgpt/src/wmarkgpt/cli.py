"""Console script of wmarkgpt ("WMarkGPT: Watermarked Image Understanding via Multimodal Large
Language Models", Tan et al., ICML 2025).

    wmarkgpt make-synthetic --covers DIR|skimage --logos DIR|builtin --n 100 --out DIR
    wmarkgpt make-position  --covers DIR --coco-json instances.json --logos ... --n 100 --out DIR
    wmarkgpt make-invisible --covers DIR|skimage --n 8 --methods dwtDctSvd rivaGan --out DIR
    wmarkgpt eval PRED.json GT.json [--compat wmarkgpt]    (or: wmarkgpt eval --official)
    wmarkgpt reproduce [--out reports] [--full]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from icml25_core.cli import add_reproduce_command, console_parser

from ._version import __version__

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff"}


def build_parser():
    """The argument parser of the ``wmarkgpt`` console script."""
    parser, commands = console_parser("wmarkgpt", __version__, __doc__)
    defaults = argparse.ArgumentDefaultsHelpFormatter
    for name, text in (
        ("make-synthetic", "visible logos at random visibility + descriptions"),
        ("make-position", "visible logos + single-word position questions"),
    ):
        cmd = commands.add_parser(name, help=text, formatter_class=defaults)
        cmd.add_argument("--covers", required=True, help="folder of cover images, or 'skimage'")
        cmd.add_argument(
            "--logos",
            default="builtin",
            help="folder of logos (RGBA PNGs, or RGB on a flat background), or "
            "'builtin' (scikit-image, matplotlib, Pillow text)",
        )
        cmd.add_argument("--n", type=int, default=100, help="number of images")
        cmd.add_argument("--out", required=True, help="output folder (a rerun resumes)")
        cmd.add_argument("--seed", type=int, default=0)
        cmd.add_argument("--size", type=int, default=224, help="cover side (pixels)")
        cmd.add_argument("--coco-json", default=None, help="COCO instances file (object boxes)")
        cmd.add_argument("--format", default="llava", choices=("llava", "sharegpt"))
        cmd.add_argument("--workers", type=int, default=1, help="processes")
        cmd.add_argument("--quiet", action="store_true", help="no progress bar")
    inv = commands.add_parser(
        "make-invisible",
        help="real invisible watermarks (extra [invisible])",
        formatter_class=defaults,
    )
    inv.add_argument("--covers", required=True, help="folder of covers >= 256x256, or 'skimage'")
    inv.add_argument("--n", type=int, default=8)
    inv.add_argument("--out", required=True)
    inv.add_argument(
        "--methods",
        nargs="+",
        default=["dwtDctSvd", "rivaGan"],
        choices=("dwtDct", "dwtDctSvd", "rivaGan"),
    )
    inv.add_argument("--seed", type=int, default=0)
    inv.add_argument(
        "--gt-scores",
        default=None,
        help="JSON file with a list of --n human visibility scores in [0, 5]: the records then "
        "get a description question and answer (training records)",
    )
    inv.add_argument("--workers", type=int, default=1)
    inv.add_argument("--quiet", action="store_true")
    ev = commands.add_parser(
        "eval", help="BLEU / ROUGE-L / ACC of answers vs ground truth", formatter_class=defaults
    )
    ev.add_argument("pred", nargs="?", help="answers JSON (LLaVA records)")
    ev.add_argument("gt", nargs="?", help="ground-truth JSON")
    ev.add_argument(
        "--compat",
        default=None,
        choices=("wmarkgpt",),
        help="the official numbers, quirks included",
    )
    ev.add_argument(
        "--official",
        action="store_true",
        help="evaluate the 7 shipped official WQA-Real answer files",
    )
    add_reproduce_command(
        commands,
        description="Re-compute paper Table 1 and the Q-score from the official files; train a "
        "small CNN on synthetic watermarks of real photos; embed real invisible watermarks. "
        "Writes <out>/wmarkgpt.md, .json and a scatter plot.",
        full_help="the synthetic part at 112x112 with 6,000 images",
    )
    return parser


def _images(folder: str, name: str) -> list[Path]:
    path = Path(folder)
    if not path.is_dir():
        raise ValueError(f"`--{name}` {folder} is not a folder")
    files = sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise ValueError(
            f"`--{name}` {folder} holds no image ({', '.join(sorted(IMAGE_SUFFIXES))})"
        )
    return files


def _covers(spec: str, min_side: int = 0):
    if spec == "skimage":
        from .reproduce import real_covers

        return [(k, v) for k, v in real_covers().items() if min(v.shape[:2]) >= min_side]
    return [str(p) for p in _images(spec, "covers")]


def _logos(spec: str, size: int):
    from .synth import prepare_logo

    if spec == "builtin":
        from .reproduce import real_logos

        return real_logos((size, size))
    import numpy as np
    from PIL import Image

    logos = []
    for p in _images(spec, "logos"):
        try:
            logos.append(
                prepare_logo(
                    np.asarray(Image.open(p).convert("RGBA")), size=(size, size), name=p.stem
                )
            )
        except ValueError as error:
            raise ValueError(f"`--logos` {p.name}: {error}") from None
    return logos


def make(args) -> str:
    """The ``make-synthetic`` / ``make-position`` commands."""
    from .dataset import build_position, build_synthetic

    if args.size < 16:
        raise ValueError(f"`--size` must be >= 16, got {args.size}")
    build = build_position if args.command == "make-position" else build_synthetic
    records = build(
        _covers(args.covers),
        _logos(args.logos, args.size),
        args.n,
        args.out,
        seed=args.seed,
        size=args.size,
        coco_json=args.coco_json,
        format=args.format,
        workers=args.workers,
        progress=not args.quiet,
    )
    return f"wrote {len(records)} records to {Path(args.out) / 'index.json'}"


def make_invisible(args) -> str:
    """The ``make-invisible`` command."""
    from .dataset import build_invisible

    gt_scores = None
    if args.gt_scores is not None:
        try:
            gt_scores = json.loads(Path(args.gt_scores).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise ValueError(f"`--gt-scores` {args.gt_scores}: {error}") from None
        if not isinstance(gt_scores, list):
            raise ValueError(f"`--gt-scores` {args.gt_scores} must hold a JSON list of numbers")
    records = build_invisible(
        _covers(args.covers, 256),
        args.n,
        args.out,
        methods=args.methods,
        seed=args.seed,
        gt_scores=gt_scores,
        workers=args.workers,
        progress=not args.quiet,
    )
    mean_psnr = sum(r["psnr"] for r in records) / len(records)
    index = Path(args.out) / "index.json"
    return f"wrote {len(records)} records to {index}; mean PSNR {mean_psnr:.2f} dB"


def evaluate_command(args) -> str:
    """The ``eval`` command."""
    from .metrics import evaluate
    from .official import OFFICIAL_MODELS, official_file

    if args.official:
        if args.pred or args.gt:
            raise ValueError("--official evaluates the shipped files and takes no PRED / GT")
        pairs = [
            (OFFICIAL_MODELS[m], official_file("answers", m), official_file("test"))
            for m in OFFICIAL_MODELS
        ]
    elif args.pred and args.gt:
        pairs = [(Path(args.pred).name, args.pred, args.gt)]
    else:
        raise ValueError("give PRED and GT files, or --official")
    lines = [f"{'model':<32} {'n':>5} {'BLEU-1':>8} {'ROUGE-L':>8} {'ACC':>6} {'BLEU-4':>8}"]
    for name, pred, gt in pairs:
        t = evaluate(pred, gt, compat=args.compat)
        lines.append(
            f"{name:<32} {t.n:5d} {t.bleu1:8.4f} {t.rouge_l:8.4f} {t.acc:6.3f} {t.bleu4:8.4f}"
        )
    mode = "compat=wmarkgpt (official numbers)" if args.compat else "correct metrics"
    return "\n".join([f"# {mode}", *lines])


def main(argv=None) -> int:
    """Run the console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "reproduce":
        from . import reproduce  # imported here so that `--help` stays fast

        markdown, _ = reproduce.main(args.out, full=args.full)
        print(f"wrote {markdown} (and .json)")
        return 0
    commands = {
        "make-synthetic": lambda: make(args),
        "make-position": lambda: make(args),
        "make-invisible": lambda: make_invisible(args),
        "eval": lambda: evaluate_command(args),
    }
    try:
        text = commands[args.command]()
    except (ValueError, TypeError, OSError, ImportError, json.JSONDecodeError) as error:
        print(f"wmarkgpt {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            f"wmarkgpt {args.command}: interrupted; rerun the same command to resume",
            file=sys.stderr,
        )
        return 130
    print(text)
    return 0
