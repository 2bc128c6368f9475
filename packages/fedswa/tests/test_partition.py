"""Spec test 9: the fixed-size Dirichlet split (sizes, flwr-datasets peer, uniform limit)."""

import numpy as np
import pytest
from fedswa import dirichlet_fixed_size, flwr_partition, label_entropy
from flwr_datasets.partitioner import IidPartitioner, InnerDirichletPartitioner
from scipy.stats import ks_2samp

LABELS = np.repeat(np.arange(10), 600)  # 10 balanced classes, 6000 examples


@pytest.mark.parametrize("replace", [True, False])
@pytest.mark.parametrize("alpha", [0.1, 1.0])
def test_every_client_gets_exactly_size_examples(replace, alpha):
    parts = dirichlet_fixed_size(LABELS, 37, alpha, 113, seed=3, replace=replace)
    assert [len(p) for p in parts] == [113] * 37
    assert all(p.dtype == np.int64 and p.min() >= 0 and p.max() < len(LABELS) for p in parts)
    if not replace:
        joined = np.concatenate(parts)
        assert len(np.unique(joined)) == len(joined)  # no example used twice


def test_authors_split_recycles_exhausted_pools():
    parts = dirichlet_fixed_size(LABELS, 40, 0.1, 500, seed=42)  # 20 000 draws from 6 000
    joined = np.concatenate(parts)
    assert len(joined) == 20_000
    assert len(np.unique(joined)) < len(joined)


def test_without_replacement_matches_flwr_inner_dirichlet_statistics():
    ours, theirs = [], []
    for seed in range(6):
        parts = dirichlet_fixed_size(LABELS, 30, 0.3, 100, seed=seed, replace=False)
        ours.append(label_entropy(LABELS, parts, 10))
        peer = InnerDirichletPartitioner([100] * 30, partition_by="label", alpha=0.3, seed=seed)
        theirs.append(label_entropy(LABELS, flwr_partition(LABELS, peer), 10))
    result = ks_2samp(np.concatenate(ours), np.concatenate(theirs))
    assert result.pvalue > 0.01


def test_huge_alpha_gives_near_uniform_labels():
    parts = dirichlet_fixed_size(LABELS, 20, 1e4, 500, seed=0)
    for part in parts:
        freq = np.bincount(LABELS[part], minlength=10) / 500
        assert np.abs(freq - 0.1).max() < 0.06  # multinomial sd ~0.013 per class
    assert label_entropy(LABELS, parts, 10).min() > 0.98 * np.log(10)


def test_small_alpha_gives_skewed_labels():
    parts = dirichlet_fixed_size(LABELS, 20, 0.1, 500, seed=0)
    assert np.median(label_entropy(LABELS, parts, 10)) < 0.6 * np.log(10)


def test_flwr_partition_returns_the_partitioner_indices():
    parts = flwr_partition(LABELS, IidPartitioner(num_partitions=4))
    joined = np.sort(np.concatenate(parts))
    np.testing.assert_array_equal(joined, np.arange(len(LABELS)))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(labels=[]), ValueError, "`labels`"),
        (dict(labels=[[0, 1]]), ValueError, "`labels`"),
        (dict(labels=[0.5, 1.0]), TypeError, "`labels`"),
        (dict(labels=[0, -1]), ValueError, "`labels`"),
        (dict(num_clients=0), ValueError, "`num_clients`"),
        (dict(alpha=0.0), ValueError, "`alpha`"),
        (dict(alpha=float("nan")), ValueError, "`alpha`"),
        (dict(alpha=float("inf")), ValueError, "`alpha`"),
        (dict(size=0), ValueError, "`size`"),
        (dict(size=10, num_clients=1000, replace=False), ValueError, "`size`"),
    ],
)
def test_dirichlet_fixed_size_rejects_bad_input(kwargs, error, match):
    args = dict(labels=LABELS, num_clients=4, alpha=0.5, size=10)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        dirichlet_fixed_size(**args)
