"""``convergence_report`` against the exact LIF (and its own definition on small cases)."""

import pytest
import torch
from fpt_snn import convergence_report, fpt_lif, lif_sequential


def test_report_zero_at_K_ge_T_and_first_wrong_step_after_K():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(12, 3000, generator=g, dtype=torch.float64) * 0.8 + 0.6
    rep = convergence_report(x, 12)
    assert list(rep.K) == list(range(1, 13))
    assert rep.mismatch[-1] == 0.0
    assert rep.first_wrong_step[-1] is None
    for K, first in zip(rep.K, rep.first_wrong_step, strict=True):
        assert first is None or first > K  # steps t <= K are exact
    exact = lif_sequential(x)
    assert rep.rate == pytest.approx(float(exact.mean()))
    k2 = fpt_lif(x, K=2, spike_fn="heaviside", sample="none")
    assert rep.mismatch[1] == pytest.approx(float((k2 != exact).double().mean()))


def test_report_snntorch_convention_and_rows():
    x = torch.full((5, 2), 0.7, dtype=torch.float64)
    rep = convergence_report(x, 5, convention="snntorch", tau=3.0)
    assert rep.as_rows()[-1] == (5, 0.0, None)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((torch.ones(3, 2), 0), {}, ValueError, "`K_max`"),
        ((torch.ones(3, 2), 2.0), {}, TypeError, "`K_max`"),
        ((torch.ones(3, 2), 10**12), {}, ValueError, "`K_max`"),
        ((torch.ones(3, 2), 2), {"K": 3}, ValueError, "lif_kwargs"),
        ((torch.ones(0, 2), 2), {}, ValueError, "`x`"),
        ((torch.ones(3, 2, dtype=torch.int64), 2), {}, TypeError, "`x`"),
        ((torch.full((3, 2), float("nan")), 2), {}, ValueError, "`x`"),
        ((torch.ones(3, 2), 2), {"tau": 0.9}, ValueError, "`tau`"),
    ],
)
def test_bad_input_is_rejected_convergence_report(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        convergence_report(*args, **kwargs)
