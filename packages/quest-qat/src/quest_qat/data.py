"""Real text for the reproduction: the Debian ``fortunes`` corpus as bytes (vocabulary 256)."""

from pathlib import Path

import numpy as np

FORTUNES_DIR = Path("/usr/share/games/fortunes")


def load_fortunes(root=None) -> bytes:
    """The fortunes corpus as one byte string.

    Regular files of `root` sorted by name, skipping ``*.dat`` indexes and the ``*.u8`` symlinks;
    lines equal to ``%`` (the separators) dropped; lines and files joined with ``\\n``
    (2,546,284 bytes for Debian's ``fortunes`` 1:1.99.1).

    Parameters
    ----------
    root : str or Path, optional
        Folder of the fortune files; default ``/usr/share/games/fortunes``.

    Returns
    -------
    bytes

    Raises
    ------
    FileNotFoundError
        If the folder is missing or holds no fortune file (names the Debian package).
    """
    root = FORTUNES_DIR if root is None else Path(root)
    files = []
    if root.is_dir():
        files = sorted(
            p
            for p in root.iterdir()
            if p.is_file() and not p.is_symlink() and p.suffix not in (".dat", ".u8")
        )
    if not files:
        raise FileNotFoundError(
            f"no fortune files in {root}: install the Debian package 'fortunes' "
            "(sudo apt-get install fortunes) or pass --data PATH to any text file"
        )
    texts = []
    for path in files:
        lines = path.read_bytes().split(b"\n")
        texts.append(b"\n".join(line for line in lines if line != b"%"))
    return b"\n".join(texts)


MIN_TEXT_BYTES = 10_000


def check_text_path(path) -> Path:
    """`path` as a Path if it is a text file long enough to train on (``--data PATH``).

    Raises
    ------
    FileNotFoundError
        If `path` does not exist.
    IsADirectoryError
        If `path` is a directory.
    ValueError
        If the file is too short to train on (under 10,000 bytes).
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"`data` must be a text file, got the directory {path}")
    if not path.is_file():
        raise FileNotFoundError(f"`data` file not found: {path}")
    size = path.stat().st_size
    if size < MIN_TEXT_BYTES:
        raise ValueError(f"`data` must hold at least {MIN_TEXT_BYTES:,} bytes, got {size}")
    return path


def load_text(path) -> bytes:
    """The bytes of any text file (``--data PATH``); raises as :func:`check_text_path`."""
    return check_text_path(path).read_bytes()


def split_bytes(data: bytes, val_fraction: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """First ``1 - val_fraction`` for training, the rest for validation, as uint8 arrays."""
    arr = np.frombuffer(data, dtype=np.uint8)
    cut = int(len(arr) * (1 - val_fraction))
    return arr[:cut], arr[cut:]
