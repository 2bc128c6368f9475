"""Invariants of WMarkGPT's maths, property-tested with hypothesis (ci / dev profiles of the core's
plugin)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from wmarkgpt import (
    blend_logo,
    expected_score,
    logo_box_from_mask,
    rouge_l,
    score_to_level,
    weight_to_score,
)
from wmarkgpt.metrics import _lcs_table
from wmarkgpt.synth import naive_blend_logo

LEVEL_ORDER = ["obvious", "visible", "moderate", "faint", "invisible"]


@given(st.floats(0, 5), st.floats(0, 5))
def test_levels_are_monotone_in_the_score(a, b):
    # a higher score never gives a more visible level (bands ordered, spec Sec. 2)
    lo, hi = sorted((a, b))
    assert LEVEL_ORDER.index(score_to_level(lo)) <= LEVEL_ORDER.index(score_to_level(hi))


@given(st.floats(0, 0.25))
def test_score_in_range_and_decreasing(w):
    s = weight_to_score(w)
    assert 0 <= s <= 5
    assert s >= weight_to_score(min(0.25, w + 0.01))


@given(
    arrays(np.float64, st.tuples(st.integers(1, 4), st.just(5)), elements=st.floats(-30, 30)),
    st.floats(-50, 50),
)
def test_expected_score_bounded_and_shift_invariant(z, c):
    s = expected_score(z)
    assert np.all(s >= 1 - 1e-12)
    assert np.all(s <= 5 + 1e-12)
    assert np.allclose(expected_score(z + c), s, atol=1e-9)  # softmax ignores a common shift


@given(arrays(bool, st.tuples(st.integers(2, 24), st.integers(2, 24))), st.floats(0, 0.45))
def test_logo_box_inside_the_foreground_box(mask, f):
    if not mask.any() or int(mask.sum() * f) >= int(mask.sum() * (1 - f)):
        return
    x0, y0, x1, y1 = logo_box_from_mask(mask, f)
    ys, xs = np.nonzero(mask)
    assert xs.min() <= x0 < x1 <= xs.max() + 1
    assert ys.min() <= y0 < y1 <= ys.max() + 1
    assert logo_box_from_mask(mask, 0.0) == (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)


@given(st.integers(0, 2**32 - 1), st.floats(0, 1), st.sampled_from(["round", "truncate"]))
def test_vectorised_blend_equals_loop_and_keeps_background(seed, w, quantize):
    rng = np.random.default_rng(seed)
    cover = rng.integers(0, 256, (13, 17, 3), dtype=np.uint8)
    logo = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    mask = rng.random((5, 7)) < 0.5
    mask[2, 3] = True
    xy = (int(rng.integers(0, 11)), int(rng.integers(0, 9)))
    s = blend_logo(cover, logo, mask, weight=w, xy=xy, quantize=quantize, renorm_brightness=False)
    ref = naive_blend_logo(
        cover, logo, mask, weight=w, xy=xy, quantize=quantize, renorm_brightness=False
    )
    assert np.array_equal(s.image, ref)
    bg = np.ones((13, 17), bool)
    bg[xy[1] : xy[1] + 5, xy[0] : xy[0] + 7] &= ~mask
    if quantize == "round":
        assert np.array_equal(s.image[bg], cover[bg])  # only foreground pixels change


def _lcs_brute(x, y):
    table = [[0] * (len(y) + 1) for _ in range(len(x) + 1)]
    for i in range(1, len(x) + 1):
        for j in range(1, len(y) + 1):
            table[i][j] = (
                table[i - 1][j - 1] + 1
                if x[i - 1] == y[j - 1]
                else max(table[i - 1][j], table[i][j - 1])
            )
    return table


WORDS = st.lists(st.sampled_from(["a", "b", "c", "d", "the"]), max_size=12)


@given(WORDS, WORDS)
def test_row_vectorised_lcs_equals_the_textbook_table(x, y):
    assert _lcs_table(x, y).tolist() == _lcs_brute(x, y)


@given(WORDS, WORDS)
def test_rouge_l_f1_symmetric_and_bounded(x, y):
    h, r = " ".join(x), " ".join(y)
    f = rouge_l(h, r)
    assert 0 <= f <= 1
    assert abs(f - rouge_l(r, h)) <= 1e-12
    if x:
        assert abs(rouge_l(h, h) - 1.0) <= 1e-12
