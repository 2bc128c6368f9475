"""Console script of comemo-lvlm (CoMemo, ICML 2025).

comemo-lvlm positions IMAGE [--max-tiles 12] [--tile 448] [--layout exact|comemo_compat]
    [--heatmap OUT.png]    grid, token budget and RoPE-DHR ids of your image
comemo-lvlm reproduce [--out DIR] [--full]    the paper's position claims on real photos
"""

from __future__ import annotations

import argparse
from pathlib import Path

from icml25_core.cli import add_reproduce_command, console_parser, positive_int

from ._version import __version__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``comemo-lvlm`` console script."""
    parser, commands = console_parser("comemo-lvlm", __version__, __doc__)
    pos = commands.add_parser(
        "positions",
        help="tile an image and print its grid, token budget and RoPE-DHR position ids",
        description="InternVL dynamic tiling of IMAGE and the position ids CoMemo gives it.",
    )
    pos.add_argument("image", type=Path, help="an image file Pillow can open")
    pos.add_argument("--max-tiles", type=positive_int, default=12, help="max X*Y (default 12)")
    pos.add_argument("--tile", type=positive_int, default=448, help="tile side in px (default 448)")
    pos.add_argument("--T", type=positive_int, default=16, help="tokens per tile side (default 16)")
    pos.add_argument("--layout", choices=("exact", "comemo_compat"), default="exact")
    pos.add_argument(
        "--heatmap",
        type=Path,
        default=None,
        help="write a heat map PNG of the ids (needs the [plot] extra: matplotlib)",
    )
    add_reproduce_command(
        commands,
        description="Measure the paper's RoPE-DHR claims on scikit-image photos; write the "
        "report as <out>/comemo-lvlm.md and .json.",
    )
    return parser


def _positions(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from PIL import Image, UnidentifiedImageError

    from .positions import image_position_ids
    from .tiling import closest_grid

    if args.heatmap is not None:
        try:
            import matplotlib
        except ImportError:
            parser.error(
                "argument --heatmap: needs matplotlib; install it with "
                "pip install 'comemo-lvlm[plot]' (or drop --heatmap)"
            )
    try:
        with Image.open(args.image) as img:
            size = img.size
    except (FileNotFoundError, IsADirectoryError, UnidentifiedImageError) as exc:
        parser.error(f"argument image: cannot open {args.image}: {exc}")
    grid = closest_grid(*size, tile=args.tile, max_num=args.max_tiles)
    T = args.T
    ids = image_position_ids(grid, 0, T=T, layout=args.layout).numpy()
    n_tok = ids.size
    print(f"image {args.image.name}: {size[0]}x{size[1]} px")
    print(
        f"grid: {grid.cols} cols x {grid.rows} rows = {grid.n_tiles} tiles"
        f"{' + thumbnail' if grid.n_tiles > 1 else ''}"
    )
    print(f"image tokens: {n_tok} (context path and memory path)")
    print(f"position ids used: RoPE-DHR {len(set(ids.tolist()))}, plain RoPE {n_tok}")
    print(f"text after </img> shifted down by {n_tok - T * T} positions ({args.layout} layout)")
    if args.heatmap is not None:
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np

        X, Y = grid.cols, grid.rows
        canvas = np.zeros((Y * T, X * T))
        tiles = (
            ids[: grid.n_tiles * T * T].reshape(-1, T, T)
            if grid.n_tiles > 1
            else ids.reshape(1, T, T)
        )
        for t in range(grid.n_tiles):
            if args.layout == "exact":
                i, j = t % X, t // X
            else:  # column-major sequence order of the official code
                i, j = t // Y, t % Y
            canvas[j * T : (j + 1) * T, i * T : (i + 1) * T] = tiles[t]
        fig, ax = plt.subplots(figsize=(4 + X, 1 + Y * 1.2))
        im = ax.imshow(canvas, cmap="viridis")
        ax.set_title(f"RoPE-DHR ids, {X}x{Y} tiles ({args.layout})")
        fig.colorbar(im, ax=ax)
        fig.savefig(args.heatmap, dpi=100)
        plt.close(fig)
        print(f"wrote {args.heatmap}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "positions":
        return _positions(args, parser)
    if args.command == "reproduce":
        from . import reproduce  # imported here so that `--help` stays fast

        markdown, _ = reproduce.main(args.out, full=args.full)
        print(f"wrote {markdown} (and .json)")
    return 0
