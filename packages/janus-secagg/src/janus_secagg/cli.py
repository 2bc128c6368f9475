"""Console script of janus-secagg ("Janus-style" dual-server verifiable secure aggregation,
after Pu et al., ICML 2025).

    janus-secagg reproduce [--out DIR]       the headline properties on Fashion-MNIST
    janus-secagg bench [--dim N] [--clients 5,20,50,100,200] [--compare-secaggplus]
    janus-secagg serve-a --dim N --b-port P [--key-file F]   server A (prints LISTENING <port>)
    janus-secagg serve-b --dim N --a-pub HEX                 server B (prints LISTENING <port>)
"""

import argparse

from icml25_core.cli import add_reproduce_command, console_parser

from ._version import __version__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``janus-secagg`` console script."""
    from .net import add_server_arguments

    parser, commands = console_parser("janus-secagg", __version__, __doc__)
    add_reproduce_command(
        commands,
        help="measure the paper's headline properties on real input and write the report",
        description="Run Janus-style FedAvg on Fashion-MNIST with servers A and B as processes; "
        "write <out>/janus-secagg.md and .json and a plot.",
        full_help="more rounds and clients (slower than the default)",
    )
    bench = commands.add_parser("bench", help="per-client time and bytes against n")
    bench.add_argument("--dim", type=int, default=10_000, help="l (default 10000)")
    bench.add_argument("--clients", default="5,20,50,100,200", help="n values, comma-separated")
    bench.add_argument(
        "--compare-secaggplus", action="store_true", help="also time Flower SecAgg+ client work"
    )
    for role in ("a", "b"):
        serve = commands.add_parser(f"serve-{role}", help=f"run server {role.upper()} over TCP")
        add_server_arguments(serve, role)
    return parser


def main(argv=None) -> int:
    """Run the console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.command == "reproduce":
        from . import reproduce  # imported here so that `--help` stays fast

        markdown, _ = reproduce.main(args.out, full=args.full)
        print(f"wrote {markdown} (and .json)")
        return 0
    if args.command == "bench":
        from .bench import client_cost_table

        clients = [int(n) for n in args.clients.split(",")]
        print(client_cost_table(args.dim, clients, compare_secaggplus=args.compare_secaggplus))
        return 0
    from .net import serve

    return serve(args.command[-1], args)
