"""Modules that belong to an optional extra: one clear ImportError when the extra is missing.

A library lists such modules in its card (``optional-modules = { "fedswa.flower" = "flower" }``
in ``[tool.icml25]`` of its pyproject); they import the extra's requirements at their top, inside
:func:`requires_extra`, the pattern of ``transformers.integrations`` and ``optuna.integration``::

    from icml25_core.extras import requires_extra

    with requires_extra("fedswa", "flower"):
        from flwr.app import ArrayRecord
        from flwr.serverapp.strategy import FedAvg

Importing the module without the extra then raises an ``ImportError`` that names the exact install
command, ``pip install 'fedswa[flower]'``, instead of a bare ``No module named 'flwr'``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")

__all__ = ["missing_extra_message", "requires_extra"]


def _check_name(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not _NAME.fullmatch(value):
        raise ValueError(
            f"{name} must be a distribution or extra name (letters, digits, '.', '_', '-'), "
            f"got {value!r}"
        )
    return value


def missing_extra_message(dist: str, extra: str, missing: str | None = None) -> str:
    """The message of the ImportError raised when extra ``[extra]`` of `dist` is not installed.

    Parameters
    ----------
    dist : str
        The library's distribution name (``"fedswa"``).
    extra : str
        The extra that provides the missing module (``"flower"``).
    missing : str, optional
        The module that failed to import (``"flwr"``), named in the message when given.

    Raises
    ------
    TypeError
        If `dist` or `extra` is not a str.
    ValueError
        If `dist` or `extra` is not a valid name.
    """
    _check_name(dist, "dist")
    _check_name(extra, "extra")
    what = f" ({missing!r} is not installed)" if missing else ""
    return (
        f"this part of {dist} needs its optional extra [{extra}]{what}; "
        f"install it with: pip install '{dist}[{extra}]'"
    )


@contextmanager
def requires_extra(dist: str, extra: str) -> Iterator[None]:
    """Turn an ImportError of the imports inside the block into one naming the install command.

    Parameters
    ----------
    dist, extra : str
        The library and the extra its block's imports belong to.

    Raises
    ------
    ImportError
        With :func:`missing_extra_message`, chained to the original error, when a module imported
        inside the block is not installed (``ModuleNotFoundError``). Any other ImportError (an
        installed module too old to have a name, a broken install) is re-raised unchanged, since
        installing the extra would not fix it.
    TypeError, ValueError
        If `dist` or `extra` is not a valid name (raised on entry).
    """
    message = missing_extra_message(dist, extra)  # validates the names before the block runs
    try:
        yield
    except ModuleNotFoundError as error:
        missing = error.name
        if missing:
            message = missing_extra_message(dist, extra, missing)
        raise ImportError(message, name=missing) from error
