"""Q-UCB: B learners in lockstep with numpy (``regret.run_batch``) vs one learner at a time.

Spec §6 target: >= 10x at B = 15 (3 seeds x 5 methods) against the single-learner loop, with
identical regret curves. Two single-learner loops are timed: ``regret.run`` (this library's own
loop, exact regret bookkeeping included) and the loop a user writes with the public API
(``env.step`` + ``agent.act`` / ``agent.update``, no regret bookkeeping).
Run: ``python benchmarks/bench_qucb.py``.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from causal_pbrs import (
    QUCB,
    WindyGrid,
    anti_expert,
    causal_upper_bound,
    combine,
    expert,
    random_policy,
    regret,
)


def learners(env, K, n_seeds):
    S, A, H = env.n_states, env.n_actions, env.horizon
    demos = (expert(env), anti_expert(env), random_policy(env))
    phi = combine(*(causal_upper_bound(env.observational_distribution(d), 0.0) for d in demos))
    V, _ = env.optimal_values()
    potentials = {"vanilla": None, "causal": phi, "zero": np.zeros(S), "V*": V, "half": V / 2}
    agents, seeds = [], []
    for seed in range(n_seeds):
        for phi_m in potentials.values():
            agents.append(QUCB(S, A, H, K, potential=phi_m))
            seeds.append(seed)
    return agents, seeds


def user_loop(env, agent, K, seed):
    steps = 0
    for k in range(K):
        s, _ = env.reset(seed=seed * 100_000 + k)
        for h in range(env.horizon):
            a = agent.act(h, s)
            s_next, y, terminated, truncated, _ = env.step(a)
            agent.update(h, s, a, y, s_next, terminated)
            steps += 1
            if terminated or truncated:
                break
            s = s_next
    return steps


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[3, 9])
    args = parser.parse_args(argv)
    env = WindyGrid.preset("lava_extreme")
    K = args.episodes
    print(f"# bench_qucb: lava_extreme, K={K}; {platform.machine()}, "
          f"Python {platform.python_version()}, numpy {np.__version__}")  # fmt: skip
    print("| B | what is timed | single-learner loop (s) | lockstep run_batch (s) | ratio "
          "| identical results |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- |")
    for n_seeds in args.seeds:
        B = 5 * n_seeds
        for exact in (False, True):
            agents, seeds = learners(env, K, n_seeds)
            start = time.perf_counter()
            singles = [
                regret.run(env, a, K, seed=s, episode_regret=exact)
                for a, s in zip(agents, seeds, strict=True)
            ]
            t_single = time.perf_counter() - start
            agents_b, _ = learners(env, K, n_seeds)
            start = time.perf_counter()
            batch = regret.run_batch(env, agents_b, seeds, K, episode_regret=exact)
            t_batch = time.perf_counter() - start
            same = all(
                np.array_equal(a[k], b[k], equal_nan=True)
                for a, b in zip(singles, batch, strict=True)
                for k in a
            )
            what = "steps + gap regret + exact episode regret" if exact else "steps + gap regret"
            print(f"| {B} | {what} | {t_single:.2f} | {t_batch:.2f} | "
                  f"{t_single / t_batch:.1f}x | {same} |")  # fmt: skip
    agents_u, seeds = learners(env, K, 3)
    start = time.perf_counter()
    user_steps = sum(user_loop(env, a, K, s) for a, s in zip(agents_u, seeds, strict=True))
    t_user = time.perf_counter() - start
    agents_b, _ = learners(env, K, 3)
    start = time.perf_counter()
    regret.run_batch(env, agents_b, seeds, K, episode_regret=False)
    t_batch = time.perf_counter() - start
    print(f"\nB = 15, K = {K}: the loop a user writes (env.step + agent.act + agent.update, no "
          f"regret) takes {t_user:.2f} s ({t_user / user_steps * 1e6:.1f} µs per step, "
          f"{user_steps} steps); run_batch without episode regret {t_batch:.2f} s: "
          f"{t_user / t_batch:.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
