"""Per-client cost of Janus-style secure aggregation against the number of clients n (spec §6),
with Flower's SecAgg+ client work (k = ⌈2 log2 n⌉ neighbours) and SecAgg (k = n − 1) rebuilt
from ``flwr.common.secure_aggregation`` in the same process.

    python benchmarks/bench_client_cost.py            # l = 10 000, n = 5, 20, 50, 100, 200
    python benchmarks/bench_client_cost.py --full     # l = 100 000
"""

import argparse
import platform

from janus_secagg.bench import client_cost_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="l = 100 000 instead of 10 000")
    parser.add_argument("--clients", default="5,20,50,100,200")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    dim = 100_000 if args.full else 10_000
    clients = [int(n) for n in args.clients.split(",")]
    print(f"# per-client cost, l = {dim}, {platform.machine()} ({platform.processor() or 'cpu'})")
    print(client_cost_table(dim, clients, compare_secaggplus=True, repeats=args.repeats))


if __name__ == "__main__":
    main()
