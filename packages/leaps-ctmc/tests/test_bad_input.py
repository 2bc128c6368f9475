"""Every public entry point rejects bad input with an error naming the argument."""

import math

import pytest
import torch
from leaps_ctmc import (
    FreeEnergyNet,
    GraphIsingPath,
    IsingPath,
    LocallyEquivariantAttention,
    LocallyEquivariantConv,
    LocallyEquivariantMLP,
    PottsPath,
    Trainer,
    ais,
    corrector,
    ess,
    log_mean_exp,
    metropolis_sweep,
    pinn_loss,
    rates,
    sample,
    snis,
    systematic_resample,
    time_grid,
)
from leaps_ctmc.exact import enumerate_states, ising_logz_kaufman, potts_logz_transfer

NAN = float("nan")
ISING = IsingPath(3, 0.44)
POTTS = PottsPath(3, 3, 1.0)
X_ISING = ISING.sample_base(2)
X_POTTS = POTTS.sample_base(2)


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: IsingPath(2, 0.4), ValueError, "`L`"),
        (lambda: IsingPath((3, 2), 0.4), ValueError, "`L`"),
        (lambda: IsingPath(3.5, 0.4), ValueError, "`L`"),
        (lambda: IsingPath(3, 0.0), ValueError, "`beta`"),
        (lambda: IsingPath(3, NAN), ValueError, "`beta`"),
        (lambda: IsingPath(3, math.inf), ValueError, "`beta`"),
        (lambda: IsingPath(3, 0.4, J=(0.0, NAN)), ValueError, "`J`"),
        (lambda: IsingPath(3, 0.4, field=(0.0, 1.0, 2.0)), ValueError, "`field`"),
        (lambda: PottsPath(3, 1, 1.0), ValueError, "`q`"),
        (lambda: PottsPath(2, 3, 1.0), ValueError, "`L`"),
        (lambda: PottsPath(3, 3, -1.0), ValueError, "`beta`"),
        (lambda: GraphIsingPath([[0, 0]], 1.0), ValueError, "`edges`"),
        (lambda: GraphIsingPath([], 1.0), ValueError, "`edges`"),
        (lambda: GraphIsingPath([[0, 1]], 1.0, n_nodes=1), ValueError, "`edges`"),
        (lambda: GraphIsingPath([[0.5, 1.0]], 1.0), TypeError, "`edges`"),
        (lambda: GraphIsingPath([[0, 1]], 1.0, weights=[NAN]), ValueError, "`weights`"),
        (lambda: GraphIsingPath([[0, 1]], 1.0, weights=[1.0, 2.0]), ValueError, "`weights`"),
        (lambda: GraphIsingPath([[0, 1]], 1.0, weights=["a"]), TypeError, "`weights`"),
    ],
)
def test_paths_reject_bad_construction(make, error, match):
    with pytest.raises(error, match=match):
        make()


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        # a directed graph's reciprocal edges would double the bond (silently, before)
        (lambda nx: nx.DiGraph([(0, 1), (1, 0), (1, 2)]), ValueError, "undirected"),
        # `weights` and `n_nodes` that contradict the graph were silently ignored before
        (lambda nx: (nx.path_graph(3), {"weights": [2.0, 2.0]}), ValueError, "`weights`"),
        (lambda nx: (nx.path_graph(3), {"n_nodes": 5}), ValueError, "`n_nodes`"),
        (lambda nx: nx.Graph([(0, 1, {"weight": "a"})]), TypeError, "'weight'"),
        (lambda nx: nx.Graph([(0, 1, {"weight": NAN})]), ValueError, "'weight'"),
    ],
)
def test_graph_path_rejects_bad_networkx_input(make, error, match):
    nx = pytest.importorskip("networkx")
    made = make(nx)
    graph, kwargs = made if isinstance(made, tuple) else (made, {})
    with pytest.raises(error, match=match):
        GraphIsingPath(graph, 0.5, **kwargs)
    assert GraphIsingPath(nx.path_graph(3), 0.5, n_nodes=3).n_sites == 3


@pytest.mark.parametrize("method", ["U", "dU_dt", "neighbor_delta"])
@pytest.mark.parametrize(
    ("path", "x", "t", "error", "match"),
    [
        (ISING, torch.zeros(2, 3, 3), 0.5, ValueError, "`x`"),  # not +-1
        (ISING, torch.ones(2, 3, 3, dtype=torch.int64), 0.5, TypeError, "`x`"),
        (ISING, torch.ones(2, 4, 4), 0.5, ValueError, "`x`"),  # shape != lattice
        (ISING, torch.ones(0, 3, 3), 0.5, ValueError, "`x`"),  # empty
        (ISING, torch.full((2, 3, 3), NAN), 0.5, ValueError, "`x`"),
        (POTTS, torch.full((2, 3, 3), 3), 0.5, ValueError, "`x`"),  # outside [0, q)
        (POTTS, torch.full((2, 3, 3), -1), 0.5, ValueError, "`x`"),
        (POTTS, torch.zeros(2, 3, 3), 0.5, TypeError, "`x`"),
        (ISING, torch.ones(2, 3, 3), 1.5, ValueError, "`t`"),  # t outside [0, 1]
        (ISING, torch.ones(2, 3, 3), -0.1, ValueError, "`t`"),
        (ISING, torch.ones(2, 3, 3), torch.tensor([0.1, NAN]), ValueError, "`t`"),
        (ISING, torch.ones(2, 3, 3), torch.zeros(3), ValueError, "`t`"),
        (ISING, torch.ones(2, 3, 3), torch.zeros(2, dtype=torch.int64), TypeError, "`t`"),
        (ISING, torch.ones(2, 3, 3), "0.5", TypeError, "`t`"),
    ],
)
def test_path_methods_reject_bad_states_and_times(method, path, x, t, error, match):
    with pytest.raises(error, match=match):
        getattr(path, method)(x, t)


NETS = {
    "conv": lambda q: LocallyEquivariantConv(q, kernel_sizes=(3, 3), channels=2),
    "mlp": lambda q: LocallyEquivariantMLP(9, q, hidden=(4,)),
    "attention": lambda q: LocallyEquivariantAttention(9, q, dim=4, heads=2),
}


@pytest.mark.parametrize("kind", NETS)
@pytest.mark.parametrize(
    ("q", "x", "t", "error", "match"),
    [
        (2, torch.zeros(2, 3, 3), 0.5, ValueError, "`x`"),
        (2, torch.ones(2, 3, 3, dtype=torch.int64), 0.5, TypeError, "`x`"),
        (3, torch.full((2, 3, 3), 5), 0.5, ValueError, "`x`"),
        (3, torch.ones(2, 3, 3), 0.5, TypeError, "`x`"),
        (2, torch.ones(2, 4, 4), 0.5, ValueError, "`x`"),
        (2, torch.ones(0, 3, 3), 0.5, ValueError, "`x`"),
        (2, torch.ones(2, 3, 3), 2.0, ValueError, "`t`"),
        (2, torch.ones(2, 3, 3), torch.tensor([NAN, 0.0]), ValueError, "`t`"),
    ],
)
def test_nets_reject_bad_input(kind, q, x, t, error, match):
    net = NETS[kind](q)
    if kind == "conv" and x.shape[1:] == (4, 4):
        x = torch.ones(2, 2, 2)  # sides < 3
    with pytest.raises(error, match=match):
        net(x, t)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: LocallyEquivariantConv(1), "`q`"),
        (lambda: LocallyEquivariantConv(2, kernel_sizes=(4, 5)), "`kernel_sizes`"),
        (lambda: LocallyEquivariantConv(2, kernel_sizes=()), "`kernel_sizes`"),
        (lambda: LocallyEquivariantConv(2, channels=0), "`channels`"),
        (lambda: LocallyEquivariantMLP(1), "`n_sites`"),
        (lambda: LocallyEquivariantMLP(9, hidden=(0,)), "`hidden`"),
        (lambda: LocallyEquivariantAttention(9, dim=5, heads=2), "`dim`"),
        (lambda: FreeEnergyNet(hidden=()), "`hidden`"),
        (lambda: FreeEnergyNet()(torch.zeros(2, 1)), "`t`"),
    ],
)
def test_net_constructors_reject_bad_arguments(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: rates(torch.zeros(2, 4, 4), X_ISING), "`G`"),
        (lambda: rates(torch.zeros(2, 3, 3, 3), X_ISING), "`G`"),
        (lambda: corrector(torch.zeros(2, 3, 3), X_ISING, torch.zeros(2, 3)), "`delta`"),
        (lambda: corrector(torch.zeros(2, 3, 3), X_ISING, torch.full((2, 3, 3), NAN)), "`delta`"),
        (lambda: corrector(torch.full((2, 3, 3), NAN), X_ISING, torch.zeros(2, 3, 3)), "`G`"),
        # an Ising-shaped G with Potts int64 states was silently taken as Ising before
        (lambda: rates(torch.zeros(2, 3, 3), X_POTTS), "`G`"),
    ],
)
def test_functional_ops_reject_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_walkers": 0}, ValueError, "`n_walkers`"),
        ({"n_steps": 0}, ValueError, "`n_steps`"),
        ({"n_steps": 2.5}, TypeError, "`n_steps`"),
        ({"scheme": "rk4"}, ValueError, "`scheme`"),
        ({"mcmc_sweeps": -1}, ValueError, "`mcmc_sweeps`"),
        ({"resample_threshold": 1.5}, ValueError, "`resample_threshold`"),
        ({"resample_threshold": 0.0}, ValueError, "`resample_threshold`"),
        ({"grid": "log"}, ValueError, "`grid`"),
        ({"grid": lambda s: s * 0.5}, ValueError, "`grid`"),
        ({"horizon": 9}, ValueError, "`horizon`"),
        ({"x0": torch.zeros(4, 3, 3)}, ValueError, "`x0`"),
        ({"x0": torch.ones(3, 3, 3)}, ValueError, "`x0`"),
        ({"net": LocallyEquivariantConv(3, kernel_sizes=(3,), channels=2)}, ValueError, "`net`"),
        ({"generator": 3}, TypeError, "`generator`"),
        ({"generator": 3, "x0": torch.ones(4, 3, 3)}, TypeError, "`generator`"),
        ({"path": "ising"}, TypeError, "`path`"),
        ({"net": lambda x, t: x}, TypeError, "`net`"),
        ({"net": LocallyEquivariantMLP(4)}, ValueError, "n_sites"),
    ],
)
def test_sample_rejects_bad_arguments(kwargs, error, match):
    args = {"path": ISING, "net": None, "n_walkers": 4, "n_steps": 5, **kwargs}
    with pytest.raises(error, match=match):
        sample(**args)


def test_sample_rejects_potts_q2_with_a_net_and_ais_rejects_bad_steps():
    with pytest.raises(ValueError, match="IsingPath"):
        sample(PottsPath(3, 2, 1.0), LocallyEquivariantConv(2, (3,), 2), 4, 5)
    with pytest.raises(ValueError, match="`n_steps`"):
        ais(ISING, 4, 0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "`n_steps`"),
        ({"n_steps": 5, "dt": 0.1}, "`n_steps`"),
        ({"dt": 0.0}, "`dt`"),
        ({"dt": 1.5}, "`dt`"),
        ({"n_steps": 0}, "`n_steps`"),
        ({"n_steps": 4, "grid": lambda s: s.flip(0)}, "`grid`"),
    ],
)
def test_time_grid_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        time_grid(**kwargs)


@pytest.mark.parametrize("fn", [ess, log_mean_exp, systematic_resample])
@pytest.mark.parametrize(
    ("log_w", "error"),
    [
        (torch.zeros(0), ValueError),
        (torch.zeros(2, 2), ValueError),
        (torch.tensor([0.0, NAN]), ValueError),
        (torch.tensor([0.0, math.inf]), ValueError),
        (torch.full((3,), -math.inf), ValueError),
        (torch.zeros(3, dtype=torch.int64), TypeError),
        ([0.0, 1.0], TypeError),
    ],
)
def test_estimators_reject_bad_log_weights(fn, log_w, error):
    with pytest.raises(error, match="`log_w`"):
        fn(log_w)


def test_snis_rejects_bad_values():
    with pytest.raises(ValueError, match="`values`"):
        snis(torch.zeros(3), torch.zeros(4))
    with pytest.raises(ValueError, match="`values`"):
        snis(torch.zeros(3), torch.tensor(1.0))
    with pytest.raises(ValueError, match="`values`"):
        snis(torch.zeros(3), torch.tensor([0.0, NAN, 1.0]))


def test_pinn_loss_and_mcmc_reject_bad_input():
    net, fnet = NETS["conv"](2), FreeEnergyNet(hidden=(4,))
    with pytest.raises(ValueError, match="`t`"):
        pinn_loss(ISING, net, fnet, X_ISING, torch.full((2,), 1.5))
    with pytest.raises(ValueError, match="`x`"):
        pinn_loss(ISING, net, fnet, torch.zeros(2, 3, 3), torch.zeros(2))
    with pytest.raises(ValueError, match="`sweeps`"):
        metropolis_sweep(ISING, X_ISING, 0.5, sweeps=-1)
    with pytest.raises(ValueError, match="`x`"):
        metropolis_sweep(POTTS, torch.full((2, 3, 3), 7), 0.5)
    with pytest.raises(TypeError, match="`generator`"):
        metropolis_sweep(ISING, X_ISING, 0.5, generator="seed")
    with pytest.raises(TypeError, match="`generator`"):
        systematic_resample(torch.zeros(3), generator=0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"lr": 0.0}, "`lr`"),
        ({"lr_gamma": 1.5}, "`lr_gamma`"),
        ({"n_walkers": 0}, "`n_walkers`"),
        ({"batch_size": 0}, "`batch_size`"),
        ({"n_steps": 0}, "`n_steps`"),
        ({"buffer_size": 0}, "`buffer_size`"),
        ({"scheme": "exact"}, "`scheme`"),
        ({"grid": "log"}, "`grid`"),
        ({"curriculum_steps": -1}, "`curriculum_steps`"),
    ],
)
def test_trainer_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Trainer(ISING, NETS["conv"](2), FreeEnergyNet(hidden=(4,)), **kwargs)
    trainer = Trainer(ISING, NETS["conv"](2), FreeEnergyNet(hidden=(4,)))
    with pytest.raises(ValueError, match="`steps`"):
        trainer.fit(-1)


@pytest.mark.parametrize(
    ("net", "fnet", "error", "match"),
    [
        # a mismatched net used to be accepted and fail only inside fit
        (lambda: NETS["conv"](3), lambda: FreeEnergyNet(hidden=(4,)), ValueError, r"`net`.*q"),
        (lambda: LocallyEquivariantMLP(5, 2), lambda: FreeEnergyNet(hidden=(4,)), ValueError,
         r"`net`.*n_sites"),
        (lambda: (lambda x, t: x), lambda: FreeEnergyNet(hidden=(4,)), TypeError, "`net`"),
        (lambda: NETS["conv"](2), lambda: (lambda t: t), TypeError, "`fnet`"),
    ],
)  # fmt: skip
def test_trainer_rejects_a_net_that_does_not_fit_the_path(net, fnet, error, match):
    with pytest.raises(error, match=match):
        Trainer(ISING, net(), fnet())


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: ising_logz_kaufman(1, 3, 0.4), "`m`"),
        (lambda: ising_logz_kaufman(3, 3, 0.0), "`K`"),
        (lambda: ising_logz_kaufman(3, 3, NAN), "`K`"),
        (lambda: potts_logz_transfer(2, 3, 1.0), "`L`"),
        (lambda: potts_logz_transfer(3, 1, 1.0), "`q`"),
        (lambda: potts_logz_transfer(9, 3, 1.0), "`q`"),
        (lambda: potts_logz_transfer(3, 3, math.inf), "`K`"),
        (lambda: enumerate_states(ISING, 1.5), "`t`"),
        (lambda: enumerate_states(IsingPath(6, 0.4)), "2\\^24"),
    ],
)
def test_exact_references_reject_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()
