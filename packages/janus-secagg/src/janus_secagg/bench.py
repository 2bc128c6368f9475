"""Per-client cost against the number of clients n (spec §6): Janus-style against the client
work of Flower's SecAgg (k = n) and SecAgg+ (k = ⌈2 log2 n⌉), rebuilt from
``flwr.common.secure_aggregation``; used by ``janus-secagg bench``, the reproduce and
``benchmarks/bench_client_cost.py``."""

import math
import os
import statistics
import time

import numpy as np

from .client import JanusClient
from .commitment import CommitmentKey
from .keys import ClientKeys, ServerKeys
from .params import JanusParams
from .server import ServerA, ServerB


def default_cache_dir() -> str:
    """``$XDG_CACHE_HOME/janus-secagg`` (else ``~/.cache/janus-secagg``): generator caches."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "janus-secagg")


def janus_client_cost(params: JanusParams, ck: CommitmentKey, n: int, repeats: int = 3, seed=0):
    """Time and bytes of one measured client in rounds with n clients (in-process servers).

    The other n − 1 clients run the full protocol with the update u = −C (all-zero codes, so
    their commitments are cheap to compute); the measured client uses a Gaussian update.

    Returns
    -------
    dict
        ``prepare_s``, ``finalize_s`` (medians over `repeats` rounds), ``time_s`` (their sum),
        ``up_bytes`` (ToA + ToB), ``down_bytes`` (AggA + AggB).
    """
    rng = np.random.default_rng(seed)
    ka, kb = ServerKeys.generate(), ServerKeys.generate(box=True)
    A, B = ServerA(params, ka), ServerB(params, kb, ka.public)
    clients = [
        JanusClient(params, ClientKeys.generate(), ka.public, kb.public, ck) for _ in range(n)
    ]
    for client in clients:
        A.register(client.keys.public)
        B.register(client.keys.public)
    filler = np.full(params.dim, -float(params.clip))
    prep, fin, up, down = [], [], 0, 0
    for round_id in range(1, repeats + 1):
        start = time.perf_counter()
        to_a, to_b = clients[0].prepare(rng.normal(size=params.dim), 100, round_id)
        prep.append(time.perf_counter() - start)
        msgs = [(to_a, to_b)] + [c.prepare(filler, 1, round_id) for c in clients[1:]]
        for m_a, m_b in msgs:
            A.receive(m_a)
            B.receive(m_b)
        agg_b = B.aggregate(A.participants(B.bindings))
        agg_a = A.aggregate(round_id)
        start = time.perf_counter()
        clients[0].finalize(agg_a, agg_b)
        fin.append(time.perf_counter() - start)
        up = len(to_a.to_bytes()) + len(to_b.to_bytes())
        down = len(agg_a.to_bytes()) + len(agg_b.to_bytes())
    prepare_s, finalize_s = statistics.median(prep), statistics.median(fin)
    return {
        "n": n,
        "prepare_s": prepare_s,
        "finalize_s": finalize_s,
        "time_s": prepare_s + finalize_s,
        "up_bytes": up,
        "down_bytes": down,
    }


def secaggplus_client_time(dim: int, k: int, repeats: int = 3) -> float:
    """Median seconds of one SecAgg(+) client's round work with k neighbours, rebuilt from
    ``flwr.common.secure_aggregation`` as ``secaggplus_mod`` does it (two key pairs, Shamir
    shares of the seed and key for k neighbours, k key agreements and encryptions, the own
    and k pairwise PRG masks over `dim` values). Neighbours' keys are made beforehand."""
    from flwr.common.secure_aggregation.crypto.shamir import create_shares
    from flwr.common.secure_aggregation.crypto.symmetric_encryption import (
        encrypt,
        generate_shared_key,
    )
    from flwr.common.secure_aggregation.quantization import quantize as flwr_quantize
    from flwr.common.secure_aggregation.secaggplus_utils import (
        pseudo_rand_gen,
        share_keys_plaintext_concat,
    )
    from flwr.supercore.primitives.asymmetric import generate_key_pairs

    neighbours = [generate_key_pairs()[1] for _ in range(k)]
    threshold = max(2, math.ceil(k / 2))
    update = [np.random.default_rng(0).normal(size=dim)]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        sk1, _ = generate_key_pairs()
        sk2, _ = generate_key_pairs()
        seed = os.urandom(32)
        b_shares = create_shares(seed, threshold, k + 1)
        sk_shares = create_shares(os.urandom(32), threshold, k + 1)
        for idx, pk in enumerate(neighbours):
            key = generate_shared_key(sk2, pk)
            encrypt(key, share_keys_plaintext_concat(0, idx + 1, b_shares[idx], sk_shares[idx]))
        vector = flwr_quantize(update, 8.0, 2**22)
        masked = vector[0] + pseudo_rand_gen(seed, 2**32, [(dim,)])[0]
        for pk in neighbours:
            key = generate_shared_key(sk1, pk)
            masked = masked + pseudo_rand_gen(key, 2**32, [(dim,)])[0]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def client_cost_table(dim: int, clients, compare_secaggplus: bool = False, repeats: int = 3) -> str:
    """A markdown table of per-client cost against n (``janus-secagg bench``)."""
    params = JanusParams(dim=dim)
    ck = CommitmentKey.derive(params, cache_dir=default_cache_dir())
    head = "| n | Janus time (s) | up (B) | down (B) |"
    rule = "| --- | --- | --- | --- |"
    if compare_secaggplus:
        head += " SecAgg+ k | SecAgg+ time (s) | SecAgg (k = n − 1) time (s) | Janus / SecAgg+ |"
        rule += " --- | --- | --- | --- |"
    rows = [head, rule]
    for n in clients:
        cost = janus_client_cost(params, ck, n, repeats)
        row = f"| {n} | {cost['time_s']:.3f} | {cost['up_bytes']} | {cost['down_bytes']} |"
        if compare_secaggplus:
            k = min(n - 1, math.ceil(2 * math.log2(n)))
            plus = secaggplus_client_time(dim, k, repeats)
            full = secaggplus_client_time(dim, n - 1, repeats)
            row += f" {k} | {plus:.3f} | {full:.3f} | {cost['time_s'] / plus:.2f} |"
        rows.append(row)
    return "\n".join(rows)
