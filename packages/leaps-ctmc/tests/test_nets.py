"""Local equivariance of every net and the one-pass rates / corrector (spec tests 1-3)."""

import pytest
import torch
from leaps_ctmc import (
    FreeEnergyNet,
    IsingPath,
    LocallyEquivariantAttention,
    LocallyEquivariantConv,
    LocallyEquivariantMLP,
    PottsPath,
    corrector,
    rates,
)
from leaps_ctmc.exact import enumerate_states


def make_net(kind, q, n_sites=9):
    if kind == "conv":
        return LocallyEquivariantConv(q, kernel_sizes=(3, 5, 15), channels=4, residual=True)
    if kind == "mlp":
        return LocallyEquivariantMLP(n_sites, q, hidden=(8, 8))
    return LocallyEquivariantAttention(n_sites, q, dim=8, heads=2)


def make_path(q, L=3):
    return IsingPath(L, 0.4407) if q == 2 else PottsPath(L, q, 1.001)


def states(path, B, seed=1):
    x = path.sample_base(B, torch.Generator().manual_seed(seed))
    return x.double() if path.spin else x


def g_at(G, b, site, tau, q):
    """G entries of the moves (b, site, tau): Ising [B, *S]; Potts [B, q, *S]."""
    if q == 2:
        return G.reshape(G.shape[0], -1)[b, site]
    return G.reshape(G.shape[0], q, -1)[b, tau, site]


CASES = [
    pytest.param(kind, q, id=f"{kind}-{'ising' if q == 2 else f'potts{q}'}")
    for kind in ("conv", "mlp", "attention")
    for q in (2, 3)
]


@pytest.mark.parametrize(("kind", "q"), CASES)
def test_local_equivariance_all_sites_and_moves(kind, q, randomize, moves):
    # G(Swap(x, i, tau))_{i, x_i} = -G(x)_{i, tau} for every site and tau (paper Prop. 5.1).
    path = make_path(q)
    net = randomize(make_net(kind, q))
    x = states(path, 4)
    t = torch.rand(4, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    G = net(x, t)
    ys, b, site, tau = moves(x, q)
    Gy = net(ys, t[b])
    old = x.reshape(x.shape[0], -1)[b, site].long() if q != 2 else None
    back = g_at(Gy, torch.arange(len(b)), site, old if q != 2 else None, q)
    forward = g_at(G, b, site, tau, q)
    assert forward.abs().max() > 1e-3  # a non-trivial net
    torch.testing.assert_close(back, -forward, atol=1e-12, rtol=0)
    if q != 2:  # the tau = x_i entries are exactly 0
        assert torch.all(G.gather(1, x[:, None]) == 0)


@pytest.mark.parametrize(("kind", "q"), CASES)
def test_in_rates_from_one_pass_equal_neighbour_out_rates(kind, q, randomize, moves):
    # Q(Swap(x, i, tau), x) from x's pass = the out-rate of the neighbour's own pass back to x.
    path = make_path(q)
    net = randomize(make_net(kind, q), seed=3)
    x = states(path, 3, seed=4)
    t = torch.full((3,), 0.37, dtype=torch.float64)
    G = net(x, t)
    out_x, in_x = rates(G, x)
    ys, b, site, tau = moves(x, q)
    out_y, _ = rates(net(ys, t[b]), ys)
    old = x.reshape(x.shape[0], -1)[b, site].long()
    torch.testing.assert_close(
        g_at(in_x, b, site, tau, q), g_at(out_y, torch.arange(len(b)), site, old, q),
        atol=1e-12, rtol=0,
    )  # fmt: skip
    assert torch.all(out_x * in_x == 0)


def test_corrector_equals_dense_generator_ising_3x3(randomize):
    # K(x) = (Q^T rho)(x) / rho(x) with the dense 512 x 512 generator of the net's rates.
    path = IsingPath(3, 0.4407)
    net = randomize(make_net("conv", 2), std=0.2, seed=5)
    t = 0.6
    enum = enumerate_states(path, t)
    x, U = enum.x, enum.U
    tt = torch.full((x.shape[0],), t, dtype=torch.float64)
    G = net(x, tt)
    out_rate, _ = rates(G, x)
    bits = ((x.reshape(512, 9) > 0).long() * (2 ** torch.arange(8, -1, -1))).sum(1)
    assert torch.equal(bits, torch.arange(512))
    Q = torch.zeros(512, 512, dtype=torch.float64)
    for i in range(9):
        Q[torch.arange(512), torch.arange(512) ^ (1 << (8 - i))] = out_rate.reshape(512, 9)[:, i]
    Q -= torch.diag(Q.sum(1))
    rho = torch.exp(-U - enum.log_z)
    expected = (Q.T @ rho) / rho
    K = corrector(G, x, path.neighbor_delta(x, tt))
    torch.testing.assert_close(K, expected, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("kind", ["conv", "mlp", "attention"])
def test_corrector_equals_neighbour_passes_potts_3x3(kind, randomize, moves):
    # For 50 random 3x3 Potts (q = 3) states, run the net on all 18 neighbours y and sum
    # Q(y, x) rho(y) / rho(x) - Q(x, y) by brute force (U recomputed, no neighbor_delta).
    path = PottsPath(3, 3, 1.001)
    net = randomize(make_net(kind, 3), std=0.2, seed=6)
    x = states(path, 50, seed=7)
    t = torch.rand(50, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
    G = net(x, t)
    ys, b, site, tau = moves(x, 3)
    assert len(b) == 50 * 18
    Gy = net(ys, t[b])
    old = x.reshape(50, -1)[b, site]
    q_in = g_at(Gy, torch.arange(len(b)), site, old, 3).clamp(min=0)
    q_out = g_at(G, b, site, tau, 3).clamp(min=0)
    ratio = torch.exp(-(path.U(ys, t[b]) - path.U(x, t)[b]))
    expected = torch.zeros(50, dtype=torch.float64).index_add(0, b, q_in * ratio - q_out)
    K = corrector(G, x, path.neighbor_delta(x, t))
    torch.testing.assert_close(K, expected, atol=1e-10, rtol=1e-10)


def test_nets_work_on_other_lattice_sizes_and_round_trip_state_dict():
    net = LocallyEquivariantConv(3, kernel_sizes=(3, 5), channels=4)
    x = PottsPath(7, 3, 1.0).sample_base(2)
    G = net(x, 0.5)
    assert G.shape == (2, 3, 7, 7)
    clone = LocallyEquivariantConv(3, kernel_sizes=(3, 5), channels=4)
    clone.load_state_dict(net.state_dict())
    assert torch.equal(clone(x, 0.5), G)


@pytest.mark.slow
@pytest.mark.parametrize("q", [3])
def test_conv_net_runs_under_torch_compile(q):
    # Graph capture (aot_eager: no C++ toolchain needed) gives the eager output and gradients.
    torch.manual_seed(0)
    net = LocallyEquivariantConv(q, kernel_sizes=(3, 5), channels=4, residual=True)
    path = make_path(q, L=4)
    x = path.sample_base(3, torch.Generator().manual_seed(0))
    t = torch.rand(3, generator=torch.Generator().manual_seed(1))
    compiled = torch.compile(net, backend="aot_eager")
    torch.testing.assert_close(compiled(x, t), net(x, t), atol=1e-6, rtol=1e-5)
    compiled(x, t).square().sum().backward()
    assert all(p.grad is not None for p in net.parameters())


def test_free_energy_net_is_its_sequential_mlp_of_nn_linear_layers():
    # the elementwise first layer must give exactly what nn.Linear gives on t[:, None]
    fnet = FreeEnergyNet(hidden=(16, 8)).double()
    t = torch.rand(32, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(fnet(t), fnet.mlp(t[:, None])[:, 0], rtol=1e-14, atol=1e-14)
