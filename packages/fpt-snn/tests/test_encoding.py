"""Sequence encodings and the digits loader (real data from scikit-learn)."""

import pytest
import torch
from fpt_snn import digits_sequences, pixel_sequential, rate_encode, row_sequential


def test_row_sequential_repeats_each_row_dwell_times():
    images = torch.arange(2 * 3 * 4, dtype=torch.float32).reshape(2, 3, 4)
    seq = row_sequential(images, dwell=2)
    assert seq.shape == (6, 2, 4)
    for t in range(6):
        assert torch.equal(seq[t], images[:, t // 2, :])


def test_pixel_sequential_is_row_major():
    images = torch.arange(2 * 3 * 4, dtype=torch.float32).reshape(2, 3, 4)
    seq = pixel_sequential(images)
    assert seq.shape == (12, 2, 1)
    assert torch.equal(seq[:, 1, 0], images[1].reshape(-1))


def test_rate_encode_mean_matches_probability():
    p = torch.tensor([0.0, 0.25, 1.0])
    spikes = rate_encode(p, 40_000, generator=torch.Generator().manual_seed(0))
    assert spikes.shape == (40_000, 3)
    se = (0.25 * 0.75 / 40_000) ** 0.5
    assert abs(float(spikes[:, 1].mean()) - 0.25) < 4 * se
    assert spikes[:, 0].sum() == 0
    assert spikes[:, 2].sum() == 40_000


def test_digits_sequences_split_and_shapes():
    data = digits_sequences(dwell=4)
    assert data.x_train.shape == (32, 1437, 8)
    assert data.x_test.shape == (32, 360, 8)
    assert float(data.x_train.max()) == 1.0
    assert float(data.x_train.min()) == 0.0
    counts = torch.bincount(data.y_test, minlength=10)
    assert counts.min() >= 35  # stratified: ~36 per class


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: row_sequential(torch.ones(2, 3)), ValueError, "`images`"),
        (lambda: row_sequential(torch.ones(2, 3, 3, dtype=torch.int64)), TypeError, "`images`"),
        (lambda: row_sequential(torch.ones(0, 3, 3)), ValueError, "`images`"),
        (lambda: row_sequential(torch.full((1, 2, 2), float("nan"))), ValueError, "`images`"),
        (lambda: row_sequential(torch.ones(2, 3, 3), dwell=0), ValueError, "`dwell`"),
        (lambda: pixel_sequential([[1.0]]), TypeError, "`images`"),
        (lambda: rate_encode(torch.tensor([1.5]), 3), ValueError, "`x`"),
        (lambda: rate_encode(torch.tensor([0.5]), 0), ValueError, "`T`"),
        (lambda: rate_encode(torch.tensor([1]), 3), TypeError, "`x`"),
        (lambda: rate_encode(torch.tensor([0.5]), 3, generator=1), TypeError, "`generator`"),
        (lambda: digits_sequences(dwell=0), ValueError, "`dwell`"),
        (lambda: digits_sequences(test_size=1.0), ValueError, "`test_size`"),
        (lambda: digits_sequences(random_state=0.5), TypeError, "`random_state`"),
        (lambda: digits_sequences(dtype=torch.int64), TypeError, "`dtype`"),
        (lambda: digits_sequences(dtype="float32"), TypeError, "`dtype`"),
        (lambda: digits_sequences(test_size=0.001), ValueError, "`test_size`"),
        (lambda: digits_sequences(test_size=0.999), ValueError, "`test_size`"),
    ],
)
def test_bad_input_is_rejected_encoding(call, error, match):
    with pytest.raises(error, match=match):
        call()
