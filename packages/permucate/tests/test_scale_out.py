"""Scale-out path of the spec (§7): joblib's Dask backend on a local multi-process cluster."""

import distributed
import numpy as np
import pytest
from joblib import parallel_config
from permucate import PermuCATE, datasets, dr_learner
from sklearn.linear_model import LinearRegression, LogisticRegression


@pytest.mark.slow
def test_dask_cluster_gives_the_same_result_as_one_process():
    data = datasets.hines(400, random_state=0)

    def fit(n_jobs):
        return PermuCATE(
            dr_learner(
                LinearRegression(), LogisticRegression(), LinearRegression(), random_state=0
            ),
            n_permutations=5,
            n_repeats=2,
            outcome_model=LinearRegression(),
            propensity_model=LogisticRegression(),
            n_jobs=n_jobs,
            random_state=3,
        ).fit(data.X, data.T, data.Y)

    local = fit(1)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
        parallel_config(backend="dask"),
    ):
        on_cluster = fit(-1)
        assert len(client.scheduler_info()["workers"]) == 2
    np.testing.assert_array_equal(local.importances_folds_, on_cluster.importances_folds_)
    np.testing.assert_array_equal(local.pvalues_, on_cluster.pvalues_)
