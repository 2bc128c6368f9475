"""Console script of unimc: UniMC-style condition tokens and keypoint AP (ICML 2025).

Commands: `unimc render ann.json --out DIR` (skeleton images of COCO keypoint annotations),
`unimc eval-pose --gt G --pred P --sigmas coco17|ap10k17|FILE` (keypoint AP per class through
pycocotools), `unimc reproduce [--out DIR] [--full]`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from icml25_core.cli import add_reproduce_command, console_parser

from ._version import __version__


def build_parser():
    """The argument parser of the ``unimc`` console script."""
    parser, commands = console_parser("unimc", __version__, __doc__)
    r = commands.add_parser("render", help="draw the skeletons of a COCO keypoint file")
    r.add_argument("ann", type=Path, help="COCO keypoint JSON")
    r.add_argument("--out", type=Path, required=True, help="output folder (one PNG per image)")
    r.add_argument(
        "--skeleton",
        action="append",
        default=[],
        metavar="CAT=NAME",
        help="skeleton of a category id, e.g. 1=coco17 2=ap10k17 (default: coco17 for all)",
    )
    e = commands.add_parser("eval-pose", help="COCO keypoint AP per class (pycocotools)")
    e.add_argument("--gt", type=Path, required=True, help="COCO keypoint ground truth JSON")
    e.add_argument("--pred", type=Path, required=True, help="COCO results JSON (list)")
    e.add_argument(
        "--sigmas",
        action="append",
        required=True,
        metavar="[CAT=]coco17|ap10k17|FILE",
        help="CAT=NAME|FILE per category (a bare NAME|FILE only with one category); "
        "FILE is a JSON list of K floats",
    )
    add_reproduce_command(
        commands,
        description="Mechanism test on synthetic scenes + keypoint AP on hand-labelled photos; "
        "writes <out>/unimc.md and .json.",
    )
    return parser


def _sigmas(spec: str, parser) -> np.ndarray:
    from .skeletons import SKELETONS

    if spec.lower() in SKELETONS:
        return SKELETONS[spec.lower()].sigma_array()
    p = Path(spec)
    if not p.is_file():
        parser.error(f"--sigmas: {spec!r} is neither coco17, ap10k17 nor a JSON file")
    try:
        return np.asarray(json.loads(p.read_text()), dtype=np.float64)
    except (ValueError, TypeError) as err:
        parser.error(f"--sigmas: {spec}: {err}")
        raise


def _read_json(path: Path, parser, flag: str):
    if not path.is_file():
        parser.error(f"{flag}: no such file: {path}")
    try:
        return json.loads(path.read_text())
    except ValueError as err:
        parser.error(f"{flag}: {path} is not JSON: {err}")


def main(argv=None) -> int:
    """Run the console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "reproduce":
        from . import reproduce  # imported here so that `--help` stays fast

        markdown, _ = reproduce.main(args.out, full=args.full)
        print(f"wrote {markdown} (and .json)")
    elif args.command == "eval-pose":
        from .metrics import STAT_NAMES, keypoint_ap

        gt = _read_json(args.gt, parser, "--gt")
        pred = _read_json(args.pred, parser, "--pred")
        cats = [int(c["id"]) for c in gt.get("categories", [])]
        sig: dict[int, np.ndarray] = {}
        for spec in args.sigmas:
            if "=" in spec:
                c, _, rest = spec.partition("=")
                if not c.strip().isdigit():
                    parser.error(f"--sigmas: bad category in {spec!r}")
                sig[int(c)] = _sigmas(rest, parser)
            elif len(cats) > 1:
                # one set of sigmas for several classes is the classic animal-pose bug
                parser.error(
                    f"--sigmas: the ground truth has {len(cats)} categories {cats}; give one "
                    "--sigmas CAT=coco17|ap10k17|FILE per category"
                )
            else:
                for c in cats:
                    sig.setdefault(c, _sigmas(spec, parser))
        try:
            res = keypoint_ap(gt, pred, sig)
        except (ValueError, TypeError) as err:
            parser.error(str(err))
        for c, stats in res.items():
            print(
                f"category {c}: "
                + " ".join(f"{n}={v:.4f}" for n, v in zip(STAT_NAMES, stats, strict=True))
            )
        print(
            "mean: " + " ".join(f"{n}={v:.4f}" for n, v in zip(STAT_NAMES, res.mean, strict=True))
        )
    elif args.command == "render":
        from .data import load_coco_keypoints
        from .render import render_skeleton
        from .skeletons import COCO17, get_skeleton

        ann = _read_json(args.ann, parser, "ann")
        if not isinstance(ann, dict):
            parser.error(
                f"ann: {args.ann} is a JSON {type(ann).__name__}, not a COCO keypoint file "
                "(a dict with images, annotations; a COCO results list has no image sizes)"
            )
        if args.out.exists() and not args.out.is_dir():
            parser.error(f"--out: {args.out} exists and is not a folder")
        sk_of = {}
        for spec in args.skeleton:
            c, _, name = spec.partition("=")
            try:
                sk_of[int(c)] = get_skeleton(name)
            except ValueError as err:
                parser.error(f"--skeleton {spec!r}: {err}")
        cats = [int(c["id"]) for c in ann.get("categories", [])] or sorted(
            {int(a["category_id"]) for a in ann.get("annotations", [])}
        )
        try:
            records = load_coco_keypoints(ann, class_map={c: c for c in cats})
        except (ValueError, KeyError, TypeError) as err:
            parser.error(f"ann: {err}")
        try:
            args.out.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            parser.error(f"--out: cannot create {args.out}: {err}")
        stems = [Path(rec["file_name"] or f"{rec['image_id']}").stem for rec in records]
        # images in different sub-folders may share a base name: add the image id to those
        clash = {s for s in stems if stems.count(s) > 1}
        for rec, stem in zip(records, stems, strict=True):
            sks = [sk_of.get(int(c), COCO17) for c in rec["classes"]]
            img = render_skeleton(rec["keypoints"], sks, (rec["width"], rec["height"]), width=2)
            name = f"{stem}-{rec['image_id']}.png" if stem in clash else f"{stem}.png"
            img.save(args.out / name)
        print(
            f"wrote {len(records)} images to {args.out}"
            + (f" ({len(clash)} shared base names: image id appended)" if clash else "")
        )
    return 0
