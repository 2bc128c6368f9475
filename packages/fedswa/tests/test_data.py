"""Real inputs: Fashion-MNIST from the Debian package and scikit-learn's digits."""

import pytest
import torch
from fedswa import load_digits, load_fashion_mnist


def test_fashion_mnist_shapes_dtypes_and_range():
    x_train, y_train, x_test, y_test = load_fashion_mnist()
    assert x_train.shape == (60000, 1, 28, 28)
    assert x_test.shape == (10000, 1, 28, 28)
    assert x_train.dtype == torch.float32
    assert y_train.dtype == torch.int64
    assert float(x_test.min()) >= 0.0
    assert float(x_test.max()) <= 1.0
    assert torch.equal(torch.bincount(y_test), torch.full((10,), 1000))


def test_missing_fashion_mnist_names_the_debian_package(tmp_path):
    with pytest.raises(FileNotFoundError, match="dataset-fashion-mnist"):
        load_fashion_mnist(root=tmp_path)


def test_digits_shapes():
    x, y = load_digits()
    assert x.shape == (1797, 1, 8, 8)
    assert y.shape == (1797,)
    assert float(x.max()) <= 1.0


@pytest.mark.parametrize(
    ("args", "match"),
    [((0, 10, 10), "`in_features`"), ((64, 0, 10), "`hidden`"), ((64, 8, 1), "`num_classes`")],
)
def test_mlp_rejects_bad_sizes(args, match):
    from fedswa import mlp

    with pytest.raises(ValueError, match=match):
        mlp(*args)
