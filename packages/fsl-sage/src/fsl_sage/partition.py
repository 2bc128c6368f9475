"""Non-IID client split: per-client Dirichlet class mix, equal client sizes.

Source: official ``srijith1996/FSL-SAGE`` ``noniid_dirichlet_equal_split``: every client draws
class proportions ``p ~ Dir(alpha 1_C)`` and receives ``floor(n / m)`` samples drawn without
replacement; when a class runs out, ``p`` is renormalised over the classes left.
"""

from __future__ import annotations

import math

import numpy as np

from icml25_core import as_generator, check_array, check_scalar

__all__ = ["dirichlet_equal_split"]


def dirichlet_equal_split(labels, num_clients: int, alpha: float, seed=None) -> list[np.ndarray]:
    """Indices of each client's samples.

    Parameters
    ----------
    labels : array-like of int, shape [n]
        Class labels (any non-negative ints).
    num_clients : int
        ``m``, at least 1 and at most ``n``.
    alpha : float
        Dirichlet concentration (finite, > 0); small = skewed, large = near-IID.
    seed : int or numpy Generator, optional

    Returns
    -------
    list of ndarray of int64
        ``m`` disjoint index arrays of length ``floor(n / m)`` each.

    Raises
    ------
    ValueError
        For empty / non-integer / negative labels, or out-of-range `num_clients`, `alpha`.
    """
    labels = check_array(labels, "labels", ndim=1)
    if not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"`labels` must hold integers, got dtype {labels.dtype}")
    if labels.min() < 0:
        raise ValueError("`labels` must be non-negative")
    check_scalar(num_clients, "num_clients", kind=int, low=1, high=labels.shape[0])
    check_scalar(alpha, "alpha", low=0.0, high=math.inf, inclusive="neither")
    rng = as_generator(seed)
    classes = np.unique(labels)
    pools = [list(rng.permutation(np.flatnonzero(labels == c))) for c in classes]
    size = labels.shape[0] // num_clients
    out = []
    for _ in range(num_clients):
        p = rng.dirichlet(np.full(classes.shape[0], float(alpha)))
        take = []
        for _ in range(size):
            left = np.array([len(pool) > 0 for pool in pools])
            q = np.where(left, p, 0.0)
            q = q / q.sum() if q.sum() > 0 else left / left.sum()
            c = rng.choice(classes.shape[0], p=q)
            take.append(pools[c].pop())
        out.append(np.asarray(take, dtype=np.int64))
    return out
