"""LinearGaussianSampler (one d×d inverse) vs one RidgeCV per feature, residuals of all features.

Spec target: >= 20x at n = 2000, d = 200 (one process). Run: ``python benchmarks/bench_sampler.py``.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from permucate import LinearGaussianSampler
from sklearn.linear_model import Ridge, RidgeCV

from icml25_core import progress


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--d", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    cov = 0.5 * np.eye(args.d) + 0.5
    X = rng.multivariate_normal(np.zeros(args.d), cov, size=args.n)

    def ours():
        return LinearGaussianSampler(alpha=1.0).fit(X).residuals(X)

    def per_feature(model, desc):
        out = np.empty_like(X)
        for j in progress(range(args.d), desc=desc, unit="feature"):
            rest = np.delete(X, j, axis=1)
            out[:, j] = X[:, j] - model().fit(rest, X[:, j]).predict(rest)
        return out

    def timed(fn):
        best = np.inf
        for _ in range(args.repeats):
            start = time.perf_counter()
            result = fn()
            best = min(best, time.perf_counter() - start)
        return best, result

    t_ours, r_ours = timed(ours)
    t_cv, _ = timed(lambda: per_feature(lambda: RidgeCV(alphas=np.logspace(-3, 3, 10)), "RidgeCV"))
    t_ridge, r_ridge = timed(lambda: per_feature(lambda: Ridge(alpha=1.0), "Ridge"))
    print(f"# bench_sampler — n={args.n}, d={args.d}; {platform.machine()}, "
          f"Python {platform.python_version()}")  # fmt: skip
    print("| method | time (s) | ratio to ours |")
    print("| --- | --- | --- |")
    print(f"| LinearGaussianSampler(alpha=1) | {t_ours:.3f} | 1.0x |")
    print(f"| per-feature RidgeCV(logspace(-3, 3, 10)) | {t_cv:.3f} | {t_cv / t_ours:.1f}x |")
    print(f"| per-feature Ridge(alpha=1) | {t_ridge:.3f} | {t_ridge / t_ours:.1f}x |")
    print(
        f"\nmax |residual difference| vs per-feature Ridge(1): {np.abs(r_ours - r_ridge).max():.2e}"
    )


if __name__ == "__main__":
    main()
