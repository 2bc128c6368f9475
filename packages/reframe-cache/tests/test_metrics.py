"""SMAPE (spec §5 test 4) against the float64 formula, PSNR against its closed form, and ꟻLIP
against calling flip-evaluator directly (test 9), as the official compare_images.py does."""

import math

import numpy as np
import pytest
import torch
from reframe_cache import flip, psnr, sequence_psnr, smape


def _smape64(a, b):
    a, b = a.double(), b.double()
    return float(2 * (a - b).abs().mean() / (a.abs() + b.abs()).mean())


@pytest.mark.parametrize("shape", [(7,), (3, 5, 11), (1, 3, 17, 9)])
def test_smape_equals_the_formula_in_float64_and_is_symmetric(shape):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(*shape, generator=g), torch.randn(*shape, generator=g)
    assert float(smape(a, b)) == pytest.approx(_smape64(a, b), rel=1e-6)
    assert float(smape(a, b)) == float(smape(b, a))
    assert float(smape(a, a)) == 0.0


def test_smape_of_two_zero_inputs_is_zero_not_nan():
    z = torch.zeros(4, 4)
    assert float(smape(z, z)) == 0.0
    assert float(smape(z, torch.ones(4, 4))) == 2.0


def test_smape_stays_on_the_inputs_device_as_a_0_dim_tensor():
    s = smape(torch.ones(3), torch.ones(3) * 2)
    assert s.ndim == 0
    assert s.device == torch.device("cpu")
    assert s.dtype == torch.float32


@pytest.mark.parametrize(
    ("a", "b", "error", "match"),
    [
        (torch.ones(3), torch.ones(4), ValueError, "same shape"),
        (torch.ones(3, dtype=torch.int64), torch.ones(3), TypeError, "`a`"),
        (torch.ones(0), torch.ones(0), ValueError, "`a` must not be empty"),
        ([1.0], torch.ones(1), TypeError, "`a`"),
    ],
)
def test_smape_bad_input(a, b, error, match):
    with pytest.raises(error, match=match):
        smape(a, b)


def test_psnr_matches_its_closed_form_and_clamps():
    a = torch.full((1, 3, 4, 4), 0.5)
    b = torch.full((1, 3, 4, 4), 0.75)  # exact in binary: MSE = 1/16
    assert psnr(a, b) == pytest.approx(10 * math.log10(16), rel=1e-12)
    assert psnr(torch.full((3, 2, 2), 1.7), torch.ones(3, 2, 2)) == math.inf  # clamped to 1
    assert sequence_psnr([0.0, 0.02]) == pytest.approx(10 * math.log10(1 / 0.01))


@pytest.mark.parametrize(
    ("a", "b", "error", "match"),
    [
        (torch.ones(3, 4), torch.ones(3, 4), ValueError, "`a`"),
        (torch.ones(1, 3, 4, 4), torch.ones(1, 3, 4, 5), ValueError, "same shape"),
        (torch.full((3, 4, 4), float("nan")), torch.ones(3, 4, 4), ValueError, "`a` contains NaN"),
    ],
)
def test_psnr_bad_input(a, b, error, match):
    with pytest.raises(error, match=match):
        psnr(a, b)


def test_flip_equals_flip_evaluator_called_on_png_files(tmp_path):
    flip_evaluator = pytest.importorskip("flip_evaluator")
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(0)
    ref8 = rng.integers(0, 256, (24, 32, 3), dtype=np.uint8)
    test8 = np.clip(ref8.astype(int) + rng.integers(-40, 41, ref8.shape), 0, 255).astype(np.uint8)
    cv2.imwrite(str(tmp_path / "ref.png"), ref8[..., ::-1])  # RGB -> BGR for OpenCV
    cv2.imwrite(str(tmp_path / "test.png"), test8[..., ::-1])
    _, direct, _ = flip_evaluator.evaluate(
        str(tmp_path / "ref.png"), str(tmp_path / "test.png"), "LDR"
    )
    as_tensor = lambda x: torch.from_numpy(x).permute(2, 0, 1).float() / 255  # noqa: E731
    ours = flip(as_tensor(ref8), as_tensor(test8))
    assert direct > 0.01
    assert ours == pytest.approx(float(direct), rel=1e-5, abs=1e-7)


def test_flip_of_identical_images_is_zero_and_batches_average():
    pytest.importorskip("flip_evaluator")
    a = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    assert flip(a, a) == 0.0
    b = a.clone()
    b[1] = 1 - b[1]
    assert flip(a, b) == pytest.approx(flip(a[1], b[1]) / 2, rel=1e-6)


def test_flip_rejects_non_rgb():
    with pytest.raises(ValueError, match="3 \\(RGB\\) channels"):
        flip(torch.rand(1, 4, 8, 8), torch.rand(1, 4, 8, 8))
