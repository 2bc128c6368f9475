"""Readers for datasets that several libraries use (DECISIONS.md item 1): Fashion-MNIST.

The files come from the Debian package ``dataset-fashion-mnist``, which installs
``{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz`` in ``/usr/share/datasets/fashion-mnist/``.
Model code, partitioning and transforms stay in each library.
"""

import gzip
import math
import os
import struct
import zlib
from pathlib import Path

import numpy as np

from icml25_core.validation import check_choice

_DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"
_FASHION_MNIST_ENV = "FASHION_MNIST_DIR"
# IDX type codes (third byte of the magic number) -> big-endian numpy dtypes.
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path) -> np.ndarray:
    """Read an IDX file (the MNIST format), gzip-compressed or raw.

    Parameters
    ----------
    path : str or os.PathLike
        The file. Compression is detected from its content, not its name.

    Returns
    -------
    numpy.ndarray
        Array of the file's shape, in native byte order, writable.

    Raises
    ------
    FileNotFoundError
        If `path` does not exist.
    ValueError
        If the file is not valid IDX: bad magic number, unknown type code, truncated header, or
        a data length that does not match the dimensions; or broken gzip data.

    Notes
    -----
    Format (http://yann.lecun.com/exdb/mnist/): two zero bytes, a type code byte (0x08 uint8,
    0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64), a byte with the number of
    dimensions, one big-endian uint32 per dimension, then the data in C order, big-endian.
    """
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as error:
            raise ValueError(f"{path}: broken gzip data ({error})") from None
    if len(raw) < 4 or raw[:2] != b"\x00\x00":
        raise ValueError(f"{path}: not an IDX file (magic number {raw[:4].hex()!r})")
    code, ndim = raw[2], raw[3]
    if code not in _IDX_DTYPES:
        raise ValueError(f"{path}: unknown IDX type code 0x{code:02X}")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{path}: header truncated ({len(raw)} bytes for {ndim} dimensions)")
    shape = struct.unpack(f">{ndim}I", raw[4:header])
    dtype = np.dtype(_IDX_DTYPES[code])
    expected = math.prod(shape) * dtype.itemsize
    if len(raw) - header != expected:
        raise ValueError(
            f"{path}: {len(raw) - header} data bytes, expected {expected} for shape {shape} of "
            f"{dtype.name}"
        )
    data = np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape)
    return data.astype(dtype.newbyteorder("="))


def fashion_mnist(split: str = "train", root=None) -> tuple[np.ndarray, np.ndarray]:
    """Load Fashion-MNIST from the Debian ``dataset-fashion-mnist`` files.

    Parameters
    ----------
    split : {"train", "test"}, default="train"
        "train" (60 000 images) or "test" (10 000, the ``t10k`` files).
    root : str or os.PathLike, optional
        Folder holding the ``.gz`` files. Defaults to ``$FASHION_MNIST_DIR`` if set, else
        ``/usr/share/datasets/fashion-mnist``.

    Returns
    -------
    images : numpy.ndarray of shape (n, 28, 28), uint8
        Grey levels 0-255.
    labels : numpy.ndarray of shape (n,), int64
        Classes 0-9 (0 T-shirt/top, 1 trouser, 2 pullover, 3 dress, 4 coat, 5 sandal, 6 shirt,
        7 sneaker, 8 bag, 9 ankle boot).

    Raises
    ------
    ValueError
        If `split` is unknown or the files are corrupt or do not match each other.
    FileNotFoundError
        If the files are missing; the message gives the ``apt-get install`` line.

    Examples
    --------
    >>> images, labels = fashion_mnist("test")  # doctest: +SKIP
    >>> images.shape, labels.shape  # doctest: +SKIP
    ((10000, 28, 28), (10000,))
    """
    check_choice(split, "split", ("train", "test"))
    if root is None:
        root = os.environ.get(_FASHION_MNIST_ENV) or _DEFAULT_DIR
    prefix = "train" if split == "train" else "t10k"
    paths = [Path(root) / f"{prefix}-{kind}-ubyte.gz" for kind in ("images-idx3", "labels-idx1")]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"Fashion-MNIST files not found: {', '.join(missing)}. They come with the Debian "
            "package dataset-fashion-mnist: sudo apt-get install dataset-fashion-mnist "
            f"(or pass `root` or set {_FASHION_MNIST_ENV} to a folder holding them)"
        )
    images, labels = (read_idx(p) for p in paths)
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != (28, 28):
        raise ValueError(
            f"{paths[0]}: expected uint8 images of shape (n, 28, 28), got {images.dtype} "
            f"{images.shape}"
        )
    if labels.dtype != np.uint8 or labels.shape != images.shape[:1]:
        raise ValueError(
            f"{paths[1]}: expected {len(images)} uint8 labels, got {labels.dtype} {labels.shape}"
        )
    return images, labels.astype(np.int64)
