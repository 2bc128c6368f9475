"""Plain-loop references of the vectorised code: the executable spec, tests and benchmarks.

Written to be read, not to be fast: dictionaries of counts filled one logged tuple at a time and
triple loops over (state, action, next state), the pattern of the official
``approx_opt_value_upper_bound``. Tests compare :func:`causal_pbrs.causal_upper_bound` with
:func:`naive_causal_upper_bound` on every mode; ``benchmarks/bench_bound.py`` times both.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

__all__ = ["naive_causal_upper_bound"]


def naive_causal_upper_bound(
    data, reward_max, *, stationary=False, unobserved="optimistic", tol=1e-3
) -> np.ndarray:
    """:func:`causal_pbrs.causal_upper_bound` with dictionaries and loops (same arguments)."""
    H, S, A, b = data.horizon, data.n_states, data.n_actions, float(reward_max)
    steps = [0] * len(data) if stationary else [int(h) for h in data.h]
    n_s: defaultdict[tuple, int] = defaultdict(int)
    n_sa: defaultdict[tuple, int] = defaultdict(int)
    y_sum: defaultdict[tuple, float] = defaultdict(float)
    n_sas: defaultdict[tuple, int] = defaultdict(int)
    entered_terminal, visited_any = set(), set()
    for h, s, x, y, s_next, done in zip(
        steps, data.s.tolist(), data.x.tolist(), data.y.tolist(), data.s_next.tolist(),
        data.done.tolist(), strict=True,
    ):  # fmt: skip
        n_s[h, s] += 1
        n_sa[h, s, x] += 1
        y_sum[h, s, x] += y
        visited_any.add(s)
        if done:
            entered_terminal.add(s_next)
        else:
            n_sas[h, s, x, s_next] += 1
    terminal = entered_terminal - visited_any
    skip = unobserved == "skip"

    def backup(i, v_next, first):
        visited_next = [
            sp for sp in range(S) if n_s[min(i + 1, H - 1) if not stationary else 0, sp] > 0
        ]
        if skip:
            if first or not visited_next:
                M = b
            else:
                M = min(b * (H - 1), max(v_next[sp] for sp in visited_next))
        else:
            M = max(max(v_next), 0.0)
        v = [0.0] * S
        for s in range(S):
            if s in terminal:
                continue
            if skip and n_s[i, s] == 0:
                continue
            best = -np.inf
            for x in range(A):
                if skip and n_sa[i, s, x] == 0:
                    continue
                p = n_sa[i, s, x] / n_s[i, s] if n_s[i, s] > 0 else 0.0
                r = y_sum[i, s, x] / n_sa[i, s, x] if n_sa[i, s, x] > 0 else 0.0
                cont = 0.0
                for sp in range(S):
                    if n_sa[i, s, x] > 0 and n_sas.get((i, s, x, sp), 0) > 0:
                        cont += n_sas[i, s, x, sp] / n_sa[i, s, x] * v_next[sp]
                best = max(best, p * (r + cont) + (1.0 - p) * (b + M))
            v[s] = best
        return v

    V = np.zeros((H + 1, S))
    if stationary:
        v = [0.0] * S
        for sweep in range(H):
            new = backup(0, v, sweep == 0)
            change = max(abs(new[s] - v[s]) for s in range(S))
            v = new
            if change < tol:
                break
        for h in range(H):
            V[h] = v
    else:
        for h in range(H - 1, -1, -1):
            V[h] = backup(h, list(V[h + 1]), h == H - 1)
    for h in range(H):
        cap = max(b, (H - h) * b)
        for s in range(S):
            V[h, s] = 0.0 if s in terminal else min(V[h, s], cap)
    return V
