"""``fpt-snn``: the paper's reproduction, a convergence table and the layer benchmark.

fpt-snn reproduce [--full] [--seed N] [--out DIR]
fpt-snn convergence --T 32 --K-max 8 [--neurons 20000] [--tau 2] [--v-threshold 1] [--input F]
    [--reset soft|hard] [--v-reset 0] [--decay-input]
fpt-snn bench [--T 8 32 128] [--sizes 65536] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from icml25_core.cli import add_reproduce_command, console_parser, positive_int

from ._version import __version__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``fpt-snn`` console script."""
    parser, commands = console_parser(
        "fpt-snn",
        __version__,
        "Fixed-point parallel training of LIF spiking neurons (Feng et al., ICML 2025): "
        "reproduce the paper's claims, print convergence tables, benchmark the layer.",
    )
    rep = add_reproduce_command(
        commands,
        help="FPT vs BPTT on sklearn digits; writes <out>/fpt-snn.md, .json and a figure",
        full_help="5 seeds, K in {2,3,4}, T in {8,32,64,128}",
    )
    rep.add_argument("--seed", type=int, default=0, help="first seed (default: 0)")
    conv = commands.add_parser(
        "convergence",
        help="spike mismatch of Heaviside FPT vs exact LIF for K = 1..K-max",
        description="Spike mismatch of Heaviside FPT against the exact sequential LIF for K = "
        "1..K-max, on synthetic currents x ~ N(0.6, 0.8^2) (i.i.d. per step and neuron, LIF "
        "rate about 0.4 at the defaults), or on your own currents with --input, computed in "
        "the currents' dtype (float64 synthetic; a float32 file in float32, as "
        "fpt_snn.convergence_report on the same tensor). In floating point, membranes that "
        "land on the threshold within rounding (integer or quantised currents) can leave a "
        "nonzero mismatch even at K >= T.",
    )
    conv.add_argument(
        "--input",
        metavar="PATH",
        help="your own currents [T, ...] as a .npy file or a tensor saved with torch.save "
        "(.pt), computed in their dtype (half in float32); --T, --neurons and --seed are then "
        "ignored",
    )
    conv.add_argument("--T", type=positive_int, default=32, help="time steps (default: 32)")
    conv.add_argument("--K-max", type=positive_int, default=8, help="largest K (default: 8)")
    conv.add_argument("--neurons", type=positive_int, default=20_000, help="default: 20000")
    conv.add_argument(
        "--tau", type=float, default=2.0, help="membrane time constant in steps, > 1 (default: 2)"
    )
    conv.add_argument(
        "--v-threshold", type=float, default=1.0, help="firing threshold, > 0 (default: 1)"
    )
    conv.add_argument(
        "--convention",
        choices=("spikingjelly", "snntorch"),
        default="spikingjelly",
        help="reset convention (default: spikingjelly)",
    )
    conv.add_argument(
        "--reset", choices=("soft", "hard"), default="soft",
        help="subtract the threshold (soft, the official FPT neuron) or set to --v-reset (hard, "
        "spikingjelly's LIFNode default); default: soft",
    )  # fmt: skip
    conv.add_argument(
        "--v-reset", type=float, default=0.0,
        help="hard-reset potential, < --v-threshold (default: 0)",
    )  # fmt: skip
    conv.add_argument(
        "--decay-input", action="store_true",
        help="scale the input by 1/tau (spikingjelly's decay_input=True)",
    )  # fmt: skip
    conv.add_argument("--seed", type=int, default=0, help="default: 0")
    bench = commands.add_parser(
        "bench",
        help="one layer fwd+bwd: FPT vs per-step loop",
        description="Forward + backward time of one LIF layer: FPT (fpt-dense, fpt-chunked, "
        "fpt-fused and fpt-auto, the kernel method='auto' picks) against an autograd per-step "
        "loop with the same sigmoid surrogate; median of interleaved repeats.",
    )
    bench.add_argument(
        "--T", type=positive_int, nargs="+", default=[8, 32, 128, 512],
        help="time steps, one run each (default: 8 32 128 512)",
    )  # fmt: skip
    bench.add_argument(
        "--sizes", type=positive_int, nargs="+", default=[2**16, 2**20],
        help="total elements N*T per input (N = max(1, size // T) neurons; default: 65536 1048576)",
    )  # fmt: skip
    bench.add_argument(
        "--repeats", type=positive_int, default=5, help="interleaved repeats (default: 5)"
    )
    return parser


def _convergence(args):
    import torch

    from .diagnostics import convergence_report

    if args.input is not None:
        x = _load_currents(args.input)
        source = f"x from {args.input}, shape {tuple(x.shape)}"
    else:
        g = torch.Generator().manual_seed(args.seed)
        x = torch.randn(args.T, args.neurons, generator=g, dtype=torch.float64) * 0.8 + 0.6
        source = f"x ~ N(0.6, 0.8^2), T={args.T}, {args.neurons} neurons"
    variant = {"reset": args.reset, "v_reset": args.v_reset, "decay_input": args.decay_input}
    try:
        rep = convergence_report(
            x, args.K_max, tau=args.tau, v_threshold=args.v_threshold,
            convention=args.convention, **variant,
        )  # fmt: skip
    except (TypeError, ValueError) as error:
        raise SystemExit(f"fpt-snn convergence: {error}") from error
    extra = f", reset={args.reset}" + (f", v_reset={args.v_reset}" if args.reset == "hard" else "")
    extra += ", decay_input" if args.decay_input else ""
    print(
        f"{source}, {str(x.dtype).removeprefix('torch.')}, tau={args.tau}, "
        f"v_threshold={args.v_threshold}{extra}, LIF rate {rep.rate:.3f}"
    )
    print("| K | mismatch % | first wrong step |\n| --- | --- | --- |")
    for K, mismatch, first in rep.as_rows():
        print(f"| {K} | {100 * mismatch:.3f} | {first if first is not None else '-'} |")


def _load_currents(path):
    """A float tensor from a .npy file or a torch.save'd tensor; exits naming --input."""
    import numpy as np
    import torch

    from ._validation import check_input

    file = Path(path)
    if not file.is_file():
        raise SystemExit(f"fpt-snn convergence: --input {path!r} is not a file")
    try:
        if file.suffix == ".npy":
            data = torch.from_numpy(np.load(file, allow_pickle=False))
        else:
            data = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as error:  # any unreadable file becomes one clean exit
        raise SystemExit(
            f"fpt-snn convergence: --input {path!r} could not be read as a .npy array or a "
            f"torch.save'd tensor ({_short_error(error)})"
        ) from error
    if not isinstance(data, torch.Tensor) or not data.is_floating_point():
        kind = f"dtype {data.dtype}" if isinstance(data, torch.Tensor) else type(data).__name__
        raise SystemExit(
            f"fpt-snn convergence: --input {path!r} must hold one float tensor [T, ...], got {kind}"
        )
    try:
        check_input(data, "--input")
    except ValueError as error:
        raise SystemExit(f"fpt-snn convergence: {error} (file {path!r})") from error
    # The file's own precision, as the Python API computes it: converting to float64 here
    # would hide float32 threshold ties that convergence_report shows on the same tensor.
    return data


def _short_error(error: Exception) -> str:
    """One line of a reader's error: torch.load's weights-only text is a page of advice."""
    text = " ".join(str(error).split())
    marker = "WeightsUnpickler error:"
    if marker in text:  # torch.load(weights_only=True) refused the file
        text = "torch.load: " + text.split(marker, 1)[1].split("Check the documentation")[0].strip()
    text = text.strip()
    return f"{type(error).__name__}: {text[:200] + ('...' if len(text) > 200 else '')}"


def _bench(args):
    from .bench import benchmark, format_rows

    print(format_rows(benchmark(args.T, args.sizes, args.repeats)))


def main(argv=None) -> int:
    """Run the console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "reproduce":
        from . import reproduce  # imported here so that `--help` stays fast

        try:
            markdown, _ = reproduce.main(args.out, full=args.full, seed=args.seed)
        except ImportError as error:
            raise SystemExit(
                f"fpt-snn reproduce: {error}\nInstall its extra: pip install 'fpt-snn[reproduce]'"
            ) from error
        print(f"wrote {markdown} (and .json)")
    elif args.command == "convergence":
        _convergence(args)
    else:
        _bench(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
