"""neighbor_delta against brute force, d_t U against forward-mode AD (spec test 7), MCMC."""

import itertools

import pytest
import torch
from leaps_ctmc import GraphIsingPath, IsingPath, PottsPath, metropolis_sweep
from leaps_ctmc.exact import enumerate_states

PATHS = {
    "ising": lambda: IsingPath(4, 0.4407, J=(0.0, 1.0), field=(0.0, 0.3)),
    "ising-3x5": lambda: IsingPath((3, 5), 0.7, J=(0.2, -1.0)),
    "potts": lambda: PottsPath(4, 3, 1.001),
    "potts-odd": lambda: PottsPath((3, 5), 4, 0.8, J=(0.5, 1.5)),
    "graph": lambda: GraphIsingPath(
        [[0, 1], [1, 2], [2, 3], [3, 0], [0, 2], [4, 1]],
        0.9,
        J=(0.0, 1.0),
        h=(0.1, -0.4),
        weights=[1.0, 0.5, -2.0, 1.0, 0.3, 1.2],
    ),
}


def batch(path, B=6, seed=0):
    x = path.sample_base(B, torch.Generator().manual_seed(seed))
    return x.double() if path.spin else x


@pytest.mark.parametrize("name", PATHS)
def test_neighbor_delta_equals_brute_force(name, moves):
    path = PATHS[name]()
    x = batch(path)
    t = torch.rand(x.shape[0], generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    delta = path.neighbor_delta(x, t)
    ys, b, site, tau = moves(x, path.q)
    brute = path.U(ys, t[b]) - path.U(x, t)[b]
    if path.spin:
        got = delta.reshape(x.shape[0], -1)[b, site]
    else:
        got = delta.reshape(x.shape[0], path.q, -1)[b, tau, site]
        assert torch.all(delta.gather(1, x[:, None]) == 0)
    torch.testing.assert_close(got, brute, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("name", PATHS)
def test_dU_dt_equals_forward_mode_ad(name):
    path = PATHS[name]()
    x = batch(path)
    t = torch.rand(x.shape[0], generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    jac = torch.func.jacfwd(lambda s: path.U(x, s))(t)
    torch.testing.assert_close(path.dU_dt(x, t), torch.diagonal(jac), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("name", ["ising", "potts", "graph", "potts-odd"])
def test_coloring_is_proper(name):
    path = PATHS[name]()
    colors = path.coloring().reshape(-1)
    pairs = interacting_pairs(path, batch(path, 1))
    assert pairs
    for a, b in pairs:
        assert colors[a] != colors[b]


def interacting_pairs(path, x):
    """Pairs (i, j) of sites where moving i changes j's Delta U (brute force)."""
    n = path.n_sites
    t = torch.ones(1, dtype=torch.float64)
    pairs = []
    base = path.neighbor_delta(x, t).reshape(-1)
    for i in range(n):
        y = x.clone().reshape(1, -1)
        y[0, i] = -y[0, i] if path.spin else (y[0, i] + 1) % path.q
        changed = (path.neighbor_delta(y.reshape(x.shape), t).reshape(-1) != base).reshape(-1, n)
        pairs += [(i, j) for j in changed.any(0).nonzero()[:, 0].tolist() if j != i]
    return pairs


@pytest.mark.parametrize("name", ["ising", "potts"])
def test_metropolis_sweeps_leave_rho_t_invariant(name):
    # Start 20 000 walkers exactly at rho_t (sampled from the enumeration of a 3 x 3 torus),
    # sweep twice, compare the mean energy with the exact one within 4 standard errors.
    path = {"ising": IsingPath(3, 0.6), "potts": PottsPath(3, 3, 1.2)}[name]
    enum = enumerate_states(path, 0.8)
    gen = torch.Generator().manual_seed(3)
    idx = torch.multinomial(enum.probs, 20000, replacement=True, generator=gen)
    x = enum.x[idx]
    x = metropolis_sweep(path, x, 0.8, sweeps=2, generator=gen)
    energy = path.U(x, 0.8)
    exact = float((enum.probs * enum.U).sum())
    se = float(energy.std()) / 20000**0.5
    assert abs(float(energy.mean()) - exact) < 4 * se
    assert not torch.equal(x, enum.x[idx])


def test_networkx_graph_gives_the_brute_force_log_z_and_parallel_edges_add():
    # own brute force over all 2^5 spin states of a weighted graph with an isolated node
    nx = pytest.importorskip("networkx")
    graph = nx.Graph()
    graph.add_weighted_edges_from([("a", "b", 0.5), ("b", "c", -1.0), ("c", "d", 2.0)])
    graph.add_node("e")
    path = GraphIsingPath(graph, 0.7, h=(0.0, 0.4))
    spins = torch.tensor(list(itertools.product([-1.0, 1.0], repeat=5)), dtype=torch.float64)
    a, b, c, d, _ = spins.unbind(1)
    energy = -(0.5 * a * b - 1.0 * b * c + 2.0 * c * d) - 0.4 * spins.sum(1)
    assert enumerate_states(path).log_z == pytest.approx(
        float(torch.logsumexp(-0.7 * energy, 0)), abs=1e-12
    )
    multi = nx.MultiGraph([(0, 1, {"weight": 0.5}), (0, 1, {"weight": 0.25}), (1, 2, {})])
    merged = GraphIsingPath([[0, 1], [1, 2]], 0.7, weights=[0.75, 1.0])
    assert enumerate_states(GraphIsingPath(multi, 0.7)).log_z == pytest.approx(
        enumerate_states(merged).log_z, abs=1e-12
    )
