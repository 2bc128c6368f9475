"""Dataset loaders: Debian Fashion-MNIST and scikit-learn digits."""

import pytest
import torch
from fsl_sage import load_digits, load_fashion_mnist


def test_fashion_mnist_is_standardised_float_images():
    x, y = load_fashion_mnist("test", limit=500)
    assert x.shape == (500, 1, 28, 28)
    assert x.dtype == torch.float32
    assert y.dtype == torch.int64
    assert set(y.unique().tolist()) <= set(range(10))
    # standardised with the training-set statistics: test mean ~ 0, std ~ 1
    assert abs(float(x.mean())) < 0.1
    assert abs(float(x.std()) - 1.0) < 0.1


def test_digits_are_8x8_in_unit_range():
    x, y = load_digits()
    assert x.shape == (1797, 1, 8, 8)
    assert float(x.min()) == 0.0
    assert float(x.max()) == 1.0
    assert y.dtype == torch.int64


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"split": "val"}, ValueError, "split"),
        ({"limit": 0}, ValueError, "limit"),
        ({"limit": 2.5}, TypeError, "limit"),
    ],
)
def test_fashion_mnist_rejects_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        load_fashion_mnist(**kwargs)


def test_fashion_mnist_names_the_debian_package_when_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="dataset-fashion-mnist"):
        load_fashion_mnist("train", root=tmp_path)
