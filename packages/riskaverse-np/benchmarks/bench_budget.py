"""Gradient evaluations and wall time for mirror prox, ERM and top-k CVaR to reach ERM's final
test CVaR_0.7 (spec Sec. 6; target ratio MP/ERM <= 1). GP mixture, N = 256, CNP-64, one seed,
budget 20 000 per method, test CVaR measured every 500 evaluations on 1 000 test tasks.

    python benchmarks/bench_budget.py          # or: nox -s bench -- riskaverse-np
"""

import time

from riskaverse_np import CNP, RiskAverseTrainer, gp_pool

BUDGET, EVERY = 20_000, 500


def curve(method, train, test):
    trainer = RiskAverseTrainer(CNP(1, 1, hidden=64), train, 0.7, method, BUDGET, seed=0,
                                progress=False)  # fmt: skip
    points, spent = [], 0.0
    while trainer.step < trainer.total_steps:
        target = trainer.grad_evals + EVERY
        start = time.perf_counter()
        while trainer.step < trainer.total_steps and trainer.grad_evals < target:
            trainer.fit(max_steps=1)
        spent += time.perf_counter() - start
        points.append((trainer.grad_evals, spent, trainer.evaluate(test)["cvar"]))
    return points


def main():
    train, test = gp_pool(256, seed=0), gp_pool(1000, seed=1000)
    curves = {m: curve(m, train, test) for m in ("erm", "mirror_prox", "topk_cvar")}
    goal = curves["erm"][-1][2]
    erm_evals = next(e for e, _, c in curves["erm"] if c <= goal)
    print(f"ERM's final test CVaR_0.7: {goal:.3f} nats (budget {BUDGET})")
    print(
        "| method | final CVaR_0.7 | evals to reach ERM's final | wall s to reach | ratio to ERM |"
    )
    print("| --- | --- | --- | --- | --- |")
    for m, pts in curves.items():
        hit = next(((e, s) for e, s, c in pts if c <= goal), None)
        if hit is None:
            ratio = BUDGET / erm_evals
            print(f"| {m} | {pts[-1][2]:.3f} | not reached in {BUDGET} | — | > {ratio:.2f} |")
        else:
            print(
                f"| {m} | {pts[-1][2]:.3f} | {hit[0]} | {hit[1]:.1f} | {hit[0] / erm_evals:.2f} |"
            )
    print(
        "curves (evals, CVaR):", {m: [(e, round(c, 3)) for e, _, c in p] for m, p in curves.items()}
    )


if __name__ == "__main__":
    main()
