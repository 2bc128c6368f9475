"""PINN loss, curriculum (spec test 12), checkpoint resume and the trained sampler (test 14)."""

import itertools

import pytest
import torch
from leaps_ctmc import (
    FreeEnergyNet,
    IsingPath,
    LocallyEquivariantConv,
    LocallyEquivariantMLP,
    PottsPath,
    Trainer,
    ais,
    corrector,
    pinn_loss,
    pinn_residual,
    sample,
)


def test_pinn_residual_is_the_weight_rate_plus_free_energy_derivative():
    # r = -d_t U - K + d_t F, with d_t F from reverse-mode autograd as the reference.
    path = PottsPath(3, 3, 1.0)
    torch.manual_seed(0)
    net, fnet = LocallyEquivariantMLP(9, 3, hidden=(6,)), FreeEnergyNet(hidden=(16, 16))
    x = path.sample_base(7, torch.Generator().manual_seed(1))
    t = torch.rand(7, generator=torch.Generator().manual_seed(2))
    r = pinn_residual(path, net, fnet, x, t)
    tt = t.clone().requires_grad_()
    (dF,) = torch.autograd.grad(fnet(tt).sum(), tt)
    K = corrector(net(x, t), x, path.neighbor_delta(x, t))
    expected = -path.dU_dt(x, t) - K + dF
    torch.testing.assert_close(r, expected, atol=1e-5, rtol=1e-5)
    loss = pinn_loss(path, net, fnet, x, t)
    loss.backward()
    assert all(p.grad is not None for p in [*net.parameters(), *fnet.parameters()])


def make_trainer(tmp_path=None, **kwargs):
    torch.manual_seed(0)
    path = IsingPath(3, 0.4407)
    net = LocallyEquivariantConv(2, kernel_sizes=(3, 3), channels=4)
    defaults = dict(lr=1e-2, n_walkers=16, batch_size=32, n_steps=8, curriculum_steps=6,
                    refresh_every=3, buffer_size=2, seed=1, checkpoint_every=2,
                    checkpoint_dir=tmp_path)  # fmt: skip
    return Trainer(path, net, FreeEnergyNet(hidden=(8, 8)), **{**defaults, **kwargs})


def test_curriculum_reaches_t_equal_one():
    trainer = make_trainer(n_steps=125, curriculum_steps=20000, warmup_steps=1000)
    horizons = [trainer.horizon(s) for s in range(0, 21000, 50)] + [trainer.horizon(20999)]
    assert horizons[0] == 1
    assert trainer.horizon(999) == 1
    assert all(b >= a for a, b in itertools.pairwise(horizons))
    assert trainer.horizon(20999) == 125
    from leaps_ctmc import time_grid

    assert float(time_grid(trainer.n_steps)[trainer.horizon(20999)]) == 1.0
    # quadratic: larger horizons are repeated more (horizon k lasts ~ (2k - 1) S / N^2 steps)
    counts = torch.bincount(torch.tensor([trainer.horizon(s) for s in range(1000, 21000)]))
    assert counts[100] > counts[10] > 0


def test_checkpoint_resume_gives_identical_parameters(tmp_path):
    straight = make_trainer(tmp_path / "a").fit(8, show_progress=False)
    first = make_trainer(tmp_path / "b").fit(5, show_progress=False)  # "interrupted" at 5
    assert first.step_ == 5
    resumed = make_trainer(tmp_path / "b").fit(8, show_progress=False)
    assert resumed.step_ == 8
    assert resumed.history_[:5] == first.history_
    for p, q in zip(straight.net.parameters(), resumed.net.parameters(), strict=True):
        assert torch.equal(p, q)
    for p, q in zip(straight.fnet.parameters(), resumed.fnet.parameters(), strict=True):
        assert torch.equal(p, q)


def test_resume_under_another_path_is_refused(tmp_path):
    make_trainer(tmp_path).fit(2, show_progress=False)
    torch.manual_seed(0)
    hotter = Trainer(IsingPath(3, 0.2), LocallyEquivariantConv(2, kernel_sizes=(3, 3), channels=4),
                     FreeEnergyNet(hidden=(8, 8)), n_walkers=16, batch_size=32, n_steps=8,
                     checkpoint_dir=tmp_path)  # fmt: skip
    with pytest.raises(ValueError, match=r"`checkpoint_dir`.*another path"):
        hotter.fit(4, show_progress=False)
    assert make_trainer(tmp_path).fit(4, show_progress=False).step_ == 4  # same path resumes


@pytest.mark.slow
def test_trained_leaps_beats_ais_on_6x6_ising():
    # Spec test 14: L = 6, seeded, 50 steps, no MCMC at evaluation: ESS(LEAPS) >= 5 x ESS(AIS).
    # Half the reproduce's training (50 iterations) keeps it within ~2 CPU-minutes.
    torch.manual_seed(0)
    path = IsingPath(6, 0.4407)
    net = LocallyEquivariantConv(2, kernel_sizes=(3, 5, 5), channels=16, residual=True)
    trainer = Trainer(
        path,
        net,
        FreeEnergyNet(),
        lr=3e-3,
        n_walkers=256,
        batch_size=512,
        n_steps=50,
        curriculum_steps=0,
        refresh_every=5,
        buffer_size=20,
        seed=0,
    )
    trainer.fit(50, show_progress=False)
    net.eval()
    leaps = sample(path, net, 1024, 50, generator=torch.Generator().manual_seed(1))
    base = ais(path, 1024, 50, generator=torch.Generator().manual_seed(2))
    assert leaps.ess >= 5 * base.ess, (leaps.ess, base.ess)
