"""Shared test set-up: one thread (unfold on busy cores is ~1000x slower otherwise),
brute-force helpers (fixtures `randomize`, `moves`) and a seeded README replay."""

import os

# Triton's interpreter must be chosen before triton is first imported (its standard library is
# decorated at import); the kernel tests then ask for it with ICML25_BACKEND=triton-interpret.
os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture
def gen():
    """A seeded CPU generator."""
    return torch.Generator().manual_seed(0)


def randomize(net, std=0.3, seed=0):
    """float64 copy-in-place with N(0, std^2) parameters (the default init is near zero)."""
    gen = torch.Generator().manual_seed(seed)
    net.double()
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * std)
    return net


def moves(x, q):
    """Every single-site move of every state in `x`.

    Returns (ys, b, site, tau): ys [n_moves, *S] the moved states, b the batch index, site the
    flat site index and tau the new value (Ising: -s_i; Potts: tau != x_i).
    """
    B = x.shape[0]
    n = x[0].numel()
    ys, bs, sites, taus = [], [], [], []
    for b in range(B):
        for i in range(n):
            old = x[b].reshape(-1)[i]
            values = [-old] if q == 2 else [torch.tensor(v) for v in range(q) if v != int(old)]
            for tau in values:
                y = x[b].clone().reshape(-1)
                y[i] = tau
                ys.append(y.reshape(x.shape[1:]))
                bs.append(b)
                sites.append(i)
                taus.append(int(tau) if q != 2 else 0)
    return torch.stack(ys), torch.tensor(bs), torch.tensor(sites), torch.tensor(taus)


@pytest.fixture(name="randomize")
def _randomize_fixture():
    return randomize


@pytest.fixture(name="moves")
def _moves_fixture():
    return moves


@pytest.fixture(scope="session")
def readme_folder(readme_folder):
    """The README's replay starts from torch's seed 0 (its walkers are random)."""
    torch.manual_seed(0)
    return readme_folder
