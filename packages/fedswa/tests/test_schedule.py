"""Spec test 1: the cyclic local LR and the round schedule against their closed forms."""

import math

import pytest
from fedswa import cyclic_lr, round_lr


@pytest.mark.parametrize("K", [1, 2, 7, 50])
@pytest.mark.parametrize("rho", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("eta", [0.05, 1.7])
def test_cyclic_lr_endpoints_and_sum(K, rho, eta):
    rates = [cyclic_lr(k, K, eta, rho) for k in range(K)]
    assert rates[0] == pytest.approx(eta, abs=1e-12)
    assert rates[-1] == pytest.approx(eta * (1 - (K - 1) * (1 - rho) / K), abs=1e-12)
    closed = K * eta * (1 + rho) / 2 + eta * (1 - rho) / 2
    assert math.fsum(rates) == pytest.approx(closed, abs=1e-12)


def test_cyclic_lr_is_constant_at_rho_one():
    assert {cyclic_lr(k, 9, 0.2, 1.0) for k in range(9)} == {0.2}


def test_round_lr_cosine_and_exp_closed_forms():
    assert round_lr(0, 30, 0.05) == pytest.approx(0.05, abs=1e-15)
    assert round_lr(15, 30, 0.05) == pytest.approx(0.025, abs=1e-15)
    assert round_lr(30, 30, 0.05) == pytest.approx(0.0, abs=1e-15)
    assert round_lr(10, 30, 0.05, kind="exp") == pytest.approx(0.05 * 0.998**10, abs=1e-15)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: cyclic_lr(0, 0, 0.1), ValueError, "`K`"),
        (lambda: cyclic_lr(5, 5, 0.1), ValueError, "`k`"),
        (lambda: cyclic_lr(-1, 5, 0.1), ValueError, "`k`"),
        (lambda: cyclic_lr(0, 5, 0.0), ValueError, "`eta`"),
        (lambda: cyclic_lr(0, 5, float("nan")), ValueError, "`eta`"),
        (lambda: cyclic_lr(0, 5, 0.1, rho=1.5), ValueError, "`rho`"),
        (lambda: cyclic_lr(0, 5, 0.1, rho=-0.1), ValueError, "`rho`"),
        (lambda: cyclic_lr(0.5, 5, 0.1), TypeError, "`k`"),
        (lambda: round_lr(0, 0, 0.1), ValueError, "`T`"),
        (lambda: round_lr(11, 10, 0.1), ValueError, "`t`"),
        (lambda: round_lr(0, 10, -1.0), ValueError, "`eta0`"),
        (lambda: round_lr(0, 10, 0.1, kind="step"), ValueError, "`kind`"),
    ],
)
def test_schedule_rejects_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
