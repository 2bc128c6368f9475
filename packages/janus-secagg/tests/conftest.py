"""Shared fixtures: small parameters, a cached commitment key, an in-process federation."""

import pytest
from janus_secagg import CommitmentKey, JanusParams
from janus_secagg.testing import Federation


@pytest.fixture(scope="session")
def params():
    return JanusParams(dim=16)


@pytest.fixture(scope="session")
def ck(params, tmp_path_factory):
    return CommitmentKey.derive(params, cache_dir=tmp_path_factory.mktemp("ck"))


@pytest.fixture
def federation(params, ck):
    def make(n, servers=None):
        return Federation(params, ck, n, servers)

    return make
