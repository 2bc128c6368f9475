"""``fpt-snn``: the paper's reproduction, a convergence table and the layer benchmark.

fpt-snn reproduce [--full] [--seed N] [--out DIR]
fpt-snn convergence --T 32 --K-max 8 [--neurons 20000] [--tau 2] [--convention ...]
fpt-snn bench [--T 8 32 128] [--sizes 65536] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys

from ._version import __version__


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``fpt-snn`` console script."""
    parser = argparse.ArgumentParser(
        prog="fpt-snn",
        description="Fixed-point parallel training of LIF spiking neurons (Feng et al., ICML "
        "2025): reproduce the paper's claims, print convergence tables, benchmark the layer.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    rep = commands.add_parser(
        "reproduce",
        help="FPT vs BPTT on sklearn digits; writes <out>/fpt-snn.md, .json and a figure",
    )
    rep.add_argument("--out", default="reports", help="report folder (default: reports)")
    rep.add_argument(
        "--full", action="store_true", help="5 seeds, K in {2,3,4}, T in {8,32,64,128}"
    )
    rep.add_argument("--seed", type=int, default=0, help="first seed (default: 0)")
    conv = commands.add_parser(
        "convergence", help="spike mismatch of Heaviside FPT vs exact LIF for K = 1..K-max"
    )
    conv.add_argument("--T", type=_positive_int, default=32, help="time steps (default: 32)")
    conv.add_argument("--K-max", type=_positive_int, default=8, help="largest K (default: 8)")
    conv.add_argument("--neurons", type=_positive_int, default=20_000, help="default: 20000")
    conv.add_argument("--tau", type=float, default=2.0, help="membrane tau (default: 2)")
    conv.add_argument("--convention", choices=("spikingjelly", "snntorch"), default="spikingjelly")
    conv.add_argument("--seed", type=int, default=0, help="default: 0")
    bench = commands.add_parser("bench", help="one layer fwd+bwd: FPT vs per-step loop")
    bench.add_argument("--T", type=_positive_int, nargs="+", default=[8, 32, 128, 512])
    bench.add_argument("--sizes", type=_positive_int, nargs="+", default=[2**16, 2**20])
    bench.add_argument("--repeats", type=_positive_int, default=5)
    return parser


def _convergence(args):
    import torch

    from .diagnostics import convergence_report

    g = torch.Generator().manual_seed(args.seed)
    x = torch.randn(args.T, args.neurons, generator=g, dtype=torch.float64) * 0.8 + 0.6
    try:
        rep = convergence_report(x, args.K_max, tau=args.tau, convention=args.convention)
    except (TypeError, ValueError) as error:
        raise SystemExit(f"fpt-snn convergence: {error}") from error
    print(f"x ~ N(0.6, 0.8^2), T={rep.T}, {args.neurons} neurons, LIF rate {rep.rate:.3f}")
    print("| K | mismatch % | first wrong step |\n| --- | --- | --- |")
    for K, mismatch, first in rep.as_rows():
        print(f"| {K} | {100 * mismatch:.3f} | {first if first is not None else '-'} |")


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
