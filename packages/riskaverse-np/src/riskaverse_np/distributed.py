r"""Scale-out: data parallelism over a ``jax.sharding`` device mesh (spec Sec. 7, the JAX way,
DECISIONS 12).

Each inner step's b tasks (and the snapshot's N tasks) are split over the mesh's ``"data"`` axis
while parameters and the task weights p are replicated; XLA all-reduces the gradients and
all-gathers the per-task losses, so every device holds the same $\tilde\ell$ and p. Task ids
come from ``numpy.random.default_rng((seed, step, phase))`` on every process alike, and p, the
snapshot and the step state sit in :meth:`~riskaverse_np.MirrorProxCVaR.state_dict`, so a run
resumes on any number of devices.

On one machine without accelerators, ``XLA_FLAGS=--xla_force_host_platform_device_count=2``
(set before ``import jax``) gives two CPU devices (how the tests run it). On several hosts, call
``jax.distributed.initialize(coordinator_address, num_processes, process_id)`` first on every
process; ``jax.devices()`` then lists all hosts' devices and :func:`data_mesh` spans them.
"""

from __future__ import annotations

import jax
import numpy as np

from icml25_core import check_scalar

__all__ = ["data_mesh"]


def data_mesh(n_devices: int | None = None, axis: str = "data"):
    """A one-axis ``jax.sharding.Mesh`` over the first `n_devices` of ``jax.devices()``.

    Parameters
    ----------
    n_devices : int >= 1, optional
        Default: all devices (of all processes after ``jax.distributed.initialize``).
    axis : str, default="data"
        The mesh axis name the tasks are split along.

    Returns
    -------
    jax.sharding.Mesh

    Raises
    ------
    ValueError
        If `n_devices` exceeds the devices available.
    """
    devices = jax.devices()
    n = len(devices) if n_devices is None else n_devices
    check_scalar(n, "n_devices", kind=int, low=1, high=len(devices))
    return jax.sharding.Mesh(np.asarray(devices[:n]), (axis,))
