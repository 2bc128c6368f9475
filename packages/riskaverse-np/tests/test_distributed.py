"""Scale-out: data parallelism over a 2-device jax.sharding mesh on CPU, in a subprocess (the
device count is fixed when JAX starts), against the same run on one device."""

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import jax, numpy as np
    assert len(jax.devices()) == 2, jax.devices()
    from riskaverse_np import CNP, MirrorProxCVaR, data_mesh, gp_pool
    pool = gp_pool(20, n_points=10, context=(2, 5), seed=0)  # N = 20: the snapshot is split
    runs = {}
    for name, mesh in (("one", None), ("two", data_mesh(2))):
        opt = MirrorProxCVaR(CNP(1, 1, hidden=8), 20, 0.7, tasks_per_step=5, inner_steps=2,
                             total_steps=4, mesh=mesh, theta_vr=True, lr=1e-2)
        for _ in range(4):
            opt.step(pool.loss_fn())
        runs[name] = opt
    one, two = runs["one"], runs["two"]
    np.testing.assert_allclose(one.p, two.p, rtol=1e-5, atol=1e-8)
    for a, b in zip(jax.tree_util.tree_leaves(one.params), jax.tree_util.tree_leaves(two.params)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert one.grad_evals == two.grad_evals
    # the batch really is split: a sharded index array lives on both devices
    idx, = two._shard(np.arange(6, dtype=np.int32))
    assert len(idx.sharding.device_set) == 2
    print("OK")
    """
)


def test_two_device_mesh_matches_one_device():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    env["JAX_PLATFORMS"] = "cpu"
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("OK")
