"""Console script ``laion-c``: corrupt images, build tile libraries and data sets, evaluate a
model on a LAION-C folder, and reproduce the paper's headline claim.

    laion-c distort photo.jpg out.jpg --distortion mosaic --level 3 --tiles tiles.npz
    laion-c tiles my_photos/ tiles.npz --crops-per-image 500
    laion-c build my_images/ laionc_out/ --tiles tiles.npz --workers 4 --shard 0/8
    laion-c eval laionc_out/ --model efficientnet-lite0 --normalize imagenet --csv acc.csv
    laion-c reproduce [--out reports] [--full] [--root LAION-C]
"""

from __future__ import annotations

import argparse
import math
import sys

from icml25_core import end_process
from icml25_core.cli import add_reproduce_command, console_parser, shard_spec

from ._version import __version__
from .params import ALIASES, DISTORTIONS, LEVELS
from .superclass import OUTPUTS


def _seed(text: str) -> int:
    """argparse type of ``--seed``: an int >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an int >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an int >= 0, got {value}")
    return value


_NORMALIZE_FORM = "imagenet, none or m1,m2,m3:s1,s2,s3 (3 means, 3 stds > 0)"


def _normalize(text: str):
    """argparse type of ``--normalize``: "imagenet", "none" or ``m1,m2,m3:s1,s2,s3``."""
    if text in ("imagenet", "none"):
        return None if text == "none" else text
    try:
        mean, std = ([float(v) for v in part.split(",")] for part in text.split(":"))
    except ValueError:
        mean = std = []
    finite = all(math.isfinite(v) for v in [*mean, *std])
    if len(mean) != 3 or len(std) != 3 or not finite or min(std) <= 0:
        raise argparse.ArgumentTypeError(f"expects {_NORMALIZE_FORM}, got {text!r}")
    return mean, std


def _names(parser):
    parser.add_argument(
        "--distortions", nargs="+", default=list(DISTORTIONS), metavar="NAME",
        choices=[*DISTORTIONS, *ALIASES], help="distortions (default: all six)",
    )  # fmt: skip
    parser.add_argument(
        "--levels", nargs="+", type=int, default=list(LEVELS), choices=LEVELS, metavar="K",
        help="levels 1..5 (default: all)",
    )  # fmt: skip


def _init_distributed(device: str) -> int:
    """Join the process group when started by ``torchrun`` (``WORLD_SIZE`` > 1); the rank."""
    import os

    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return 0
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("nccl" if str(device).startswith("cuda") else "gloo")
    return dist.get_rank()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``laion-c`` console script."""
    parser, commands = console_parser("laion-c", __version__, __doc__)

    distort = commands.add_parser("distort", help="corrupt one image (official pipeline)")
    distort.add_argument("image", help="input image file")
    distort.add_argument("output", help="output file (format from the suffix)")
    distort.add_argument("--distortion", required=True, choices=[*DISTORTIONS, *ALIASES])
    distort.add_argument("--level", required=True, type=int, choices=LEVELS)
    distort.add_argument("--tiles", help="tile file from `laion-c tiles` (mosaic, stickers)")
    distort.add_argument(
        "--seed", type=_seed, default=0, help="seed of the random distortions (default: 0)"
    )

    tiles = commands.add_parser("tiles", help="build tile libraries from a folder of photos")
    tiles.add_argument("src", help="folder of photos (recursive)")
    tiles.add_argument("output", help="output .npz")
    tiles.add_argument(
        "--sizes", type=int, nargs="+", default=[4, 6, 8, 16, 28],
        help="tile sides in px (default: 4 6 8 16 28, the mosaic levels; 16 = stickers)",
    )  # fmt: skip
    tiles.add_argument(
        "--crops-per-image", type=int, default=0,
        help="seeded random crops per photo on top of the whole photo (default: 0)",
    )  # fmt: skip
    tiles.add_argument("--seed", type=_seed, default=0, help="seed of the crops (default: 0)")

    build = commands.add_parser("build", help="write a corrupted copy of an image folder")
    build.add_argument("src", help="folder of source images (sub-folders are mirrored)")
    build.add_argument("out", help="output root")
    build.add_argument("--tiles", help="tile file from `laion-c tiles` (mosaic, stickers)")
    build.add_argument("--workers", type=int, default=1, help="processes (default: 1)")
    build.add_argument(
        "--seed", type=_seed, default=0, help="seed of the per-image seeds (default: 0)"
    )
    build.add_argument(
        "--shard", type=shard_spec, default=(0, 1), help="i/n: this task's share (default: 0/1)"
    )
    build.add_argument("--overwrite", action="store_true", help="rebuild with new parameters")
    _names(build)

    evaluate = commands.add_parser("eval", help="score a model on a LAION-C folder")
    evaluate.add_argument("root", help="<root>/<distortion>/intensity_level_<k>/<superclass>/*")
    evaluate.add_argument(
        "--model", default="efficientnet-lite0",
        help="efficientnet-lite0 or module:factory; a module in the working directory needs "
        "PYTHONPATH=. (default: efficientnet-lite0)",
    )  # fmt: skip
    evaluate.add_argument(
        "--normalize", required=True, type=_normalize,
        help="imagenet, none (official: raw [0, 1]) or m1,m2,m3:s1,s2,s3",
    )  # fmt: skip
    evaluate.add_argument(
        "--outputs", choices=OUTPUTS, default="logits",
        help="what the model returns (default: logits)",
    )  # fmt: skip
    evaluate.add_argument(
        "--batch-size", type=int, default=32, help="images per batch (default: 32)"
    )
    evaluate.add_argument(
        "--num-workers", type=int, default=0, help="DataLoader worker processes (default: 0)"
    )
    evaluate.add_argument("--device", default="cpu", help="torch device (default: cpu)")
    evaluate.add_argument("--csv", help="write the official CSV here")
    _names(evaluate)

    reproduce = add_reproduce_command(
        commands,
        description="Measure the paper's headline claim on real input; write the report "
        "as <out>/laion-c.md and .json.",
        full_help="10 seeds for the random distortions instead of 3",
    )
    reproduce.add_argument("--root", help="score a real LAION-C folder (Zenodo 14051887)")
    return parser


def main(argv=None) -> int:
    """Run the console script; returns the exit status (1 with a one-line message on bad input)."""
    args = build_parser().parse_args(argv)
    try:
        code = _run(args)
    except (ValueError, TypeError, RuntimeError, OSError, ImportError) as error:
        print(f"laion-c {args.command}: error: {_one_line(error)}", file=sys.stderr)
        code = 1
    torch = sys.modules.get("torch")
    if (
        torch is not None
        and torch.distributed.is_available()
        and torch.distributed.is_initialized()
    ):
        torch.distributed.destroy_process_group()  # a torchrun rank, all written
        end_process(code)  # gloo can abort the interpreter's teardown (icml25_core docs)
    return code


def _one_line(error: BaseException) -> str:
    """The error's message on one line. An error raised in a DataLoader worker carries the
    worker's traceback in its message; its last line is the original error."""
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(error).__name__


def _run(args) -> int:
    if args.command == "distort":
        from ._image import read_rgb
        from .functional import corrupt
        from .tiles import load_tiles

        tiles = load_tiles(args.tiles) if args.tiles else None
        image = read_rgb(args.image, "image")
        out = corrupt(image, args.distortion, args.level, rng=args.seed, tiles=tiles)
        out.save(args.output)
        print(f"wrote {args.output}")
    elif args.command == "tiles":
        from .tiles import TileLibrary, save_tiles

        libraries = {
            t: TileLibrary.from_folder(
                args.src, t, crops_per_image=args.crops_per_image, rng=args.seed
            )
            for t in args.sizes
        }
        path = save_tiles(libraries, args.output)
        print(f"wrote {path}: {len(libraries[args.sizes[0]])} tiles per size {args.sizes}")
    elif args.command == "build":
        from .build import build_dataset
        from .tiles import load_tiles

        stats = build_dataset(
            args.src, args.out, tiles=load_tiles(args.tiles) if args.tiles else None,
            distortions=args.distortions, levels=args.levels, seed=args.seed,
            workers=args.workers, shard=args.shard, overwrite=args.overwrite,
        )  # fmt: skip
        print(f"{stats['images']} images: {stats['written']} written, {stats['skipped']} kept")
    elif args.command == "eval":
        from pathlib import Path

        from .evaluate import evaluate
        from .models import load_model
        from .reference import compare_markdown

        if args.csv and not Path(args.csv).resolve().parent.is_dir():
            raise FileNotFoundError(f"--csv: the folder of {args.csv} does not exist")
        if args.csv and Path(args.csv).is_dir():
            raise IsADirectoryError(f"--csv: {args.csv} is a directory, not a file name")
        rank = _init_distributed(args.device)
        results = evaluate(
            load_model(args.model, "--model"), args.root, normalize=args.normalize,
            distortions=args.distortions, levels=args.levels, batch_size=args.batch_size,
            num_workers=args.num_workers, device=args.device, model_name=args.model,
            outputs=args.outputs,
        )  # fmt: skip
        if rank == 0:
            print(results.to_markdown())
            print()
            print(compare_markdown(results))
            if args.csv:
                results.to_csv(args.csv)
                print(f"wrote {args.csv}")
    elif args.command == "reproduce":
        from . import reproduce  # imported here so that `--help` stays fast

        markdown, _ = reproduce.main(args.out, full=args.full, root=args.root)
        print(f"wrote {markdown} (and .json)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
