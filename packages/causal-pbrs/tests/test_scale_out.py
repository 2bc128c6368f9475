"""Scale-out (spec §7): sweeps on joblib worker processes, log counts on a Dask bag."""

import operator
from itertools import pairwise

import numpy as np
from causal_pbrs import QUCB, OfflineDataset, WindyGrid, expert, random_policy, regret

from .conftest import COUNT_FIELDS, dense


def test_joblib_processes_give_the_same_regrets_as_one_process():
    """``regret.run`` is a pure function of picklable (environment, agent, K, seed)."""
    from joblib import Parallel, delayed

    env = WindyGrid.preset("empty8")
    configs = ({}, {"potential": np.zeros(64)}, {"homogeneous": True, "precision": 3})
    jobs = [(config, seed) for config in configs for seed in (0, 1)]

    def agent(config):
        return QUCB(env.n_states, env.n_actions, env.horizon, 60, **config)

    local = [regret.run(env, agent(c), 60, seed=s) for c, s in jobs]
    remote = Parallel(n_jobs=2, backend="loky")(
        delayed(regret.run)(env, agent(c), 60, s) for c, s in jobs
    )
    for a, b in zip(local, remote, strict=True):
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])


def test_dask_bag_counts_shards_of_a_log_and_sums_them():
    import dask.bag as db

    env = WindyGrid.preset("lava_extreme")
    data = env.collect(random_policy(env), 6000, rng=0) + env.collect(expert(env), 6000, rng=1)
    cols = [getattr(data, f) for f in OfflineDataset.fields]
    edges = np.linspace(0, len(data), 5).astype(int)
    shards = [OfflineDataset(*(c[a:b] for c in cols), 81, 5, 20) for a, b in pairwise(edges)]
    bag = db.from_sequence(shards, npartitions=4).map(OfflineDataset.counts)
    total = bag.fold(operator.add).compute(scheduler="processes", num_workers=2)
    whole = data.counts()
    for name in COUNT_FIELDS:
        np.testing.assert_allclose(dense(total, name), dense(whole, name), atol=1e-9)
    np.testing.assert_array_equal(total.terminal, whole.terminal)
