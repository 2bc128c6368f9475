"""PMD + RMD per pair: Python reference vs numpy batched vs native C++ (one process).

Spec target: native <= 2 us/pair (>= 300x the reference), numpy >= 30x. 1e5 pairs of peptides
of 6-20 residues (the reference is timed on a 2000-pair subset and reported per pair).
"""

import sys
import time

import numpy as np
from ranknovo.kernels import native_module
from ranknovo.mass import pack, pmd_batch, rmd_batch
from ranknovo.vocab import AMINO_ACIDS, Vocab


def timed(fn, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(n_pairs=100_000, n_ref=2000):
    vocab = Vocab.massivekb()
    rng = np.random.default_rng(0)
    res = list(AMINO_ACIDS)

    def peps(n):
        return [[res[i] for i in rng.integers(0, 20, rng.integers(6, 21))] for _ in range(n)]

    q, ql = pack(peps(n_pairs), vocab)
    t, tl = pack(peps(n_pairs), vocab)
    m = vocab.masses
    rows = []

    def both(backend, k):
        def run():
            pmd_batch(q[:k], ql[:k], t[:k], tl[:k], m, backend=backend)
            rmd_batch(q[:k], ql[:k], t[:k], tl[:k], m, backend=backend)

        return run

    ref = timed(both("reference", n_ref), repeat=1) / n_ref
    rows.append(("reference (Python)", ref))
    rows.append(("numpy batched", timed(both("numpy", n_pairs)) / n_pairs))
    if native_module() is not None:
        rows.append(
            (
                f"native C++ ({native_module().num_threads()} OpenMP threads)",
                timed(both("native", n_pairs)) / n_pairs,
            )
        )
    else:
        print("ranknovo_kernels not installed: native row skipped", file=sys.stderr)
    print(f"PMD+RMD, {n_pairs} pairs of 6-20 residues (reference on {n_ref})")
    print("| path | us/pair | speed-up vs reference |\n|---|---|---|")
    for name, sec in rows:
        print(f"| {name} | {sec * 1e6:.2f} | {ref / sec:.0f}x |")


if __name__ == "__main__":
    main()
