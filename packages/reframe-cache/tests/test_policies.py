"""Refresh policies (spec §5 tests 2, 3, 7) against closed forms, brute force and a sequence
computed by hand from the SS sample's rule."""

import math

import pytest
import torch
from _rc_helpers import Driven, frames, tiny_unet
from reframe_cache import Always, Delta, DeltaInOut, EveryN, Never, ReFrame, parse_policy


def _run(w, seq):
    with torch.inference_mode():
        for t in range(len(seq)):
            w(seq[t : t + 1])
    return w.history


@pytest.mark.parametrize(("k", "T"), [(1, 5), (2, 7), (3, 10), (4, 9), (5, 3)])
def test_every_n_refreshes_exactly_at_multiples_of_k(k, T):
    w = ReFrame(tiny_unet(), "up1", policy=EveryN(k))
    history = _run(w, frames(T))
    assert [t for t, r in enumerate(history) if r] == list(range(0, T, k))
    assert w.skipped == T - math.ceil(T / k)


def test_delta_zero_refreshes_whenever_the_trigger_changes():
    a, b, c = frames(3)
    seq = torch.stack([a, a, b, b, b, c, c])
    assert _run(ReFrame(tiny_unet(), "up1", policy=Delta(0.0)), seq) == [
        True,
        False,
        True,
        False,
        False,
        True,
        False,
    ]


def test_delta_infinite_refreshes_only_at_frame_zero():
    assert (
        _run(ReFrame(tiny_unet(), "up1", policy=Delta(math.inf)), frames(6)) == [True] + [False] * 5
    )


def _drift(T):
    base = frames(1, seed=3)[0] + 0.5
    return torch.stack([base * (1 + 0.01 * t) for t in range(T)])


def test_delta_reference_is_the_last_refresh_so_slow_drift_refreshes():
    T, tau = 20, 0.05
    seq = _drift(T)
    history = _run(ReFrame(tiny_unet(), "up1", policy=Delta(tau)), seq)
    # brute force in float64: SMAPE of c1*x and c2*x (x > 0) is 2|c1 - c2| / (c1 + c2)
    expected, ref = [], None
    for t in range(T):
        c = 1 + 0.01 * t
        refresh = ref is None or 2 * abs(c - ref) / (c + ref) > tau
        ref = c if refresh else ref
        expected.append(refresh)
    assert history == expected
    assert sum(expected[1:]) >= 2


def test_delta_previous_frame_port_never_refreshes_on_slow_drift():
    history = _run(
        ReFrame(tiny_unet(), "up1", policy=Delta(0.05, reference="previous")), _drift(20)
    )
    assert history == [True] + [False] * 19


# SS sample's rule (samples/SS/inference.py 136-160) by hand, tau = 0.3, constant 1x1x2x2 frames:
#   x (trigger): 1, 1.5, 2, 2, 2.5, 2.5;  y (output of frame t): 3, 4, 5, 6, 6, 7
#   SMAPE of constants a, b: 2|a - b| / (a + b).
# official (s = s_in / 2 while no output is stored):
#   t1: s_in(1.5, 1) = 0.4 -> s = 0.2 -> hit
#   t2: s_in(2, 1) = 0.6667 -> s = 0.3333 -> REFRESH, store x_r = 2, y_r = y1 = 4
#   t3: s_in = 0, s_out(y2 = 5, 4) = 0.2222 -> s = 0.1111 -> hit
#   t4: s_in(2.5, 2) = 0.2222, s_out(y3 = 6, 4) = 0.4 -> s = 0.3111 -> REFRESH, y_r = y3 = 6
#   t5: s_in = 0, s_out(y4 = 6, 6) = 0 -> hit
# clean (s = s_in while no output is stored):
#   t1: s = 0.4 -> REFRESH, x_r = 1.5, y_r = y0 = 3
#   t2: s_in(2, 1.5) = 0.2857, s_out(4, 3) = 0.2857 -> 0.2857 -> hit
#   t3: s_in = 0.2857, s_out(5, 3) = 0.5 -> 0.3929 -> REFRESH, x_r = 2, y_r = y2 = 5
#   t4: s_in(2.5, 2) = 0.2222, s_out(6, 5) = 0.1818 -> 0.2020 -> hit
#   t5: same as t4 -> hit
X = [1, 1.5, 2, 2, 2.5, 2.5]
Y = [3, 4, 5, 6, 6, 7]


@pytest.mark.parametrize(
    ("compat", "expected"),
    [
        ("official", [True, False, True, False, True, False]),
        (None, [True, True, False, True, False, False]),
    ],
)
def test_delta_in_out_reproduces_the_ss_rule_by_hand(compat, expected):
    w = ReFrame(Driven().eval(), "deep", policy="delta-in-out-0.3", trigger=0, compat=compat)
    with torch.inference_mode():
        for x, y in zip(X, Y, strict=True):
            out = w(torch.full((1, 1, 2, 2), float(x)), torch.full((1, 1, 2, 2), float(y)))
            assert torch.equal(out, torch.full((1, 1, 2, 2), float(y)))
    assert w.history == expected


def test_parse_policy_names():
    assert isinstance(parse_policy("always"), Always)
    assert isinstance(parse_policy("NEVER"), Never)
    assert parse_policy("N-4").k == 4
    assert parse_policy("delta-0.25").threshold == 0.25
    p = parse_policy("delta-in-out-0.25", compat="official")
    assert isinstance(p, DeltaInOut)
    assert p.compat == "official"
    assert p.threshold == 0.25
    assert parse_policy("delta-inf").threshold == math.inf


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: EveryN(0), ValueError, "`k` must be >= 1"),
        (lambda: EveryN(2.5), TypeError, "`k`"),
        (lambda: Delta(-0.1), ValueError, "`threshold` must be >= 0"),
        (lambda: Delta(float("nan")), ValueError, "`threshold` must not be NaN"),
        (lambda: Delta(0.1, reference="first"), ValueError, "`reference`"),
        (lambda: DeltaInOut(-1), ValueError, "`threshold`"),
        (lambda: DeltaInOut(0.1, compat="new"), ValueError, "`compat`"),
        (lambda: parse_policy("N-x"), ValueError, "`policy` 'N-x' is not understood"),
        (lambda: parse_policy("delta-nan"), ValueError, "`policy`"),
        (lambda: parse_policy(None), TypeError, "`policy`"),
    ],
)
def test_bad_policy_arguments(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_a_nan_trigger_refreshes_instead_of_freezing_the_cache():
    seq = frames(3)
    seq[1] = float("nan")
    assert _run(ReFrame(tiny_unet(), "up1", policy="delta-0.5"), seq) == [True, True, True]
