"""Locate data files shipped inside an installed package."""

from importlib.resources import files
from pathlib import Path


def data_path(package: str, *parts: str) -> Path:
    """Return the file-system path of a file (or folder) inside an installed package.

    Parameters
    ----------
    package : str
        Import name of the package holding the data, e.g. ``"quest_qat"``.
    *parts : str
        Path components below the package folder, e.g. ``"data", "prompts.txt"``.

    Returns
    -------
    pathlib.Path
        Path of the existing file or folder.

    Raises
    ------
    FileNotFoundError
        If `package` is not installed, or the path does not exist in it (or the package is
        not on the file system, e.g. imported from a zip archive).

    Examples
    --------
    >>> data_path("icml25_core", "py.typed").name
    'py.typed'
    """
    try:
        root = files(package)
    except ModuleNotFoundError:
        raise FileNotFoundError(f"package {package!r} is not installed") from None
    resource = root
    for part in parts:
        resource = resource / part
    if not isinstance(resource, Path) or not resource.exists():
        raise FileNotFoundError(
            f"{'/'.join(parts)!r} not found in package {package!r} (looked in {root})"
        )
    return resource
