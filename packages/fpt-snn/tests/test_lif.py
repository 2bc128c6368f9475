"""The exact LIF against spikingjelly and snntorch, and its matrix form against the recursion."""

import math

import pytest
import torch
from fpt_snn import decay_from_tau, lambda_matrix, lif_sequential, reset_matrix, stateleaky_beta


def _inputs(T, N=400, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(T, N, generator=g, dtype=dtype) * 0.8 + 0.6).contiguous()


@pytest.mark.parametrize("T", [1, 7, 32])
def test_lif_sequential_equals_spikingjelly_lifnode(T):
    from spikingjelly.activation_based import neuron

    x = _inputs(T, dtype=torch.float32)
    node = neuron.LIFNode(tau=2.0, decay_input=False, v_reset=None, v_threshold=1.0, step_mode="m")
    expected = node(x)
    assert torch.equal(lif_sequential(x), expected)


@pytest.mark.parametrize("T", [1, 7, 32])
def test_lif_sequential_snntorch_equals_leaky(T):
    import snntorch

    x = _inputs(T, dtype=torch.float32)
    leaky = snntorch.Leaky(beta=0.5, threshold=1.0, reset_mechanism="subtract")
    mem = leaky.init_leaky()
    spikes = []
    for t in range(T):
        spk, mem = leaky(x[t], mem)
        spikes.append(spk)
    assert torch.equal(lif_sequential(x, convention="snntorch"), torch.stack(spikes))


@pytest.mark.parametrize("convention", ["spikingjelly", "snntorch"])
def test_matrix_form_equals_recursion_membrane(convention):
    # u = Λx − θAs with the exact spikes must reproduce the recursion's spikes, step by step.
    T, theta = 20, 1.0
    x = _inputs(T, N=50)
    s = lif_sequential(x, convention=convention)
    u = lambda_matrix(T, dtype=torch.float64) @ x - theta * (
        reset_matrix(T, convention=convention, dtype=torch.float64) @ s
    )
    fired = (u > theta) if convention == "snntorch" else (u >= theta)
    assert torch.equal(fired.to(s.dtype), s)


def test_lambda_and_reset_matrices_closed_form():
    lam = 1 - 1 / 3.0
    L = lambda_matrix(4, 3.0, dtype=torch.float64)
    expected = torch.tensor(
        [[lam ** max(t - j, 0) if j <= t else 0.0 for j in range(4)] for t in range(4)],
        dtype=torch.float64,
    )
    torch.testing.assert_close(L, expected, rtol=1e-15, atol=0)
    A = reset_matrix(4, 3.0, "snntorch", dtype=torch.float64)
    torch.testing.assert_close(A, (expected - torch.eye(4, dtype=torch.float64)) / lam)
    assert torch.count_nonzero(torch.linalg.matrix_power(A, 4)) == 0  # nilpotent


def test_conversions_closed_form():
    assert decay_from_tau(2.0) == 0.5
    assert stateleaky_beta(0.5) == pytest.approx(1 + math.log(0.5))
    assert math.exp(-(1 - stateleaky_beta(0.3))) == pytest.approx(0.3)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: lif_sequential(torch.ones(3, 2, dtype=torch.int64)), TypeError, "`x`"),
        (lambda: lif_sequential([1.0, 2.0]), TypeError, "`x`"),
        (lambda: lif_sequential(torch.tensor(1.0)), ValueError, "`x`"),
        (lambda: lif_sequential(torch.ones(0, 3)), ValueError, "`x`"),
        (lambda: lif_sequential(torch.tensor([1.0, float("nan")])), ValueError, "`x`"),
        (lambda: lif_sequential(torch.ones(3), tau=1.0), ValueError, "`tau`"),
        (lambda: lif_sequential(torch.ones(3), v_threshold=0.0), ValueError, "`v_threshold`"),
        (lambda: lif_sequential(torch.ones(3), convention="norse"), ValueError, "`convention`"),
        (lambda: lif_sequential(torch.ones(3), surrogate=3), TypeError, "`surrogate`"),
        (lambda: lambda_matrix(0), ValueError, "`T`"),
        (lambda: reset_matrix(3, 0.5), ValueError, "`tau`"),
        (lambda: decay_from_tau(float("inf")), ValueError, "`tau`"),
        (lambda: stateleaky_beta(1.5), ValueError, "`lam`"),
    ],
)
def test_bad_input_is_rejected_lif(call, error, match):
    with pytest.raises(error, match=match):
        call()
