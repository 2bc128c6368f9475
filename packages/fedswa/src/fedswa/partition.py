"""Label-skewed client splits: the authors' fixed-size Dirichlet split and flwr-datasets'
partitioners.

Axis letters: ``N`` examples, ``C`` classes, ``M`` clients, ``n`` examples per client.
"""

from __future__ import annotations

import math

import numpy as np

from icml25_core import as_generator, check_array, check_scalar

__all__ = ["dirichlet_fixed_size", "flwr_partition", "label_entropy"]


def _check_labels(labels) -> np.ndarray:
    labels = check_array(labels, "labels", ndim=1)
    if not np.issubdtype(labels.dtype, np.integer):
        raise TypeError(f"`labels` must hold integers, got dtype {labels.dtype}")
    if labels.min() < 0:
        raise ValueError("`labels` must be >= 0")
    return labels.astype(np.int64, copy=False)


def dirichlet_fixed_size(
    labels, num_clients: int, alpha: float, size: int, seed: int = 42, replace: bool = True
) -> list[np.ndarray]:
    """Split example indices over clients with Dirichlet label skew, ``size`` examples each.

    Client ``j`` draws class proportions ``p_j ~ Dir(alpha * 1_C)``. With ``replace=True`` (the
    authors' split) it then draws ``size`` labels from ``p_j`` and takes them from per-class
    shuffled pools that start over when exhausted, so an image can land on several clients.
    With ``replace=False`` each label is drawn from ``p_j`` renormalised over the classes that
    still have unused examples (the rule of flwr-datasets' ``InnerDirichletPartitioner``), so no
    index repeats.

    Parameters
    ----------
    labels : array-like of shape (N,), int
        Class of every example, ``>= 0``.
    num_clients : int
        ``M >= 1``.
    alpha : float
        Dirichlet concentration ``> 0``; 0.1 = strong skew, ``1e4`` ~ uniform labels.
    size : int
        Examples per client ``n >= 1``; with ``replace=False``, ``M * n <= N``.
    seed : int, default=42
        The official split's seed (``dirichlet_data.py``).
    replace : bool, default=True
        Recycle exhausted class pools (authors) or not.

    Returns
    -------
    list of numpy.ndarray of shape (size,), int64
        Indices into `labels`, one array per client.

    Raises
    ------
    ValueError
        If `labels` is empty, not 1-D or negative, a size is out of range, or ``replace=False``
        and ``M * n > N``.
    TypeError
        If `labels` is not integer.

    Notes
    -----
    Source: official code ``junkangLiu0/FedSWA`` ``dirichlet_data.py`` (seed 42); flwr-datasets
    ``InnerDirichletPartitioner`` for ``replace=False``.

    Examples
    --------
    >>> parts = dirichlet_fixed_size([0, 1, 2, 0, 1, 2] * 10, num_clients=3, alpha=0.1, size=5)
    >>> [len(p) for p in parts]
    [5, 5, 5]
    """
    labels = _check_labels(labels)
    num_clients = check_scalar(num_clients, "num_clients", kind=int, low=1)
    alpha = check_scalar(alpha, "alpha", low=0.0, high=math.inf, inclusive="neither")
    size = check_scalar(size, "size", kind=int, low=1)
    seed = check_scalar(seed, "seed", kind=int, low=0)
    if not replace and num_clients * size > len(labels):
        raise ValueError(
            f"`size` * `num_clients` = {num_clients * size} exceeds the {len(labels)} examples "
            "(replace=False)"
        )
    rng = as_generator(seed)
    classes = np.unique(labels)
    pools = [rng.permutation(np.flatnonzero(labels == c)) for c in classes]
    used = np.zeros(len(classes), dtype=np.int64)
    out = []
    for _ in range(num_clients):
        p = rng.dirichlet(np.full(len(classes), alpha))
        if replace:
            counts = rng.multinomial(size, p / p.sum())
            chunks: list[np.ndarray] = []
            for c, count in enumerate(counts):
                positions = (used[c] + np.arange(count)) % len(pools[c])
                chunks.append(pools[c][positions])
                used[c] += count
            out.append(rng.permutation(np.concatenate(chunks)).astype(np.int64))
        else:
            idx = np.empty(size, dtype=np.int64)
            for s in range(size):
                left = np.array([len(pool) - u for pool, u in zip(pools, used, strict=True)])
                q = np.where(left > 0, p, 0.0)
                if q.sum() <= 0:  # p_j sits on exhausted classes only: fall back to what is left
                    q = (left > 0).astype(float)
                c = rng.choice(len(classes), p=q / q.sum())
                idx[s] = pools[c][used[c]]
                used[c] += 1
            out.append(idx)
    return out


def flwr_partition(labels, partitioner) -> list[np.ndarray]:
    """Index arrays of a flwr-datasets partitioner run on `labels`, offline.

    Parameters
    ----------
    labels : array-like of shape (N,), int
    partitioner : flwr_datasets.partitioner.Partitioner
        Built with ``partition_by="label"`` where it needs labels, e.g.
        ``DirichletPartitioner(num_partitions=10, partition_by="label", alpha=0.1)``.

    Returns
    -------
    list of numpy.ndarray, int64
        Indices into `labels` of each of ``partitioner.num_partitions`` partitions.

    Notes
    -----
    A ``datasets.Dataset`` with columns ``label`` and ``idx`` is assigned to
    ``partitioner.dataset``; nothing is downloaded (no ``FederatedDataset``).
    """
    labels = _check_labels(labels)
    from datasets import Dataset

    partitioner.dataset = Dataset.from_dict(
        {"label": labels.tolist(), "idx": np.arange(len(labels)).tolist()}
    )
    return [
        np.asarray(partitioner.load_partition(i)["idx"], dtype=np.int64)
        for i in range(partitioner.num_partitions)
    ]


def label_entropy(labels, partitions, num_classes: int | None = None) -> np.ndarray:
    """Shannon entropy (nats) of each partition's label histogram.

    Parameters
    ----------
    labels : array-like of shape (N,), int
    partitions : list of index arrays
    num_classes : int, optional
        Defaults to ``labels.max() + 1``.

    Returns
    -------
    numpy.ndarray of shape (M,), float64
    """
    labels = _check_labels(labels)
    num_classes = int(labels.max()) + 1 if num_classes is None else num_classes
    out = []
    for part in partitions:
        counts = np.bincount(labels[np.asarray(part, dtype=np.int64)], minlength=num_classes)
        p = counts[counts > 0] / counts.sum()
        out.append(float(-(p * np.log(p)).sum()))
    return np.asarray(out)
