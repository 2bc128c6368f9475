"""Console script of finola ("Exploring Invariance in Images through One-way Wave Equations",
Chen et al., ICML 2025).

    finola train --images skimage|opencv|sklearn|DIR [--patch 32 --channels 64 --grid 8]
                 [--steps 2000] --out ae.pt        (under torchrun: data-parallel, --distributed)
    finola analyze ae.pt                           cond(A), cond(B), cond(V), speeds of AB⁻¹
    finola reconstruct ae.pt in.png out.png        tile by tile; prints the PSNR
    finola reproduce [--out reports] [--full]      the headline claim on real photos
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

from icml25_core.cli import add_reproduce_command, console_parser

from ._version import __version__

MODEL_FORMAT = "finola-autoencoder-v1"


def build_parser():
    """The argument parser of the ``finola`` console script."""
    from .models import MAP_MAKERS

    parser, commands = console_parser("finola", __version__, __doc__)
    defaults = argparse.ArgumentDefaultsHelpFormatter
    train = commands.add_parser("train", help="train an autoencoder on photos; write --out",
                                formatter_class=defaults)  # fmt: skip
    train.add_argument("--images", default="skimage",
                       help="skimage, opencv (Debian opencv-doc), sklearn or a folder")  # fmt: skip
    train.add_argument("--model", default="finola", choices=MAP_MAKERS, help="map maker")
    train.add_argument("--patch", type=int, default=32, help="crop side (pixels)")
    train.add_argument("--channels", type=int, default=64, help="C, the bottleneck")
    train.add_argument("--grid", type=int, default=8, help="the map is grid x grid")
    train.add_argument("--patches", type=int, default=8192, help="training crops sampled")
    train.add_argument("--steps", type=int, default=2000, help="AdamW steps")
    train.add_argument("--batch-size", type=int, default=16, help="crops per step (per rank)")
    train.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate")
    train.add_argument("--seed", type=int, default=0, help="seed of crops, init and batches")
    train.add_argument("--checkpoint-every", type=int, default=200,
                       help="steps between checkpoints (<out>.train; a rerun resumes)")  # fmt: skip
    train.add_argument("--distributed", default="ddp", choices=("ddp", "fsdp"),
                       help="data parallelism when started by torchrun")  # fmt: skip
    train.add_argument("--out", required=True, help="the trained model file")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    analyze = commands.add_parser("analyze", help="A, B of a trained model as wave equations")
    analyze.add_argument("model", help="a file written by `finola train`")
    recon = commands.add_parser("reconstruct", help="reconstruct a photo tile by tile")
    recon.add_argument("model", help="a file written by `finola train`")
    recon.add_argument("image", help="input photo (png, jpg)")
    recon.add_argument("output", help="the reconstruction (png)")
    add_reproduce_command(
        commands,
        description="Train FINOLA and the broadcast baseline on 32x32 crops of real photos "
        "(scikit-image + Debian opencv-doc); write <out>/finola.md, .json and a plot.",
        full_help="add the reshape and positional-embedding baselines and 3 seeds",
    )
    return parser


def train(args) -> str:
    """The ``train`` command: crops, model, ``fit`` (resumable, data-parallel under torchrun);
    rank 0 writes the model file and returns the summary line (other ranks: "")."""
    import torch

    from .data import load_images, sample_patches
    from .distributed import setup, wrap
    from .models import build_autoencoder
    from .train import fit

    out = Path(args.out)
    if out.is_dir() or not out.resolve().parent.is_dir():
        raise ValueError(f"`--out` {args.out} must be a file in an existing folder")
    job = setup()
    config = {"kind": args.model, "channels": args.channels, "grid": args.grid,
              "patch": args.patch}  # fmt: skip
    torch.manual_seed(args.seed)
    model = build_autoencoder(**config)
    try:
        images = load_images(args.images)
    except (ValueError, OSError) as error:
        raise ValueError(f"`--images` {args.images}: {error}") from None
    patches = sample_patches(images, args.patches, args.patch, seed=args.seed)
    net = wrap(model, args.distributed, job)
    history = fit(net, patches, args.steps, batch_size=args.batch_size, lr=args.lr,
                  seed=args.seed, checkpoint=f"{out}.train",
                  checkpoint_every=args.checkpoint_every,
                  progress=job.is_main and not args.quiet)  # fmt: skip
    if job.world_size > 1:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        state = get_model_state_dict(net, options=StateDictOptions(full_state_dict=True,
                                                                   cpu_offload=True))  # fmt: skip
    else:
        state = model.state_dict()
    if not job.is_main:
        return ""
    torch.save({"format": MODEL_FORMAT, "config": config, "model": state}, out)
    resumed = f" (resumed at step {history['resumed_from']})" if history["resumed_from"] else ""
    return f"wrote {out}: {args.model}, final train MSE {history['loss'][-1]:.4g}{resumed}"


def load_model(path):
    """The autoencoder of a ``finola train`` file, in eval mode, and its config (kind,
    channels, grid, patch).

    Raises
    ------
    ValueError
        If `path` cannot be read or is not such a file.
    """

    from .models import build_autoencoder

    saved = _read(path)
    if not isinstance(saved, dict) or saved.get("format") != MODEL_FORMAT:
        raise ValueError(f"`model` {path} is not a file written by `finola train`")
    model = build_autoencoder(**saved["config"])
    model.load_state_dict(saved["model"])
    return model.eval(), saved["config"]


def _read(path) -> dict:
    import torch

    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, EOFError, pickle.UnpicklingError) as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ValueError(f"`model` {path}: not a finola model file ({first[:100]})") from None
    if not isinstance(saved, dict):
        raise ValueError(f"`model` {path} is not a finola model file")
    return saved


def step_matrices(path):
    """A and B of the FINOLA in a ``finola train`` file or a ``fit`` checkpoint (A = diag(λ) B
    for ``parametrization="wave"``).

    Raises
    ------
    ValueError
        If `path` holds neither, or a baseline without A, B.
    """
    saved = _read(path)
    state = saved.get("model")
    if not isinstance(state, dict) or "finola.B" not in state:
        raise ValueError(
            f"`model` {path} holds no FINOLA (no finola.A, finola.B: a baseline, or not a file "
            "of `finola train` or `fit(checkpoint=...)`)"
        )
    B = state["finola.B"]
    A = state["finola.speeds"][:, None] * B if "finola.speeds" in state else state["finola.A"]
    return A, B


def analyze(path) -> str:
    """The ``analyze`` command's text: conditioning and speeds of a trained FINOLA (from a
    ``finola train`` file or a ``fit`` checkpoint)."""
    from .analysis import wave_analysis

    waves = wave_analysis(*step_matrices(path))
    real = int(waves.real_speeds.sum())
    lines = [
        f"C = {waves.channels}: cond(A) {waves.cond_A:.3g}, cond(B) {waves.cond_B:.3g}, "
        f"cond(V) {waves.cond_V:.3g}, ‖VΛV⁻¹ − AB⁻¹‖/‖AB⁻¹‖ {waves.diag_rel_err:.2e}",
        f"speeds (eigenvalues of AB⁻¹): {real} real, {waves.channels - real} complex; largest |λ|:",
    ]
    order = sorted(range(waves.channels), key=lambda k: -abs(waves.speeds[k]))[:8]
    lines += [f"  {waves.speeds[k]:.4g}" for k in order]
    return "\n".join(lines)


def reconstruct(path, image, output) -> str:
    """The ``reconstruct`` command: the photo cut into patch-size tiles (cropped to a multiple
    of the patch), each reconstructed, stitched and saved; returns the PSNR line."""
    import numpy as np
    import torch

    from .data import read_image
    from .metrics import psnr

    model, config = load_model(path)
    patch = config["patch"]
    if not Path(image).is_file():
        raise ValueError(f"`image` {image} is not a file")
    x = read_image(image)
    H, W = (x.shape[1] // patch) * patch, (x.shape[2] // patch) * patch
    if H == 0 or W == 0:
        raise ValueError(f"`image` {image} is smaller than the model's {patch}x{patch} patch")
    cropped = "" if tuple(x.shape[1:]) == (H, W) else f", cropped to {W}x{H} (the patch grid)"
    x = x[:, :H, :W]
    tiles = x.unfold(1, patch, patch).unfold(2, patch, patch)  # (3, H/p, W/p, p, p)
    rows, cols = tiles.shape[1:3]
    batch = tiles.permute(1, 2, 0, 3, 4).reshape(-1, 3, patch, patch)
    with torch.no_grad():
        out = torch.cat([model(batch[i : i + 256]) for i in range(0, len(batch), 256)])
    out = out.clamp(0, 1).reshape(rows, cols, 3, patch, patch).permute(2, 0, 3, 1, 4)
    out = out.reshape(3, H, W)
    from PIL import Image  # the [images] extra, as read_image

    pixels = (out.permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)
    Image.fromarray(pixels).save(output)
    return f"wrote {output}: {rows}x{cols} tiles{cropped}, PSNR {psnr(out[None], x[None]):.2f} dB"


def main(argv=None) -> int:
    """Run the console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "reproduce":
        from . import reproduce  # imported here so that `--help` stays fast

        markdown, _ = reproduce.main(args.out, full=args.full)
        print(f"wrote {markdown} (and .json)")
        return 0
    commands = {
        "train": lambda: train(args),
        "analyze": lambda: analyze(args.model),
        "reconstruct": lambda: reconstruct(args.model, args.image, args.output),
    }
    try:
        text = commands[args.command]()
    except (ValueError, TypeError, OSError, ImportError) as error:
        print(f"finola {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        where = (
            f"; rerun the same command to resume from {args.out}.train"
            if args.command == "train"
            else ""
        )
        print(f"finola {args.command}: interrupted{where}", file=sys.stderr)
        return 130
    if text:
        print(text)
    return 0
