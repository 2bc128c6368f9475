"""Causal bound: np.bincount counts + H batched (S·A, S) mat-vecs vs the plain-loop reference.

Spec §6 target: >= 100x on the lava grid (S = 81, A = 5, H = 20), one log of 100 000
transitions, in one process, against the official pattern: the loop structure of the official
``approx_opt_value_upper_bound`` (grid-cell tuple keys, ``np.ndindex`` over states, actions and
next states, a wall / lava / goal check per next state, sweeps until the largest change is below
1e-3), re-expressed below. Also timed: the lean loop reference ``causal_pbrs.reference``
(the executable spec the tests compare with, all modes).
Scale (issue 31): Taxi-v4 (S = 500, A = 6) at H = 200, where dense (H, S, A, S) counts would
take 2.4 GB: time and peak traced memory of counting a log and bounding, plug-in and δ-bound,
and of the bound from the exact observational distribution.
Run: ``python benchmarks/bench_bound.py``.
"""

from __future__ import annotations

import argparse
import platform
import time
import tracemalloc

import numpy as np
from causal_pbrs import ConfoundedToyText, WindyGrid, causal_upper_bound, expert, random_policy
from causal_pbrs.reference import naive_causal_upper_bound


def best_of(fn, repeats):
    best, out = np.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def official_pattern(env, data, reward_max, horizon, eps=1e-3):
    """The official loop structure (stationary, skip shortcuts), on (row, col) cell tuples."""
    from collections import defaultdict

    shape, A, b = env.shape, env.n_actions, reward_max

    def cell(s):
        return divmod(int(s), shape[1])

    def blocked(pos):  # the official isinstance(grid.get(*pos), (Wall, Lava, Goal))
        return env.layout[pos[0]][pos[1]] in "#LG"

    n_sa = {key: 0 for key in np.ndindex((*shape, A))}
    y_sum = {key: 0.0 for key in np.ndindex((*shape, A))}
    n_sas = defaultdict(int)
    n_s = {key: 0 for key in np.ndindex(shape)}
    support = set()
    for s, x, y, s_next in zip(data.s, data.x, data.y, data.s_next, strict=True):
        s, s_next = cell(s), cell(s_next)
        support.add(s)
        y_sum[(*s, x)] += y
        n_sa[(*s, x)] += 1
        n_sas[(*s, x, *s_next)] += 1
        n_s[s] += 1
    prop = {
        k: (n_sa[k] / n_s[k[:-1]] if n_s[k[:-1]] > 0 else 1 / A) for k in np.ndindex((*shape, A))
    }
    value, prev = np.zeros(shape), np.zeros(shape)
    q = np.zeros((*shape, A))
    offset2 = b
    while True:
        for state in np.ndindex(shape):
            if blocked(state) or n_s[state] == 0:
                continue
            for x in range(A):
                if n_sa[(*state, x)] == 0:
                    continue
                reward = y_sum[(*state, x)] / n_sa[(*state, x)]
                nxt = 0.0
                for sp in np.ndindex(shape):
                    if blocked(sp) or n_s[sp] == 0:
                        continue
                    p = n_sas[(*state, x, *sp)] / n_sa[(*state, x)]
                    if p > 0:
                        nxt += p * prev[sp]
                q[(*state, x)] = prop[(*state, x)] * (reward + nxt) + (1 - prop[(*state, x)]) * (
                    b + offset2
                )
            value[state] = max(q[(*state, i)] for i in range(A) if n_sa[(*state, i)] > 0)
        if np.all(np.abs(value - prev) < eps):
            return value.ravel()
        prev = value.copy()
        offset2 = min(b * (horizon - 1), max(prev[s] for s in support))


def traced(fn):
    """(seconds, peak traced MiB, result) of one call."""
    tracemalloc.start()
    start = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return seconds, peak, out


def taxi(transitions):
    env = ConfoundedToyText("Taxi-v4", horizon=200, is_rainy=True)
    H, S, A = env.horizon, env.n_states, env.n_actions
    policy = random_policy(env)
    data = env.collect(policy, transitions, rng=0)
    dense_gb = H * S * A * S * 8 / 1e9
    print(f"\n# Taxi-v4 (is_rainy) S={S}, A={A}, H={H}: dense (H, S, A, S) counts would be "
          f"{dense_gb:.1f} GB; random demonstrator")  # fmt: skip
    print("| input | bound | time (s) | peak traced memory (MiB) | stored transitions |")
    print("| --- | --- | --- | --- | --- |")
    cases = (
        (f"log of {len(data)} transitions", "plug-in",
         lambda: causal_upper_bound(data.counts(), reward_max=20.0), data.counts),
        (f"log of {len(data)} transitions", "δ = 0.05",
         lambda: causal_upper_bound(data.counts(), 20.0, delta=0.05, reward_min=-10.0),
         data.counts),
        ("exact distribution", "plug-in",
         lambda: causal_upper_bound(env.observational_distribution(policy), reward_max=20.0),
         lambda: env.observational_distribution(policy)),
    )  # fmt: skip
    for name, bound, fn, counts in cases:
        seconds, peak, _ = traced(fn)
        print(f"| {name} (counted in the call) | {bound} | {seconds:.3f} | {peak:.0f} | "
              f"{counts().n_sas.nnz} |")  # fmt: skip


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transitions", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--taxi-transitions", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    env = WindyGrid.preset("lava_extreme")
    data = env.collect(expert(env), args.transitions, rng=0)  # the official "good" log
    print(f"# bench_bound: lava_extreme S={env.n_states}, A={env.n_actions}, H={env.horizon}, "
          f"{len(data)} transitions; {platform.machine()}, Python {platform.python_version()}, "
          f"numpy {np.__version__}")  # fmt: skip
    t_off, official = best_of(lambda: official_pattern(env, data, 0.0, env.horizon), 1)
    t_ours, ours = best_of(
        lambda: causal_upper_bound(data, 0.0, stationary=True, unobserved="skip"), args.repeats
    )
    diff = float(np.abs(ours[0] - official).max())
    print("| baseline | mode | ours (s) | baseline (s) | ratio | max abs diff |")
    print("| --- | --- | --- | --- | --- | --- |")
    print(f"| official pattern | stationary, skip | {t_ours:.4f} | {t_off:.2f} | "
          f"{t_off / t_ours:.0f}x | {diff:.1e} |")  # fmt: skip
    for stationary, unobserved in ((False, "optimistic"), (True, "skip")):
        kwargs = {"stationary": stationary, "unobserved": unobserved}
        t_ours, ours = best_of(lambda kw=kwargs: causal_upper_bound(data, 0.0, **kw), args.repeats)
        t_ref, ref = best_of(lambda kw=kwargs: naive_causal_upper_bound(data, 0.0, **kw), 1)
        diff = float(np.abs(ours - ref).max())
        name = ("stationary" if stationary else "time-indexed") + f", {unobserved}"
        print(f"| loop reference | {name} | {t_ours:.4f} | {t_ref:.2f} | {t_ref / t_ours:.0f}x | "
              f"{diff:.1e} |")  # fmt: skip
    taxi(args.taxi_transitions)


if __name__ == "__main__":
    main()
