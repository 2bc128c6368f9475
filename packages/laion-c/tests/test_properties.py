"""Property-based tests of the LAION-C distortions, their parameters and the superclass scores."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from laion_c import PARAMS, aggregate, distort, predict, superclass_matrix, wilson_interval
from laion_c.functional import checker_offsets, line_columns, mosaic_colors
from laion_c.params import CHECKER_SIZE

levels = st.integers(1, 5)
seeds = st.integers(0, 2**32 - 1)
# the distortions that need no tile library (mosaic and stickers draw from real photos' tiles)
NO_TILES = ["glitched", "vertical_lines", "geometric_shapes", "luminance_checkerboard"]


def images(min_side=32, max_side=56):  # the library refuses images under 32 x 32
    shape = st.tuples(st.integers(min_side, max_side), st.integers(min_side, max_side))
    return shape.flatmap(lambda hw: hnp.arrays(np.uint8, (*hw, 3)))


@given(images(), st.sampled_from(NO_TILES), levels, seeds)
@settings(max_examples=25)
def test_every_distortion_keeps_shape_and_dtype_and_is_seeded(image, name, level, seed):
    """A distortion maps a uint8 (H, W, 3) image to a uint8 image of the same size (the
    official code distorts the 224 x 224 crop in place), and the same seed gives the same
    image."""
    out = distort(image, name, level, rng=seed)
    assert out.shape == image.shape
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, distort(image, name, level, rng=seed))


@given(images(), levels, seeds)
def test_luminance_checkerboard_moves_each_pixel_by_at_most_the_levels_offset(image, level, seed):
    """Every pixel moves by at most the level's largest offset ``b`` (0-255 units, + 1 for
    float rounding): a clipped additive checkerboard."""
    _, high = PARAMS["luminance_checkerboard"][level]
    out = distort(image, "luminance_checkerboard", level, rng=seed)
    change = np.abs(out.astype(np.int64) - image.astype(np.int64))
    assert change.max() <= high + 1


@given(st.integers(1, 40), st.integers(1, 40), levels, seeds)
def test_checker_offsets_alternate_in_sign_with_magnitudes_in_the_levels_range(h, w, level, seed):
    """Offsets ``(-1)^(i+j) s_ij / 255`` with ``s_ij ~ U[a, b]``: one per 14-px square, signs
    alternating like a checkerboard, magnitudes in [a, b]/255."""
    low, high = PARAMS["luminance_checkerboard"][level]
    offsets = checker_offsets(np.random.default_rng(seed), low, high, h, w)
    assert offsets.shape == (-(-h // CHECKER_SIZE), -(-w // CHECKER_SIZE))
    magnitude = np.abs(offsets.astype(np.float64)) * 255
    assert (magnitude >= low - 1e-3).all()
    assert (magnitude <= high + 1e-3).all()
    i, j = np.indices(offsets.shape)
    expected_sign = np.where((i + j) % 2 == 0, 1.0, -1.0)
    nonzero = magnitude > 1e-6
    assert (np.sign(offsets[nonzero]) == expected_sign[nonzero]).all()


@given(st.integers(1, 300), st.integers(1, 300))
def test_line_columns_are_ordered_blocks_inside_the_image(width, n_lines):
    """Line i sits at ``x_i = i W / l`` over the block ``[int(x_i), min(int(x_i + W / l), W))``
    (official ``apply_distortions.py``): blocks ordered, inside the image and at most
    ``ceil(W / l) + 1`` wide. (The official float rounding may leave the last column out of
    every block, so full coverage is not a property of the rule.)"""
    x, c0, c1 = line_columns(width, n_lines)
    np.testing.assert_allclose(x, np.arange(n_lines) * width / n_lines, rtol=1e-12)
    assert (c0 <= c1).all()
    assert (c1 <= width).all()
    assert (np.diff(c0) >= 0).all()
    assert (c1 - c0 <= -(-width // n_lines) + 1).all()


@given(images(), st.sampled_from(sorted(set(PARAMS["mosaic"].values()))))
def test_mosaic_colors_are_one_rgb_colour_per_tile_in_the_unit_range(image, t):
    """The mosaic's block colours: an (H // t, W // t, 3) grid of colours in [0, 1]."""
    colors = mosaic_colors(image, t)
    assert colors.shape == (image.shape[0] // t, image.shape[1] // t, 3)
    assert (colors >= 0).all()
    assert (colors <= 1).all()


probs = hnp.arrays(
    np.float64, st.tuples(st.integers(1, 6), st.just(1000)), elements=st.floats(0, 1)
).filter(lambda p: (p.sum(axis=1) > 0).all())


@given(probs, st.data())
@settings(max_examples=25)
def test_superclass_scores_are_member_means_and_ignore_member_order(p, data):
    """Scores are the mean probability of each superclass's members (official evaluation):
    equal to a loop over the members, unchanged when classes inside a superclass swap, and the
    prediction is a valid superclass index."""
    matrix = superclass_matrix()
    p = p / p.sum(axis=1, keepdims=True)
    scores = aggregate(p)
    for j in range(matrix.shape[1]):
        members = np.flatnonzero(matrix[:, j])
        np.testing.assert_allclose(scores[:, j], p[:, members].mean(axis=1), rtol=1e-12)
    j = data.draw(st.integers(0, matrix.shape[1] - 1))
    members = np.flatnonzero(matrix[:, j])
    swapped = p.copy()
    swapped[:, members] = p[:, data.draw(st.permutations(members))]
    np.testing.assert_allclose(aggregate(swapped), scores, rtol=1e-12)
    predicted = predict(p)
    assert ((predicted >= 0) & (predicted < matrix.shape[1])).all()


@given(st.integers(1, 10_000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_interval_holds_the_estimate_and_widens_with_the_confidence(counts):
    """The Wilson interval lies in [0, 1], contains ``c / n`` and is nested: a higher confidence
    gives a wider interval (Wilson 1927)."""
    correct, total = counts
    low90, high90 = wilson_interval(correct, total, confidence=0.9)
    low99, high99 = wilson_interval(correct, total, confidence=0.99)
    assert 0 <= low99 <= low90 <= correct / total <= high90 <= high99 <= 1
