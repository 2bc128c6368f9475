import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from icml25_core import fashion_mnist, read_idx

REAL_DIR = Path("/usr/share/datasets/fashion-mnist")
# IDX type codes from the format's description (http://yann.lecun.com/exdb/mnist/).
TYPE_CODES = {">u1": 0x08, ">i1": 0x09, ">i2": 0x0B, ">i4": 0x0C, ">f4": 0x0D, ">f8": 0x0E}


def idx_bytes(array: np.ndarray, big_endian_dtype: str) -> bytes:
    """Encode `array` as IDX: 0, 0, type code, ndim, big-endian uint32 dims, big-endian data."""
    header = struct.pack(">BBBB", 0, 0, TYPE_CODES[big_endian_dtype], array.ndim)
    dims = struct.pack(f">{array.ndim}I", *array.shape)
    return header + dims + array.astype(big_endian_dtype).tobytes()


def write_idx(path: Path, array: np.ndarray, big_endian_dtype: str = ">u1") -> Path:
    data = idx_bytes(array, big_endian_dtype)
    if path.suffix == ".gz":
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return path


@pytest.fixture
def fashion_dir(tmp_path):
    """Tiny Fashion-MNIST files: 5 train and 3 test images, in the Debian file names."""
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 5), ("t10k", 3)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        write_idx(tmp_path / f"{prefix}-images-idx3-ubyte.gz", images)
        write_idx(tmp_path / f"{prefix}-labels-idx1-ubyte.gz", np.arange(n, dtype=np.uint8))
    return tmp_path


@pytest.mark.parametrize("dtype", list(TYPE_CODES))
@pytest.mark.parametrize("name", ["a.idx", "a.idx.gz"])
def test_read_idx_round_trips_each_type(tmp_path, dtype, name):
    array = (np.arange(30).reshape(2, 3, 5) - (0 if dtype == ">u1" else 3)).astype(dtype)
    result = read_idx(write_idx(tmp_path / name, array, dtype))
    np.testing.assert_array_equal(result, array)
    assert result.dtype == np.dtype(dtype).newbyteorder("=")
    assert result.flags.writeable


def test_read_idx_detects_gzip_by_content(tmp_path):
    path = tmp_path / "no-suffix"
    path.write_bytes(gzip.compress(idx_bytes(np.arange(4, dtype=np.uint8), ">u1")))
    np.testing.assert_array_equal(read_idx(path), np.arange(4))


def test_fashion_mnist_reads_train_split(fashion_dir):
    images, labels = fashion_mnist("train", root=fashion_dir)
    assert (images.shape, images.dtype) == ((5, 28, 28), np.uint8)
    assert labels.dtype == np.int64
    np.testing.assert_array_equal(labels, np.arange(5))


def test_fashion_mnist_reads_t10k_files_for_test_split(fashion_dir):
    images, labels = fashion_mnist("test", root=str(fashion_dir))
    assert (images.shape, labels.shape) == ((3, 28, 28), (3,))


def test_fashion_mnist_honours_env_folder(fashion_dir, monkeypatch):
    monkeypatch.setenv("FASHION_MNIST_DIR", str(fashion_dir))
    assert fashion_mnist("test")[0].shape == (3, 28, 28)


@pytest.mark.skipif(not REAL_DIR.is_dir(), reason="apt-get install dataset-fashion-mnist")
def test_fashion_mnist_reads_debian_files():
    images, labels = fashion_mnist("test", root=REAL_DIR)
    assert (images.shape, images.dtype, labels.dtype) == ((10000, 28, 28), np.uint8, np.int64)
    np.testing.assert_array_equal(np.bincount(labels), [1000] * 10)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", "not an IDX file"),
        (b"\x01\x00\x08\x01", r"not an IDX file \(magic number '01000801'\)"),
        (b"\x00\x00\x07\x01\x00\x00\x00\x01\x00", "unknown IDX type code 0x07"),
        (b"\x00\x00\x08\x02\x00\x00\x00\x01", r"header truncated \(8 bytes for 2 dimensions\)"),
        (b"\x00\x00\x08\x01\x00\x00\x00\x03\x01\x02", "2 data bytes, expected 3 for shape"),
        (b"\x00\x00\x0c\x01\x00\x00\x00\x01\x00\x00\x00\x01\x00", "5 data bytes, expected 4"),
        (gzip.compress(b"\x00\x00\x08\x01\x00\x00\x00\x01\x07")[:-6], "broken gzip data"),
        (b"\x1f\x8b\x08\x00garbage", "broken gzip data"),
    ],
    ids=["empty", "magic", "type-code", "header", "short", "long", "gzip-truncated", "gzip-bad"],
)
def test_read_idx_raises_on_bad_input(tmp_path, content, match):
    path = tmp_path / "bad.idx"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match):
        read_idx(path)


def test_read_idx_raises_for_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_idx(tmp_path / "none.idx")


@pytest.mark.parametrize(
    ("change", "kwargs", "error", "match"),
    [
        (None, {"split": "valid"}, ValueError, "^`split` must be one of 'train', 'test'; got"),
        (
            "remove-labels",
            {},
            FileNotFoundError,
            "train-labels-idx1-ubyte.gz.*sudo apt-get install dataset-fashion-mnist",
        ),
        ("short-labels", {}, ValueError, r"expected 5 uint8 labels, got uint8 \(4,\)"),
        ("wide-images", {}, ValueError, r"expected uint8 images .* got uint8 \(5, 28, 29\)"),
    ],
)
def test_fashion_mnist_raises_on_bad_input(fashion_dir, change, kwargs, error, match):
    labels = fashion_dir / "train-labels-idx1-ubyte.gz"
    if change == "remove-labels":
        labels.unlink()
    elif change == "short-labels":
        write_idx(labels, np.arange(4, dtype=np.uint8))
    elif change == "wide-images":
        write_idx(fashion_dir / "train-images-idx3-ubyte.gz", np.zeros((5, 28, 29), np.uint8))
    with pytest.raises(error, match=match):
        fashion_mnist(root=fashion_dir, **kwargs)


def test_fashion_mnist_missing_default_folder_names_package(monkeypatch, tmp_path):
    monkeypatch.setenv("FASHION_MNIST_DIR", str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match="Debian package dataset-fashion-mnist"):
        fashion_mnist()
