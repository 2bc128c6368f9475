"""The Dirichlet equal split: sizes, disjointness, and its alpha limits."""

import numpy as np
import pytest
from fsl_sage import dirichlet_equal_split


def test_split_is_equal_disjoint_and_valid():
    labels = np.repeat(np.arange(10), 100)
    parts = dirichlet_equal_split(labels, 7, 0.5, seed=0)
    assert [len(p) for p in parts] == [1000 // 7] * 7
    flat = np.concatenate(parts)
    assert len(np.unique(flat)) == flat.size
    assert flat.min() >= 0
    assert flat.max() < 1000


def test_split_renormalises_when_classes_run_out():
    # 2 clients take all samples: the second one must receive whatever classes are left
    labels = np.array([0] * 10 + [1] * 10)
    parts = dirichlet_equal_split(labels, 2, 0.01, seed=3)
    assert sorted(np.concatenate(parts).tolist()) == list(range(20))


def test_large_alpha_is_near_iid_small_alpha_is_skewed():
    labels = np.repeat(np.arange(10), 500)
    iid = dirichlet_equal_split(labels, 5, 1e4, seed=1)
    skew = dirichlet_equal_split(labels, 50, 0.01, seed=1)  # 100 samples per client
    iid_share = max(np.bincount(labels[p], minlength=10).max() / len(p) for p in iid)
    skew_share = np.mean([np.bincount(labels[p], minlength=10).max() / len(p) for p in skew])
    assert iid_share < 0.16  # expected 0.1 per class
    assert skew_share > 0.8  # mostly one class per client


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"labels": np.array([], dtype=int)}, "labels"),
        ({"labels": np.array([0.5, 1.0])}, "labels"),
        ({"labels": np.array([-1, 0])}, "labels"),
        ({"labels": np.array([[0, 1]])}, "labels"),
        ({"num_clients": 0}, "num_clients"),
        ({"num_clients": 5}, "num_clients"),
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": float("nan")}, "alpha"),
        ({"alpha": float("inf")}, "alpha"),
    ],
)
def test_split_rejects_bad_input(kwargs, match):
    args = {"labels": np.array([0, 1, 1, 0]), "num_clients": 2, "alpha": 1.0, "seed": 0}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        dirichlet_equal_split(**args)
