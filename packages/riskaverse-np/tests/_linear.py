"""A convex test problem: N least-squares tasks, theta in R^d (a one-parameter nnx module)."""

import jax.numpy as jnp
import numpy as np
from flax import nnx


class Linear(nnx.Module):
    """theta in R^d as one nnx.Param."""

    def __init__(self, d: int, init=None):
        self.w = nnx.Param(jnp.zeros(d) if init is None else jnp.asarray(init, jnp.float32))


def least_squares_tasks(n_tasks=50, n_points=10, d=3, seed=0):
    """Heterogeneous tasks: y = A theta_tau + noise, theta_tau from two clusters (a rare one)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n_tasks, n_points, d))
    centre = np.where(rng.random(n_tasks) < 0.2, 2.0, -0.5)[:, None] * np.ones(d)
    theta = centre + 0.3 * rng.normal(size=(n_tasks, d))
    y = np.einsum("tnd,td->tn", a, theta) + 0.1 * rng.normal(size=(n_tasks, n_points))
    return a, y


def loss_fn_for(a, y):
    """loss_fn(model, idx, key) -> mean squared residual per task."""
    aj, yj = jnp.asarray(a, jnp.float32), jnp.asarray(y, jnp.float32)

    def loss_fn(model, idx, key):
        pred = jnp.einsum("bnd,d->bn", aj[idx], model.w[...])
        return jnp.mean((pred - yj[idx]) ** 2, axis=1)

    return loss_fn


def losses_np(a, y, theta):
    """Per-task losses in float64 numpy."""
    return np.mean((np.einsum("tnd,d->tn", a, theta) - y) ** 2, axis=1)
