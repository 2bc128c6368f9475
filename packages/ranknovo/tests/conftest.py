"""Shared fixtures of ranknovo's tests."""

import numpy as np
import pytest
from ranknovo.vocab import NTERM_MODS, SPECIALS, Vocab

from icml25_core import data_path


@pytest.fixture(scope="session")
def vocab():
    return Vocab.massivekb()


@pytest.fixture(scope="session")
def mgf_path():
    return data_path("ranknovo", "data", "sample_preprocessed_spectra.mgf")


@pytest.fixture(scope="session")
def real_spectra(mgf_path):
    from ranknovo.data import read_mgf

    return read_mgf(mgf_path)


def random_peptides(vocab, n, rng, max_len=25, nterm=0.1):
    """Random token lists (residues, optional N-terminal modification, empties included)."""
    res = [t for t in vocab.tokens if t not in SPECIALS and t != "-" and t not in NTERM_MODS]
    out = []
    for _ in range(n):
        k = int(rng.integers(0, max_len + 1))
        p = [res[i] for i in rng.integers(0, len(res), k)]
        if p and rng.random() < nterm:
            p = [NTERM_MODS[int(rng.integers(len(NTERM_MODS)))], *p]
        out.append(p)
    return out


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="session")
def make_peptides():
    return random_peptides
