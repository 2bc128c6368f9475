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
    TypeError
        If `package` or a part is not a str.
    ValueError
        If a part is absolute or ``..`` (the path would leave the package).
    FileNotFoundError
        If `package` is not installed, or the path does not exist in it (or the package is
        not on the file system, e.g. imported from a zip archive).

    Examples
    --------
    >>> data_path("icml25_core", "py.typed").name
    'py.typed'
    """
    if not isinstance(package, str):
        raise TypeError(f"`package` must be an import name (str), got {type(package).__name__}")
    for part in parts:
        if not isinstance(part, str):
            raise TypeError(f"`parts` must be str, got {type(part).__name__}")
        if Path(part).is_absolute() or ".." in Path(part).parts:
            raise ValueError(f"`parts` must stay inside the package, got {part!r}")
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
