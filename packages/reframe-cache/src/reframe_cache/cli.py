"""Console script of reframe-cache, the library for "ReFrame: Layer Caching for Accelerated
Inference in Real-Time Rendering" (ICML 2025).

Commands:
  reproduce [--out DIR] [--full]   the paper's headline claim on real video (Debian opencv-doc);
                                   --full adds the mitsuba Cornell-box G-buffer claims
  bench --video PATH --policy P    cost and quality of a policy on your video (U-Net, x2 SR)
  flops --size HxW --widths a,b,c,d  exact FLOPs of the demo U-Net's full and hit paths
  streams --video A --video B ...  one wrapper per stream; run it under torchrun for one
                                   process per device
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from icml25_core.cli import add_reproduce_command, console_parser, positive_int

from ._version import __version__


def _size(text: str) -> tuple[int, int]:
    try:
        h, w = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected HxW such as 96x128, got {text!r}") from None
    if h < 8 or w < 8 or h % 8 or w % 8:
        raise argparse.ArgumentTypeError(f"H and W must be multiples of 8 (>= 8), got {text!r}")
    return h, w


def _widths(text: str) -> tuple[int, ...]:
    try:
        widths = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected 4 ints such as 16,32,64,128, got {text!r}"
        ) from None
    if len(widths) != 4 or min(widths) < 1:
        raise argparse.ArgumentTypeError(f"expected 4 positive ints, got {text!r}")
    return widths


def _policy(text: str) -> str:
    from .policies import parse_policy

    try:
        parse_policy(text)
    except (ValueError, TypeError) as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def _nonneg_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an int >= 0, got {text!r}")
    return value


def build_parser():
    """The argument parser of the ``reframe-cache`` console script."""
    parser, commands = console_parser("reframe-cache", __version__, __doc__)
    reproduce = add_reproduce_command(
        commands,
        full_help="also render a mitsuba Cornell box and test the G-buffer trigger (claims h, i; "
        "needs the [render] extra; the quick default covers claims a-g)",
        description="Measure the paper's headline claim on real input; write the report "
        "as <out>/reframe-cache.md and .json.",
    )
    del reproduce
    bench = commands.add_parser("bench", help="cost and quality of a policy on a video")
    bench.add_argument("--video", required=True, type=Path, help="a video OpenCV reads")
    bench.add_argument("--policy", type=_policy, default="delta-0.1", help="default delta-0.1")
    bench.add_argument("--frames", type=positive_int, default=60, help="frames (default 60)")
    bench.add_argument("--size", type=_size, default=(96, 128), help="HxW (default 96x128)")
    bench.add_argument("--widths", type=_widths, default=(16, 32, 64, 128))
    bench.add_argument(
        "--train-iters",
        type=_nonneg_int,
        default=0,
        help="x2 SR training steps on the clip first (0: random weights)",
    )
    bench.add_argument("--repeats", type=_nonneg_int, default=5, help="timing repeats (median)")
    bench.add_argument("--json", type=Path, help="also write the full report as JSON here")
    flops = commands.add_parser("flops", help="exact FLOPs of the demo U-Net's full/hit paths")
    flops.add_argument("--size", type=_size, default=(96, 128), help="HxW (default 96x128)")
    flops.add_argument("--widths", type=_widths, default=(16, 32, 64, 128))
    streams = commands.add_parser("streams", help="one wrapper per stream (torchrun: per rank)")
    streams.add_argument(
        "--video", required=True, type=Path, action="append", help="one stream per --video"
    )
    streams.add_argument("--policy", type=_policy, default="delta-0.1")
    streams.add_argument("--frames", type=positive_int, default=16)
    streams.add_argument("--size", type=_size, default=(32, 32))
    streams.add_argument("--widths", type=_widths, default=(4, 8, 8, 8))
    streams.add_argument("--out", type=Path, required=True, help="folder for stream<i>.pt")
    return parser


def flops_text(size, widths) -> str:
    """The ``flops`` command's output."""
    import torch

    from .bench import amdahl_bound
    from .models import UNet
    from .wrapper import ReFrame

    net = UNet(3, 3, widths=widths).eval()
    counts = ReFrame(net, "up1", policy="always").flops(torch.zeros(1, 3, *size))
    e = 1 - counts["hit"] / counts["full"]
    rows = [
        f"UNet(3, 3, widths={widths}) at {size[0]}x{size[1]}, cache 'up1'",
        f"F_full = {counts['full']} FLOPs",
        f"F_hit  = {counts['hit']} FLOPs",
        f"e = 1 - F_hit/F_full = {100 * e:.2f} %",
        f"Amdahl bound at N-4 (s = 0.75): {amdahl_bound(0.75, e):.2f}x",
    ]
    return "\n".join(rows)


def bench_text(args) -> str:
    """The ``bench`` command's output."""
    import torch

    from .bench import run
    from .data import degrade_x2, video_frames
    from .models import UNet
    from .train import train_sr

    gt = video_frames(args.video, args.size, n=args.frames)
    lr = degrade_x2(gt)
    torch.manual_seed(0)
    net = UNet(3, 3, widths=args.widths, residual=True)
    if args.train_iters:
        train_sr(net, lr, gt, args.train_iters, crop=min(48, *args.size))
    net.eval()
    r = run(net, lr, cache="up1", policy=args.policy, reference=gt, repeats=args.repeats)
    if args.json:
        args.json.write_text(json.dumps(r.to_dict(), indent=1, default=str))
    load = " (unreliable: machine loaded)" if r.machine["unreliable"] else ""
    speed = "-" if r.speedup is None else f"{r.speedup:.2f}x{load}"
    flip = "-" if r.flip_vs_baseline_mean is None else f"{r.flip_vs_baseline_mean:.4f}"
    return "\n".join(
        [
            f"{args.video.name}: {r.frames} frames {args.size[0]}x{args.size[1]}, "
            f"policy {args.policy}",
            f"skip rate {r.skip_rate:.3f}; e = {100 * r.e:.2f} %; "
            f"FLOP cut {100 * r.flops_reduction:.1f} %; "
            f"Amdahl bound {r.amdahl_bound:.2f}x; wall speed-up {speed}",
            f"sequence PSNR vs uncached {r.sequence_psnr_vs_baseline:.2f} dB; "
            f"FLIP vs uncached {flip}; PSNR vs ground truth {r.psnr_vs_reference:.2f} dB "
            f"(uncached {r.baseline_psnr_vs_reference:.2f})",
        ]
    )


def streams_text(args) -> str:
    """The ``streams`` command: run this rank's streams and save them to ``--out``."""
    import torch
    import torch.distributed as dist

    from .data import video_frames
    from .distributed import rank_and_world, run_streams
    from .models import UNet

    streams = [video_frames(v, args.size, n=args.frames) for v in args.video]
    started = False
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("gloo")
        started = True

    def make_model():
        torch.manual_seed(0)  # the same weights on every rank
        return UNet(3, 3, widths=args.widths)

    try:
        results = run_streams(make_model, streams, cache="up1", policy=args.policy)
        rank, world = rank_and_world()
        args.out.mkdir(parents=True, exist_ok=True)
        for i, r in results.items():
            if "outputs" in r:
                torch.save(r, args.out / f"stream{i}.pt")
        lines = [
            f"rank {rank}/{world}: stream {i} ({args.video[i].name}) skip rate "
            f"{r['skip_rate']:.2f} on rank {r['rank']}"
            for i, r in sorted(results.items())
        ]
    finally:
        if started:
            dist.destroy_process_group()
    return "\n".join(lines)


def main(argv=None) -> int:
    """Run the console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "reproduce":
        from . import reproduce  # imported here so that `--help` stays fast

        markdown, _ = reproduce.main(args.out, full=args.full)
        print(f"wrote {markdown} (and .json)")
        return 0
    commands = {
        "bench": lambda: bench_text(args),
        "flops": lambda: flops_text(args.size, args.widths),
        "streams": lambda: streams_text(args),
    }
    try:
        text = commands[args.command]()
    except (ValueError, TypeError, OSError, ImportError) as error:
        print(f"reframe-cache {args.command}: error: {error}", file=sys.stderr)
        return 2
    print(text)
    return 0
