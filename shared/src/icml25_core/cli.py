"""Console scripts: the parser every library's script starts from, the ``reproduce`` command they
all share, and argparse types for arguments that several scripts take.

A library's ``cli.py`` builds on these so that every script has the same ``--version``, the same
``reproduce [--out DIR] [--full]`` and the same one-line usage errors (exit status 2) for bad
values, instead of tracebacks.
"""

import argparse
from pathlib import Path

__all__ = ["add_reproduce_command", "console_parser", "positive_int", "report_folder", "shard_spec"]


def console_parser(
    prog: str, version: str, description: str | None = None
) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """A library's top-level parser with ``--version`` and a required sub-command.

    Parameters
    ----------
    prog : str
        The console script's name (the distribution name, e.g. ``"quest-qat"``).
    version : str
        The library's version, printed by ``--version`` as ``"<prog> <version>"``.
    description : str, default=None
        Shown by ``--help`` as written (line breaks kept), e.g. the ``cli`` module docstring.

    Returns
    -------
    parser : argparse.ArgumentParser
    commands : argparse._SubParsersAction
        Add the script's commands with ``commands.add_parser(name, help=...)``; the chosen one is
        ``args.command``.

    Raises
    ------
    TypeError
        If `prog` or `version` is not a non-empty str.
    """
    for name, value in (("prog", prog), ("version", version)):
        if not isinstance(value, str) or not value:
            raise TypeError(f"`{name}` must be a non-empty str, got {value!r}")
    parser = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    return parser, commands


def add_reproduce_command(
    commands: argparse._SubParsersAction,
    *,
    full_help: str = "run at the paper's scale instead of the quick default",
    help: str = "measure the paper's headline claim on real input and write the report",
    description: str | None = None,
) -> argparse.ArgumentParser:
    """Add ``reproduce [--out DIR] [--full]``, the main job every library's script has.

    ``--out`` is parsed by :func:`report_folder` (created at once: a bad folder is a usage error
    before any work starts); ``--full`` is a flag (the paper's scale).

    Parameters
    ----------
    commands : argparse._SubParsersAction
        From :func:`console_parser`.
    full_help, help, description : str
        The ``--full`` flag's help, the command's one-line help in the command list, and its
        longer description (default: ``help``).

    Returns
    -------
    argparse.ArgumentParser
        The ``reproduce`` sub-parser, to add the library's own options.
    """
    reproduce = commands.add_parser("reproduce", help=help, description=description or help)
    reproduce.add_argument(
        "--out",
        type=report_folder,
        default="reports",
        help="folder of the report, created if missing (default: reports)",
    )
    reproduce.add_argument("--full", action="store_true", help=full_help)
    return reproduce


def positive_int(text: str) -> int:
    """argparse type: an int >= 1 (``--T 0`` is a usage error, not a failure deep in the run)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid positive integer value: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def shard_spec(text: str) -> tuple[int, int]:
    """argparse type for ``--shard i/n``: this process's share ``(i, n)`` of a job split into
    ``n`` parts, ``0 <= i < n`` (a corpus purified, reranked or evaluated by several processes).

    Raises
    ------
    argparse.ArgumentTypeError
        If `text` is not two integers ``i/n`` with ``n >= 1`` and ``0 <= i < n``.
    """
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard must look like i/n, got {text!r}") from None
    if n < 1 or not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"--shard i/n needs 0 <= i < n, got {text!r}")
    return i, n


def report_folder(text: str) -> Path:
    """argparse type: a folder for reports, created (with its parents) if missing.

    Raises
    ------
    argparse.ArgumentTypeError
        If the path is an existing file or cannot be created (read-only place, bad name).
    """
    folder = Path(text)
    if folder.exists() and not folder.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise argparse.ArgumentTypeError(
            f"{text!r} cannot be created: {error.strerror or error}"
        ) from None
    return folder
