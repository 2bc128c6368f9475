"""Spec §5 test 1 (quantisation) and 12 (headroom), and bad input of the encoding."""

import numpy as np
import pytest
from janus_secagg import JanusParams, dequantize, quantize


def test_weighted_mean_within_half_ulp_of_numpy():
    # fedbiomed #898: weight before masking, decode once on the sum.
    params = JanusParams(dim=257)
    rng = np.random.default_rng(0)
    us = rng.normal(scale=4.0, size=(5, params.dim))
    weights = np.array([1, 2, 3, 4, 10])
    X = sum(quantize(u, int(w), params) for u, w in zip(us, weights, strict=True))
    mean = dequantize(X, params)
    expected = np.average(np.clip(us, -params.clip, params.clip), axis=0, weights=weights)
    assert np.abs(mean - expected).max() <= 2.0 ** -(params.frac_bits + 1)


def test_values_beyond_clip_are_clipped():
    params = JanusParams(dim=4)
    x = quantize([-100.0, -8.0, 8.0, 1e9], 3, params)
    assert x.tolist() == [0, 0, 3 * params.max_code, 3 * params.max_code, 3]
    assert dequantize(x, params).tolist() == [-8.0, -8.0, 8.0, 8.0]


def test_headroom_overflow_names_the_fields():
    # fedbiomed #1210: W_max * 2C * 2^f must stay below 2^63.
    with pytest.raises(ValueError, match=r"max_total_weight.*clip.*frac_bits"):
        JanusParams(dim=4, max_total_weight=2**40, clip=8.0, frac_bits=20)
    JanusParams(dim=4, max_total_weight=2**42, clip=8.0, frac_bits=16)  # 2^62: fits


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"dim": 0}, ValueError, "dim"),
        ({"dim": 2.5}, TypeError, "dim"),
        ({"dim": 2**32 - 1}, ValueError, "dim"),  # l + 1 must fit the 4-byte vector length
        ({"dim": 4, "clip": 1e-3, "frac_bits": 4}, ValueError, ">= 1"),  # everything one code
        ({"dim": 4, "clip": 0.0}, ValueError, "clip"),
        ({"dim": 4, "clip": float("nan")}, ValueError, "clip"),
        # float64 cannot encode u + C to 2^-(f+1) once 2C * 2^f > 2^44 (trial finding F7)
        (
            {"dim": 4, "clip": 2.0**40, "frac_bits": 20, "max_total_weight": 1},
            ValueError,
            "frac_bits",
        ),
        ({"dim": 4, "frac_bits": -1}, ValueError, "frac_bits"),
        ({"dim": 4, "min_clients": 1}, ValueError, "min_clients"),
        ({"dim": 4, "max_total_weight": 0}, ValueError, "max_total_weight"),
        ({"dim": 4, "domain": ""}, TypeError, "domain"),
    ],
)
def test_params_reject_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        JanusParams(**kwargs)


@pytest.mark.parametrize(
    ("u", "weight", "error", "match"),
    [
        ([0.0, np.nan, 0.0], 1, ValueError, "`u`"),
        ([0.0, np.inf, 0.0], 1, ValueError, "`u`"),
        ([0.0, 0.0], 1, ValueError, "`u`"),
        ([[0.0, 0.0, 0.0]], 1, ValueError, "`u`"),
        ([], 1, ValueError, "`u`"),
        (["a", "b", "c"], 1, TypeError, "`u`"),
        # trial finding: the mask used to be ignored (the hidden values were encoded)
        (np.ma.array([0.0, 9.0, 0.0], mask=[0, 1, 0]), 1, ValueError, "`u` has masked"),
        ([0.0, 0.0, 0.0], 0, ValueError, "weight"),
        ([0.0, 0.0, 0.0], 2**21, ValueError, "weight"),
        ([0.0, 0.0, 0.0], 1.5, TypeError, "weight"),
    ],
)
def test_quantize_rejects_bad_input(u, weight, error, match):
    with pytest.raises(error, match=match):
        quantize(u, weight, JanusParams(dim=3))


@pytest.mark.parametrize(
    ("X", "error", "match"),
    [
        (np.array([1, 2], dtype=np.int64), ValueError, "`X`"),
        (np.array([1.0, 2.0, 3.0, 1.0]), TypeError, "`X`"),
        (np.array([1, 2, 3, 0], dtype=np.int64), ValueError, "total weight"),
        (np.array([-1, 2, 3, 1], dtype=np.int64), ValueError, "negative"),
        (np.array([2**40, 2, 3, 1], dtype=np.int64), ValueError, "above"),
    ],
)
def test_dequantize_rejects_bad_input(X, error, match):
    with pytest.raises(error, match=match):
        dequantize(X, JanusParams(dim=3))


def test_bound_holds_at_the_largest_allowed_code_range():
    # trial finding F7: 2C * 2^f = 2^44 is the largest allowed; u + C still encodes to 2^-(f+1)
    params = JanusParams(dim=3, clip=2.0**27, frac_bits=16, max_total_weight=1)
    u = np.array([0.3, 1e-5, -123.456789])
    error = np.abs(dequantize(quantize(u, 1, params), params) - u).max()
    assert error <= 2.0**-17 * (1 + 2.0**-9)
