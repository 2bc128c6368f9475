"""Commitment (multi-scalar multiplication) speed on BLS12-381 G1 (spec §6).

Times one Pedersen vector commitment of length l with py-arkworks-bls12381's MSM for three
scalar encodings: offset-binary codes (~41 bits, what Janus-style commits to), signed values
mod r (negatives become ~255-bit scalars) and uniform 255-bit scalars; against a naive loop of
single multiplications (arkworks) and the pure-Python library alternative py-ecc (measured on a
prefix and scaled per point).

    python benchmarks/bench_msm.py [--dim 12000] [--py-ecc-points 32]
"""

import argparse
import secrets
import statistics
import time

import numpy as np
from janus_secagg import CommitmentKey, JanusParams, PedersenBLS12381
from janus_secagg.params import GROUP_ORDER
from py_arkworks_bls12381 import G1Point, Scalar


def timed(fn, repeats=3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dim", type=int, default=12_000)
    parser.add_argument("--py-ecc-points", type=int, default=32)
    args = parser.parse_args()
    params = JanusParams(dim=args.dim)
    from janus_secagg.bench import default_cache_dir

    ck = CommitmentKey.derive(params, cache_dir=default_cache_dir())
    rng = np.random.default_rng(0)
    scheme = PedersenBLS12381()
    offset = rng.integers(0, 2**41, size=params.length, dtype=np.int64)
    signed = rng.integers(-(2**20), 2**20, size=params.length)
    points = list(ck.generators)
    offset_scalars = [Scalar(int(v)) for v in offset]
    signed_scalars = [Scalar(int(v) % GROUP_ORDER) for v in signed]
    wide = [Scalar(secrets.randbelow(GROUP_ORDER)) for _ in range(params.length)]

    def naive():
        acc = G1Point.identity()
        for p, s in zip(points, signed_scalars, strict=True):
            acc = acc + p * s
        return acc

    rows = {
        "offset 41-bit (Janus-style `commit`, incl. scalar conversion)": timed(
            lambda: scheme.commit(ck, offset, 1, 2)
        ),
        "offset 41-bit (raw MSM, scalars prebuilt)": timed(
            lambda: G1Point.multiexp_unchecked(points, offset_scalars)
        ),
        "signed values mod r (raw MSM, scalars prebuilt)": timed(
            lambda: G1Point.multiexp_unchecked(points, signed_scalars)
        ),
        "uniform 255-bit (raw MSM)": timed(lambda: G1Point.multiexp_unchecked(points, wide)),
        "naive loop (arkworks)": timed(naive, repeats=1),
    }
    try:
        from py_ecc.optimized_bls12_381 import G1, add, multiply

        m = args.py_ecc_points
        small = [multiply(G1, j + 2) for j in range(m)]

        def py_ecc_commit():
            acc = None
            for p, v in zip(small, offset[:m], strict=True):
                term = multiply(p, int(v))
                acc = term if acc is None else add(acc, term)

        rows["py-ecc loop (scaled)"] = timed(py_ecc_commit, repeats=1) * params.length / m
    except ImportError:
        print("py-ecc not installed: skipping the pure-Python alternative")
    base = rows["offset 41-bit (raw MSM, scalars prebuilt)"]
    print(f"# MSM of length l + 1 = {params.length}")
    print("| encoding / implementation | seconds | / offset 41-bit raw MSM |")
    print("| --- | --- | --- |")
    for name, seconds in rows.items():
        print(f"| {name} | {seconds:.3f} | {seconds / base:.1f}x |")


if __name__ == "__main__":
    main()
