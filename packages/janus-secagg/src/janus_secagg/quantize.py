"""Offset-binary fixed-point encoding of a weighted update (spec §2, step 1).

x = [w · rint((clip(u, ±C) + C) · 2^f), w] ∈ N^{l+1}: non-negative, so commitment scalars stay
short (about f + 24 bits) and the weight coordinate reveals only the round's total weight.
Weighting happens before masking and the sum is decoded once (fedbiomed #898, openfl PR #1407).
"""

import numbers

import numpy as np

from icml25_core import check_array, check_scalar

from .params import JanusParams


def quantize(u, weight, params: JanusParams) -> np.ndarray:
    """Encode a client's update and weight as non-negative integers.

    Parameters
    ----------
    u : array_like of shape (l,), real, finite
        The client's update (e.g. local model minus global model).
    weight : int
        w >= 1, the client's weight (e.g. its number of training examples), <= W_max.
    params : JanusParams
        l = ``params.dim``, C = ``params.clip``, f = ``params.frac_bits``.

    Returns
    -------
    numpy.ndarray of shape (l + 1,), int64
        x_j = w · rint((clip(u_j, -C, C) + C) · 2^f) for j < l, and x_l = w.

    Raises
    ------
    TypeError
        If `u` is not numeric or `weight` not an int.
    ValueError
        If `u` has the wrong length, holds NaN/inf or masked entries, or `weight` is outside
        [1, W_max].

    Notes
    -----
    Source: spec §2 step 1 (Janus-style reconstruction). Rounding is numpy's rint (half to
    even), so |dequantised − clipped| <= 2^-(f+1) per client and for any weighted mean.
    """
    if np.ma.isMaskedArray(u) and np.ma.getmaskarray(u).any():
        raise ValueError("`u` has masked entries; fill them (u.filled(...)) before encoding")
    u = check_array(u, "u", ndim=1, shape=(params.dim,), cast=np.float64)
    check_scalar(weight, "weight", kind=numbers.Integral, low=1, high=params.max_total_weight)
    c = float(params.clip)
    codes = np.rint((np.clip(u, -c, c) + c) * 2.0**params.frac_bits).astype(np.int64)
    return np.append(codes * np.int64(weight), np.int64(weight))


def dequantize(X, params: JanusParams) -> np.ndarray:
    """Decode a sum of encoded updates into the weighted mean update.

    Parameters
    ----------
    X : array_like of shape (l + 1,), integer, non-negative
        Σ_i x_i over the participants; X_l is the total weight W.
    params : JanusParams

    Returns
    -------
    numpy.ndarray of shape (l,), float64
        X[:l] / (2^f · X[l]) − C, the weighted mean of the clipped updates to 2^-(f+1).

    Raises
    ------
    TypeError
        If `X` is not an integer array.
    ValueError
        If `X` has the wrong length, X_l is outside [1, W_max], or a coordinate is negative or
        above X_l · rint(2C · 2^f) (not the sum of valid encodings).

    Notes
    -----
    Source: spec §2 step 7. Every coordinate is below 2^63 (checked by ``JanusParams``), so
    the float64 division is of exactly represented integers up to 2^53 and rounds once above.
    """
    X = check_array(X, "X", ndim=1, shape=(params.length,), dtype="integer")
    total = int(X[-1])
    if not 1 <= total <= params.max_total_weight:
        raise ValueError(
            f"`X` has total weight X[l] = {total}, outside [1, {params.max_total_weight}]"
        )
    body = X[:-1]
    if X.dtype.kind == "i" and (body < 0).any():
        raise ValueError("`X` has negative coordinates; not a sum of encodings")
    if (body.astype(np.uint64) > np.uint64(total * params.max_code)).any():
        raise ValueError(
            f"`X` has a coordinate above X[l] * rint(2C * 2^f) = {total * params.max_code}; "
            "not a sum of encodings"
        )
    return body.astype(np.float64) / (2.0**params.frac_bits * total) - float(params.clip)
