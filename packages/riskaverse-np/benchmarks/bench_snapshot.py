"""Full-pool snapshot as one batched masked pass vs a Python loop over the tasks (spec Sec. 6:
>= 10x at N = 512), per-task gradients by vmap(grad) vs a loop of grad, and the KL projection of
1e5 entries (<= 10 ms). One process; best of 3 repeats after a warm-up (compilation excluded).

    python benchmarks/bench_snapshot.py        # or: nox -s bench -- riskaverse-np
"""

import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from riskaverse_np import CNP, digits_pool, per_task_gradients, project_capped_simplex_kl


def best(fn, repeats=3):
    fn()  # warm-up: compilation
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    pool = digits_pool("train", seed=0)  # N = 512 real digit tasks, 64 targets each
    model = CNP(2, 1, hidden=64)
    graphdef, params = nnx.split(model)
    loss_fn = pool.loss_fn()
    key = jax.random.PRNGKey(0)

    @jax.jit
    def losses(params, idx):
        return loss_fn(nnx.merge(graphdef, params), idx, key)

    everything = jnp.arange(pool.n_tasks)
    singles = [jnp.arange(i, i + 1) for i in range(pool.n_tasks)]
    batched = best(lambda: losses(params, everything))
    looped = best(lambda: [losses(params, i) for i in singles][-1])  # jitted per-task calls
    eager = best(lambda: [model.task_loss(pool.batch(i)) for i in singles][-1], repeats=1)
    ref = np.concatenate([np.asarray(losses(params, i)) for i in singles])
    np.testing.assert_allclose(np.asarray(losses(params, everything)), ref, rtol=1e-4, atol=1e-5)

    idx = jnp.arange(64)
    grad_one = jax.jit(jax.grad(lambda p, i: loss_fn(nnx.merge(graphdef, p), i, key)[0]))
    vm = best(lambda: jax.tree_util.tree_leaves(per_task_gradients(model, loss_fn, idx, key))[0])
    lp = best(lambda: [jax.tree_util.tree_leaves(grad_one(params, idx[i : i + 1]))[0]
                       for i in range(64)][-1])  # fmt: skip

    q = np.random.default_rng(0).random(100_000)
    proj = best(lambda: project_capped_simplex_kl(q, 1 / 30_000), repeats=5)

    print("| bench | batched (ms) | loop over tasks (ms) | ratio | spec target |")
    print("| --- | --- | --- | --- | --- |")
    for name, loop in (("eager nnx loop", eager), ("loop of jitted calls", looped)):
        ratio = loop / batched
        print(
            f"| snapshot, N = 512 digit tasks, CNP-64, vs {name} | {batched * 1e3:.2f} | "
            f"{loop * 1e3:.1f} | {ratio:.1f}x | >= 10x: {'met' if ratio >= 10 else 'NOT met'} |"
        )
    print(
        f"| per-task gradients, 64 tasks, vmap(grad) | {vm * 1e3:.2f} | {lp * 1e3:.1f} | "
        f"{lp / vm:.0f}x | — |"
    )
    print(
        f"| KL projection, 1e5 entries | {proj * 1e3:.2f} | — | — | <= 10 ms: "
        f"{'met' if proj <= 0.01 else 'NOT met'} |"
    )


if __name__ == "__main__":
    main()
