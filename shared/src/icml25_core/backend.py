"""Backend detection for kernels: native extension, Triton on GPU, Triton interpreter, PyTorch.

A library's dispatcher calls :func:`select_backend` once and runs the matching implementation.
Every backend runs on torch tensors, so without torch there is none. Detection uses
``importlib.util.find_spec`` and imports only torch (to ask whether CUDA is available).
"""

import os
from importlib.util import find_spec

from icml25_core.validation import check_choice

BACKENDS = ("native", "triton", "triton-interpret", "torch")
BACKEND_ENV = "ICML25_BACKEND"


def _importable(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package, or a relative name
        return False


def _requirements(native_module: str | None) -> dict[str, list[tuple[str, bool]]]:
    """For each backend, its requirements as (description, met) pairs."""
    if native_module is not None and not isinstance(native_module, str):
        raise TypeError(
            f"`native_module` must be a module name or None, got {type(native_module).__name__}"
        )
    has_torch = _importable("torch")
    if has_torch:
        import torch

        has_cuda = torch.cuda.is_available()
    else:
        has_cuda = False
    has_triton = _importable("triton")
    torch_req = ("torch installed", has_torch)
    cuda_req = ("a CUDA GPU visible to torch", has_cuda)
    native_req = (
        f"the extension module {native_module!r} installed"
        if native_module
        else "a native extension module (this library has none)",
        native_module is not None and _importable(native_module),
    )
    return {
        "native": [torch_req, native_req, cuda_req],
        "triton": [torch_req, ("triton installed", has_triton), cuda_req],
        "triton-interpret": [
            torch_req,
            ("TRITON_INTERPRET=1", os.environ.get("TRITON_INTERPRET") == "1"),
            ("triton installed", has_triton),
        ],
        "torch": [torch_req],
    }


def _available(requirements: dict[str, list[tuple[str, bool]]]) -> tuple[str, ...]:
    return tuple(b for b in BACKENDS if all(met for _, met in requirements[b]))


def available_backends(native_module: str | None = None) -> tuple[str, ...]:
    """List the backends usable here, best first.

    Parameters
    ----------
    native_module : str, optional
        Import name of the library's native extension (e.g. ``"quest_qat_kernels._C"``);
        ``None`` when the library has none. Only looked up, never imported.

    Returns
    -------
    tuple of str
        A subsequence of :data:`BACKENDS`: "native" (module importable and CUDA available),
        "triton" (triton importable and CUDA available), "triton-interpret" (triton importable
        and ``TRITON_INTERPRET=1``), "torch" (torch importable). Empty without torch.

    Raises
    ------
    TypeError
        If `native_module` is neither a str nor None.

    Examples
    --------
    >>> available_backends()  # doctest: +SKIP
    ('triton-interpret', 'torch')
    """
    return _available(_requirements(native_module))


def select_backend(native_module: str | None = None, *, override: str | None = None) -> str:
    """Pick the backend to run: `override`, else ``$ICML25_BACKEND``, else the best available.

    Parameters
    ----------
    native_module : str, optional
        Import name of the library's native extension, as in :func:`available_backends`.
    override : {"native", "triton", "triton-interpret", "torch"}, optional
        Backend requested by the caller; takes precedence over the environment variable.

    Returns
    -------
    str
        One of :data:`BACKENDS`.

    Raises
    ------
    TypeError
        If `native_module` is neither a str nor None.
    ValueError
        If the requested name is not one of :data:`BACKENDS`.
    RuntimeError
        If the requested backend is not available (the message lists what it lacks), or
        nothing was requested and no backend is available (torch is missing).

    Examples
    --------
    >>> select_backend(override="torch")  # doctest: +SKIP
    'torch'
    """
    if override is not None:
        requested = check_choice(override, "override", BACKENDS)
    elif os.environ.get(BACKEND_ENV):
        requested = check_choice(os.environ[BACKEND_ENV], BACKEND_ENV, BACKENDS)
    else:
        requested = None
    requirements = _requirements(native_module)
    if requested is None:
        available = _available(requirements)
        if not available:
            raise RuntimeError("no kernel backend is available: install torch (pip install torch)")
        return available[0]
    missing = [what for what, met in requirements[requested] if not met]
    if missing:
        needs = ", ".join(what for what, _ in requirements[requested])
        raise RuntimeError(
            f"backend {requested!r} is not available: it needs {needs}; missing: "
            f"{', '.join(missing)}"
        )
    return requested
