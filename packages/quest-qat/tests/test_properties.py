"""Property-based tests of QuEST's quantizer, Hadamard rotation, int4 packing and grids."""

import math

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from quest_qat import (
    block_hadamard,
    grid_levels,
    hadamard_matrix,
    pack_int4,
    quantize_codes,
    quest_quantize,
    unpack_int4,
)

blocks = st.sampled_from([1, 2, 4, 8])
bit_widths = st.integers(1, 8)


@st.composite
def rows(draw, max_rows=4, max_blocks=3):
    """A float64 tensor (rows, K) with K a multiple of the drawn Hadamard block, and the block."""
    block = draw(blocks)
    n_rows = draw(st.integers(1, max_rows))
    k = block * draw(st.integers(1, max_blocks))
    values = hnp.arrays(
        np.float64, (n_rows, k), elements=st.floats(-1e3, 1e3, allow_subnormal=False)
    )
    return torch.from_numpy(draw(values)), block


@given(rows(), bit_widths)
def test_codes_lie_on_the_b_bit_grid_and_rebuild_x_hat_exactly(item, bits):
    """Codes are ints in [-2^(b-1), 2^(b-1) - 1] and ``(codes + 1/2)·Δ == x̂`` (QuEST §3's
    mid-rise grid), for any input, block and bit-width."""
    x, block = item
    codes, step = quantize_codes(x, bits, block=block)
    assert codes.dtype == torch.int8
    assert int(codes.min()) >= -(2 ** (bits - 1))
    assert int(codes.max()) <= 2 ** (bits - 1) - 1
    x_hat, _, step_q = quest_quantize(x, bits, block=block)
    torch.testing.assert_close(step, step_q, rtol=0, atol=0)
    torch.testing.assert_close((codes.double() + 0.5) * step, x_hat, rtol=0, atol=0)


@given(rows(), bit_widths)
def test_x_hat_takes_at_most_2_to_the_b_values_per_row(item, bits):
    """Each row of x̂ is on a uniform grid of 2^b levels spaced Δ apart: at most 2^b distinct
    values, each an odd multiple of Δ/2."""
    x, block = item
    x_hat, _, step = quest_quantize(x, bits, block=block)
    for row, delta in zip(x_hat, step[:, 0], strict=True):
        assert torch.unique(row).numel() <= 2**bits
        halves = row / (delta / 2)
        assert torch.allclose(halves, halves.round(), atol=1e-6)
        assert bool((halves.round().remainder(2) == 1).all())


@given(rows(), bit_widths, st.floats(0.25, 4.0))
def test_trust_mask_is_the_distance_rule_in_the_rotated_basis(item, bits, trust):
    """The gradient mask is ``|x̂ - x_h| <= s·Δ/2`` with ``x_h = x·blockdiag(H)`` (QuEST §3,
    the trust estimator); x̂ is returned in the rotated basis (``half=True``)."""
    x, block = item
    x_hat, mask, step = quest_quantize(x, bits, block=block, trust=trust)
    x_h = block_hadamard(x, block)
    distance = (x_hat - x_h).abs()
    bound = trust * step / 2
    clear = (distance - bound).abs() > 1e-9 * step  # away from the boundary's rounding
    assert torch.equal(mask[clear], (distance <= bound)[clear])


@given(rows(max_blocks=4))
def test_block_hadamard_is_orthogonal_and_its_own_inverse(item):
    """H_n/√n is symmetric orthogonal: the rotation preserves each row's norm and applying it
    twice gives x back (block_hadamard normalises by 1/√block)."""
    x, block = item
    y = block_hadamard(x, block)
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1), rtol=1e-10, atol=1e-9)
    torch.testing.assert_close(block_hadamard(y, block), x, rtol=1e-10, atol=1e-9)


@given(st.sampled_from([1, 2, 4, 8, 16, 32]))
def test_hadamard_matrix_rows_are_orthogonal_plus_minus_entries(n):
    """Sylvester's H_n has entries ±1/√n and H Hᵀ = I."""
    h = hadamard_matrix(n, dtype=torch.float64)
    torch.testing.assert_close(h.abs(), torch.full((n, n), 1 / math.sqrt(n), dtype=torch.float64))
    torch.testing.assert_close(h @ h.T, torch.eye(n, dtype=torch.float64))


int4_codes = st.tuples(st.integers(1, 4), st.integers(1, 8)).flatmap(
    lambda shape: hnp.arrays(np.int8, (shape[0], 2 * shape[1]), elements=st.integers(-8, 7))
)


@given(int4_codes)
def test_pack_then_unpack_int4_is_the_identity(codes):
    """unpack(pack(c)) == c for every int4 code matrix, two codes per byte."""
    tensor = torch.from_numpy(codes)
    packed = pack_int4(tensor)
    assert packed.dtype == torch.uint8
    assert packed.shape == (codes.shape[0], codes.shape[1] // 2)
    assert torch.equal(unpack_int4(packed), tensor)


@given(bit_widths)
def test_int_grid_levels_are_symmetric_and_evenly_spaced(bits):
    """The mid-rise grid of unit-RMS input: 2^b sorted levels, symmetric about 0, equally
    spaced, outer level α_b (QuEST §3)."""
    levels = grid_levels(bits)
    assert levels.shape == (2**bits,)
    np.testing.assert_allclose(levels, -levels[::-1], atol=1e-12)
    gaps = np.diff(levels)
    np.testing.assert_allclose(gaps, gaps[0], rtol=1e-9)
    assert (gaps > 0).all()
