"""Spec test 4 and SCAFFOLD's control invariant.

FedMoSWA with rho = 1, gamma = 1, no warm start, full participation and uniform weights is
SCAFFOLD: same client, and c <- c + mean_i (c_i+ - c) equals SCAFFOLD's c + mean_i (c_i+ - c_i)
because SCAFFOLD keeps c = mean_i c_i. The first round is bitwise identical (all controls start
at zero, so both uploads are the same tensors); later rounds agree up to float32 rounding of
the two algebraically equal sums.
"""

import pytest
import torch
from fedswa import get_algorithm, run_federated

torch.manual_seed(0)
PARTS = [(torch.randn(40, 6) + i, torch.randint(0, 3, (40,))) for i in range(4)]


def _mlp():
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def _pair(rounds):
    kw = dict(rounds=rounds, clients_per_round=4, local_steps=5, batch_size=10, eta0=0.05, seed=3)
    mo = get_algorithm(
        "fedmoswa", rho=1.0, gamma=1.0, warm_start=False, lr_factor=1.0, weights="uniform"
    )
    return run_federated(_mlp, PARTS, mo, **kw), run_federated(_mlp, PARTS, "scaffold", **kw)


def test_fedmoswa_round_one_is_bitwise_scaffold():
    a, b = _pair(1)
    for k, v in a.state.model_state.items():
        assert torch.equal(v, b.state.model_state[k]), k
    for k, v in a.state.control.items():
        assert torch.equal(v, b.state.control[k]), k
    for cid in range(4):
        ca, cb = a.controls.get(cid), b.controls.get(cid)
        assert all(torch.equal(ca[k], cb[k]) for k in ca)


def test_fedmoswa_tracks_scaffold_over_rounds():
    a, b = _pair(4)
    for k, v in a.state.model_state.items():
        torch.testing.assert_close(v, b.state.model_state[k], atol=1e-6, rtol=0)
    for cid in range(4):
        ca, cb = a.controls.get(cid), b.controls.get(cid)
        for k in ca:
            torch.testing.assert_close(ca[k], cb[k], atol=1e-6, rtol=0)


@pytest.mark.parametrize("per_round", [1, 2, 3])
def test_scaffold_keeps_c_the_mean_of_all_client_controls(per_round):
    """Karimireddy et al. (2020), Alg. 1: with |S|/N scaling and uniform weights,
    c = (1/N) sum_i c_i over ALL clients after every round (c_i = 0 for clients never drawn)."""
    parts = PARTS + [(torch.randn(40, 6) - 2, torch.randint(0, 3, (40,))) for _ in range(2)]
    hist = run_federated(
        _mlp, parts, "scaffold", rounds=4, clients_per_round=per_round, local_steps=5,
        batch_size=10, eta0=0.05, seed=1,
    )  # fmt: skip
    for k, c in hist.state.control.items():
        mean = sum(hist.controls.get(i)[k] for i in range(len(parts))) / len(parts)
        torch.testing.assert_close(c, mean, atol=1e-6, rtol=0)
