"""Console script of janus-secagg ("Janus-style" dual-server verifiable secure aggregation,
after Pu et al., ICML 2025).

    janus-secagg reproduce [--out DIR]       the headline properties on Fashion-MNIST
    janus-secagg bench [--dim N] [--clients 5,20,50,100,200] [--compare-secaggplus]
    janus-secagg keygen --role operator|a|b|client --out FILE    a key file; prints the public key
    janus-secagg pubkey FILE                  the public key of a key file, again
    janus-secagg enrol --operator-key F --a-pub HEX --b-pub HEX --clients-file F --dim N --out E
    janus-secagg serve-b --enrolment E --operator HEX --key-file F --tls-cert C --tls-key K
    janus-secagg serve-a --enrolment E --operator HEX --key-file F --b-port P --tls-cert ...
"""

import argparse
import os
import sys
from pathlib import Path

from icml25_core.cli import add_reproduce_command, console_parser

from ._version import __version__


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``janus-secagg`` console script."""
    from .serving import add_server_arguments

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
    keygen = commands.add_parser("keygen", help="make a key file and print its public key (hex)")
    keygen.add_argument("--role", required=True, choices=("operator", "a", "b", "client"))
    keygen.add_argument("--out", required=True, help="the key file (written mode 0600)")
    keygen.add_argument("--force", action="store_true", help="replace an existing key file")
    pubkey = commands.add_parser("pubkey", help="print the public key of a key file (hex)")
    pubkey.add_argument("key_file", help="a file written by `janus-secagg keygen`")
    enrol = commands.add_parser(
        "enrol", help="create and sign the enrolment file (the operator's job)"
    )
    enrol.add_argument("--operator-key", required=True, help="keygen --role operator's file")
    enrol.add_argument("--a-pub", required=True, help="server A's public key, hex (keygen)")
    enrol.add_argument("--b-pub", required=True, help="server B's public key, hex (keygen)")
    enrol.add_argument("--client", action="append", default=[], help="a client's key, hex")
    enrol.add_argument("--clients-file", help="clients' keys, hex, one per line (# comments)")
    enrol.add_argument("--a-cert", help="PEM certificate of A's TLS listener (pinned)")
    enrol.add_argument("--b-cert", help="PEM certificate of B's TLS listener (pinned)")
    enrol.add_argument("--out", required=True, help="the enrolment file to write")
    enrol.add_argument("--force", action="store_true", help="replace an existing --out file")
    enrol.add_argument("--dim", type=int, required=True, help="l, the update length")
    enrol.add_argument("--clip", type=float, default=8.0, help="C (default 8.0)")
    enrol.add_argument("--frac-bits", type=int, default=16, help="f (default 16)")
    enrol.add_argument("--min-clients", type=int, default=3, help="t (default 3)")
    enrol.add_argument("--max-total-weight", type=int, default=2**20, help="W_max (2**20)")
    for role in ("a", "b"):
        serve = commands.add_parser(f"serve-{role}", help=f"run server {role.upper()} over TCP")
        add_server_arguments(serve, role)
    return parser


def keygen(role: str, out: str, force: bool = False) -> str:
    """Write a new key file for `role`; return its public key as hex.

    Operator and client: a 32-byte Ed25519 seed, public = the verify key; a, b: ``ServerKeys``
    (b with its box key), public = ``ServerPublicKeys.to_bytes()``.

    Raises
    ------
    ValueError
        If `out` is empty or exists and `force` is false (a key is never replaced by
        accident), or `out` is something other than a key file of the same role (``--force``
        replaces only that).
    """
    from .keys import ClientKeys, ServerKeys

    if not out:
        raise ValueError("`--out` must name a file")
    if os.path.lexists(out) and not force:
        raise ValueError(f"`--out` {out} exists; pass --force to replace the key in it")
    header = f"janus-secagg key: {role}\n".encode()
    if os.path.isfile(out) and not Path(out).read_bytes().startswith(header):
        raise ValueError(f"`--out` {out} is not a {role} key file; --force replaces only that")
    if not Path(out).resolve().parent.is_dir():
        raise ValueError(f"`--out` {out}: its directory does not exist")
    if role in ("a", "b"):
        keys = ServerKeys.generate(box=role == "b")
        keys.save(out)
        return keys.public.to_bytes().hex()
    client = ClientKeys.generate()
    client.save(out, role)
    return client.public.to_bytes().hex()


def public_key(path) -> str:
    """The public key (hex) of a key file, as ``keygen`` printed it.

    Raises
    ------
    ValueError
        If `path` is not a janus-secagg key file.
    """
    from .keys import KEY_ROLES, ClientKeys, ServerKeys, read_secret

    role, _ = read_secret(path, (32, 64), tuple(KEY_ROLES), "key_file")
    if role in ("a", "b"):
        return ServerKeys.load(path, "key_file").public.to_bytes().hex()
    return ClientKeys.load(path, role, "key_file").public.to_bytes().hex()


def enrol(args: argparse.Namespace) -> str:
    """Sign the enrolment file of `args` (the ``enrol`` command); returns a summary line."""
    from .enrolment import Enrolment
    from .keys import ClientKeys, ClientPublicKey
    from .params import JanusParams, deployment_domain
    from .serving import parse_public_key, with_flags

    out = Path(args.out)
    if out.exists() and not args.force:
        raise ValueError(f"`--out` {args.out} exists; pass --force to replace it")
    inputs = [args.operator_key, args.clients_file, args.a_cert, args.b_cert]
    head = out.read_bytes()[:64] if out.is_file() else b""
    if out.exists() and (
        any(p is not None and out.resolve() == Path(p).resolve() for p in inputs)
        or head.startswith(b"janus-secagg key: ")
        or b"PRIVATE KEY" in head
        or head.startswith(b'{"config"')
    ):
        raise ValueError(
            f"`--out` {args.out} is an input of this command, a key or a server's state file; "
            "--force never replaces those"
        )
    if not out.resolve().parent.is_dir():
        raise ValueError(f"`--out` {args.out}: its directory does not exist")
    operator = ClientKeys.load(args.operator_key, "operator", "--operator-key").signing
    texts = [(text, "--client") for text in args.client]
    if args.clients_file:
        lines = _read_text(args.clients_file, "--clients-file").splitlines()
        texts += [(ln.split("#")[0].strip(), f"--clients-file {args.clients_file} line {k}")
                  for k, ln in enumerate(lines, 1) if ln.split("#")[0].strip()]  # fmt: skip
    clients = []
    for text, where in texts:
        try:
            clients.append(ClientPublicKey.from_bytes(bytes.fromhex(text)))
        except (ValueError, TypeError):
            raise ValueError(f"{where}: client key {text!r:.70} is not 32 bytes of hex") from None

    fields = ("dim", "clip", "frac_bits", "min_clients", "max_total_weight")
    params = with_flags(
        lambda: JanusParams(**{f: getattr(args, f) for f in fields}, domain=deployment_domain()),
        **{f: f"--{f.replace('_', '-')}" for f in fields},
    )
    certificates = {
        f"{role}_certificate": _read_text(path, f"--{role}-cert")
        for role, path in (("a", args.a_cert), ("b", args.b_cert))
        if path is not None
    }
    enrolment = Enrolment.create(
        operator, params, parse_public_key(args.a_pub, "--a-pub"),
        parse_public_key(args.b_pub, "--b-pub"), clients, **certificates,
    )  # fmt: skip
    enrolment.save(args.out)
    tls = ", ".join(
        f"{role} pinned" for role, pem in (("A", args.a_cert), ("B", args.b_cert)) if pem
    )
    return (
        f"wrote {args.out}: {len(clients)} clients, l = {params.dim}, t = {params.min_clients}, "
        f"TLS: {tls or 'none (plain TCP)'}; operator {bytes(operator.verify_key).hex()}"
    )


def _read_text(path, flag: str) -> str:
    try:
        return Path(path).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"`{flag}` {path}: cannot read it: {error}") from None


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
    if args.command in ("keygen", "pubkey", "enrol"):
        try:
            if args.command == "keygen":
                print(keygen(args.role, args.out, args.force))
            elif args.command == "pubkey":
                print(public_key(args.key_file))
            else:
                print(enrol(args))
        except (ValueError, TypeError, OSError) as error:
            print(f"janus-secagg {args.command}: error: {error}", file=sys.stderr)
            return 2
        return 0
    from .serving import serve

    return serve(args.command[-1], args)
