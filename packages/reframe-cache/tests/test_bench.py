"""bench.run: the cost identities (FLOP cut = s*e, Amdahl), quality bookkeeping, bad input."""

import math

import pytest
import torch
from _rc_helpers import frames, hand_unet_flops, tiny_unet
from reframe_cache import amdahl_bound, bench_run


def test_bench_reports_exact_costs_and_quality_bookkeeping():
    net = tiny_unet(residual=True)
    seq = frames(8, size=(16, 16))
    r = bench_run(net, seq, cache="up1", policy="N-4", reference=seq, repeats=1, warmup=1)
    full, hit = hand_unet_flops((4, 8, 8, 8), 3, 3, 16, 16)
    assert (r.flops_full, r.flops_hit) == (full, hit)
    assert r.e == 1 - hit / full
    assert r.skipped == 8 - math.ceil(8 / 4)
    assert r.skip_rate == 0.75
    assert r.flops_reduction == pytest.approx(0.75 * r.e, abs=1e-12)
    assert r.amdahl_bound == pytest.approx(1 / (1 - 0.75 * r.e), rel=1e-12)
    assert r.history == [True, False, False, False] * 2
    assert r.bitwise_refresh_equal
    assert all(math.isinf(r.psnr_vs_baseline[t]) for t in (0, 4))
    assert r.flip_vs_baseline is not None
    assert r.flip_vs_baseline[0] == 0.0
    assert r.speedup is not None
    assert r.speedup > 0
    assert r.wall_trigger_s > 0
    assert r.machine["batch"] == 1
    assert "unreliable" in r.machine


def test_always_policy_has_no_loss():
    r = bench_run(tiny_unet(), frames(3), cache="up1", policy="always", repeats=0)
    assert r.skip_rate == 0
    assert math.isinf(r.sequence_psnr_vs_baseline)
    assert r.speedup is None
    assert r.amdahl_bound == 1.0


def test_amdahl_bound_closed_form():
    assert amdahl_bound(0.75, 0.7263) == pytest.approx(1 / (1 - 0.75 * 0.7263))
    assert amdahl_bound(1.0, 1.0) == math.inf


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"frames": torch.rand(3, 16, 16)}, ValueError, "`frames`"),
        ({"frames": torch.ones(2, 3, 16, 16, dtype=torch.int64)}, TypeError, "`frames`"),
        ({"frames": torch.full((2, 3, 16, 16), float("nan"))}, ValueError, "`frames` contains NaN"),
        ({"frames": torch.rand(0, 3, 16, 16)}, ValueError, "`frames`"),
        ({"reference": torch.rand(3, 3, 16, 16)}, ValueError, "`reference` must have 2 frames"),
        ({"repeats": -1}, ValueError, "`repeats`"),
        ({"policy": "N-0"}, ValueError, "`policy` .N-0.: k must be >= 1"),
    ],
)
def test_bad_input(kwargs, error, match):
    args = {"frames": frames(2), "cache": "up1", "policy": "N-2", "repeats": 0} | kwargs
    with pytest.raises(error, match=match):
        bench_run(tiny_unet(), args.pop("frames"), **args)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: amdahl_bound(1.5, 0.5), "`skip_rate`"),
        (lambda: amdahl_bound(0.5, float("nan")), "`e`"),
    ],
)
def test_amdahl_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
