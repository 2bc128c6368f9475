"""Input validation at a library's public boundary, with errors that name the argument.

Every message starts with the argument's name in backticks and quotes what was received, e.g.
"`X` must be 2-D, got shape (3,)". Wrong types raise ``TypeError``; wrong values (shape, range,
NaN, emptiness) raise ``ValueError``.
"""

import math
import numbers
import sys

import numpy as np

# dtype groups of check_array, as numpy dtype kinds ("numeric" lets bool through, as numpy does).
_DTYPE_KINDS = {"numeric": "biuf", "floating": "f", "integer": "iu", "bool": "b"}
_INCLUSIVE = ("both", "left", "right", "neither")
# Plain Python types widened to their numeric-tower ABC, so numpy scalars pass.
_ABSTRACT: dict[type, type | tuple[type, ...]] = {
    int: numbers.Integral,
    float: numbers.Real,
    complex: numbers.Complex,
    bool: (bool, np.bool_),
}
_KIND_NAMES = {
    numbers.Integral: "an int",
    numbers.Real: "a real number",
    numbers.Complex: "a number",
    (bool, np.bool_): "a bool",
}


def _kind_names(kinds) -> str:
    return " or ".join(_KIND_NAMES.get(k) or f"a {k.__name__}" for k in kinds)


def _fmt_shape(shape) -> str:
    """Write a shape as Python does, with ``*`` for ``None`` wildcards: (3,), (*, 3), ()."""
    dims = ["*" if d is None else str(d) for d in shape]
    return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"


def _check_dims(actual: tuple[int, ...], name: str, ndim, shape) -> None:
    """Check `actual` (a shape) against an ``ndim`` spec and a ``shape`` spec with wildcards."""
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if len(actual) not in allowed:
            wanted = " or ".join(f"{d}-D" for d in allowed)
            raise ValueError(f"`{name}` must be {wanted}, got shape {_fmt_shape(actual)}")
    if shape is not None:
        if len(actual) != len(shape):
            raise ValueError(
                f"`{name}` must have shape {_fmt_shape(shape)}, got shape {_fmt_shape(actual)}"
            )
        for axis, (got, want) in enumerate(zip(actual, shape, strict=True)):
            if want is not None and got != want:
                raise ValueError(
                    f"`{name}` must have size {want} along axis {axis} (shape "
                    f"{_fmt_shape(shape)}), got shape {_fmt_shape(actual)}"
                )


def _check_not_empty(actual: tuple[int, ...], name: str) -> None:
    if math.prod(actual) == 0:
        raise ValueError(f"`{name}` is empty (shape {_fmt_shape(actual)})")


def _nonfinite_error(name: str, index) -> ValueError:
    where = _fmt_shape([int(i) for i in index])
    return ValueError(f"`{name}` contains NaN or infinity (first at index {where})")


def check_array(
    x,
    name: str,
    *,
    ndim=None,
    shape=None,
    dtype="numeric",
    finite: bool = True,
    allow_empty: bool = False,
    cast=None,
) -> np.ndarray:
    """Convert `x` to a numpy array and check it.

    Parameters
    ----------
    x : array_like
        Anything ``np.asarray`` accepts: arrays, nested lists, pandas objects, CPU tensors.
    name : str
        Argument name used in error messages.
    ndim : int or tuple of int, optional
        Allowed numbers of dimensions.
    shape : tuple of (int or None), optional
        Required shape; ``None`` entries match any size, e.g. ``(None, 3)``.
    dtype : {"numeric", "floating", "integer", "bool"}, numpy dtype, tuple of dtypes or None, \
default="numeric"
        Required dtype of the input. The names are groups of numpy kinds: "numeric" is bool,
        signed and unsigned integers and real floats (not complex, strings or objects);
        "floating" is real floats; "integer" is signed and unsigned integers; "bool" is bool.
        Anything else ``np.dtype`` accepts (``np.float32``, ``"float32"``), or a tuple of them,
        requires one of those dtypes exactly. ``None`` checks nothing.
        Object arrays are converted to float64 when `dtype` is "numeric" or "floating".
    finite : bool, default=True
        Reject NaN and infinity (checked for float and complex arrays only).
    allow_empty : bool, default=False
        Accept arrays with no elements.
    cast : numpy dtype, optional
        Convert the checked array to this dtype (no copy when it already has it). The dtype
        check applies to the input, before the conversion. When `finite` is True, values the
        new dtype cannot hold (1e10 in float16, 300 in uint8) raise instead of overflowing.

    Returns
    -------
    numpy.ndarray
        The array; a view of `x` when no conversion was needed.

    Raises
    ------
    TypeError
        If `x` is None or cannot be converted (e.g. a tensor that requires grad), an object
        array cannot be read as numbers, or the dtype does not match `dtype`.
    ValueError
        If the number of dimensions or shape does not match, the array is empty and
        `allow_empty` is False, or it holds NaN or infinity (or overflows `cast`) and `finite`
        is True.

    Examples
    --------
    >>> check_array([[1.0, 2.0, 3.0]], "X", shape=(None, 3)).shape
    (1, 3)
    """
    if x is None:
        raise TypeError(f"`{name}` must be array-like, got None")
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError, RuntimeError) as error:  # RuntimeError: a tensor needing grad
        raise TypeError(f"`{name}` cannot be converted to a numpy array: {error}") from None
    if isinstance(dtype, str) and dtype in _DTYPE_KINDS:
        if arr.dtype.kind == "O" and dtype in ("numeric", "floating"):
            try:
                arr = arr.astype(np.float64)
            except (TypeError, ValueError) as error:
                raise TypeError(
                    f"`{name}` has dtype object and cannot be read as numbers: {error}"
                ) from None
        if arr.dtype.kind not in _DTYPE_KINDS[dtype]:
            raise TypeError(f"`{name}` must be {dtype}, got dtype {arr.dtype}")
    elif dtype is not None:
        allowed = tuple(np.dtype(d) for d in (dtype if isinstance(dtype, tuple) else (dtype,)))
        if arr.dtype not in allowed:
            listed = " or ".join(str(d) for d in allowed)
            raise TypeError(f"`{name}` must have dtype {listed}, got {arr.dtype}")
    _check_dims(arr.shape, name, ndim, shape)
    if not allow_empty:
        _check_not_empty(arr.shape, name)
    if finite and arr.dtype.kind in "fc":
        bad = ~np.isfinite(arr)
        if bad.any():
            raise _nonfinite_error(name, np.argwhere(bad)[0])
    return arr if cast is None else _cast(arr, name, cast, finite)


def _cast(arr: np.ndarray, name: str, cast, finite: bool) -> np.ndarray:
    """``arr.astype(cast)``, refusing values the target dtype cannot hold when `finite`."""
    target = np.dtype(cast)
    if not finite or np.can_cast(arr.dtype, target, "safe"):  # a safe cast cannot overflow
        with np.errstate(over="ignore", invalid="ignore"):  # finite=False: inf is accepted
            return arr.astype(target, copy=False)
    if arr.size and target.kind in "iu" and arr.dtype.kind in "biuf":
        info = np.iinfo(target)
        low, high = arr.min(), arr.max()
        if low < info.min or high > info.max:
            raise ValueError(
                f"`{name}` does not fit in {target}: values span [{low}, {high}], "
                f"{target} holds [{info.min}, {info.max}]"
            )
    with np.errstate(over="ignore", invalid="ignore"):
        out = arr.astype(target, copy=False)
    if target.kind in "fc" and out.size and not np.isfinite(out).all():
        raise ValueError(f"`{name}` overflows {target} (a value is out of its range)")
    return out


def check_scalar(value, name: str, *, kind=numbers.Real, low=None, high=None, inclusive="both"):
    """Check that `value` is a scalar of type `kind` within ``[low, high]``.

    Parameters
    ----------
    value : object
        The scalar.
    name : str
        Argument name used in error messages.
    kind : type or tuple of types, default=numbers.Real
        Accepted types. ``int``, ``float`` and ``complex`` are widened to ``numbers.Integral``,
        ``numbers.Real`` and ``numbers.Complex``, so numpy scalars pass and ``float`` accepts
        ints. Bools (Python or numpy) are rejected unless `kind` names ``bool`` itself.
    low, high : number, optional
        Bounds; ``None`` leaves that side open.
    inclusive : {"both", "left", "right", "neither"}, default="both"
        Which bounds are allowed values.

    Returns
    -------
    object
        `value`, unchanged.

    Raises
    ------
    TypeError
        If `value` is not of an accepted type.
    ValueError
        If `value` is NaN or out of range, or `inclusive` is not a known name.

    Examples
    --------
    >>> check_scalar(0.5, "alpha", low=0, high=1, inclusive="neither")
    0.5
    """
    check_choice(inclusive, "inclusive", _INCLUSIVE)
    requested = kind if isinstance(kind, tuple) else (kind,)
    kinds: tuple = tuple(_ABSTRACT.get(k, k) for k in requested)
    is_bool = isinstance(value, bool | np.bool_)
    if (is_bool and bool not in requested) or not isinstance(value, kinds):
        raise TypeError(f"`{name}` must be {_kind_names(kinds)}, got {type(value).__name__}")
    # Integral values are never NaN, and math.isnan fails on ints beyond float's range.
    real = isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral)
    if real and math.isnan(value):
        raise ValueError(f"`{name}` must not be NaN")
    if low is None and high is None:
        return value
    closed_low = inclusive in ("both", "left")
    closed_high = inclusive in ("both", "right")
    too_low = low is not None and (value < low if closed_low else value <= low)
    too_high = high is not None and (value > high if closed_high else value >= high)
    if too_low or too_high:
        if high is None:
            wanted = f"{'>=' if closed_low else '>'} {low}"
        elif low is None:
            wanted = f"{'<=' if closed_high else '<'} {high}"
        else:
            wanted = f"in {'[' if closed_low else '('}{low}, {high}{']' if closed_high else ')'}"
        raise ValueError(f"`{name}` must be {wanted}, got {value}")
    return value


def check_choice(value, name: str, choices):
    """Check that `value` is one of `choices`.

    Parameters
    ----------
    value : object
        The value.
    name : str
        Argument name used in error messages.
    choices : sequence
        Allowed values, listed in this order in the message.

    Returns
    -------
    object
        `value`, unchanged.

    Raises
    ------
    TypeError
        If `choices` is a str (its substrings would pass).
    ValueError
        If `value` is not in `choices`.

    Examples
    --------
    >>> check_choice("dr", "risk", ("dr", "r", "tau"))
    'dr'
    """
    if isinstance(choices, str):
        raise TypeError(f"`choices` must be a sequence of allowed values, not the str {choices!r}")
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"`{name}` must be one of {listed}; got {value!r}")
    return value


def check_consistent_length(**arrays) -> None:
    """Check that all given arrays have the same length (size of the first axis).

    Parameters
    ----------
    **arrays : array_like or None
        Arrays by argument name; ``None`` values (absent optional arguments) are skipped.

    Raises
    ------
    TypeError
        If a value has no length (e.g. a 0-d array or a scalar).
    ValueError
        If the lengths differ.

    Examples
    --------
    >>> check_consistent_length(X=[[1, 2], [3, 4]], y=[0, 1], sample_weight=None)
    """
    lengths = {}
    for name, value in arrays.items():
        if value is None:
            continue
        try:
            lengths[name] = len(value)
        except TypeError:
            raise TypeError(f"`{name}` has no length, got {type(value).__name__}") from None
    if len(set(lengths.values())) > 1:
        names = ", ".join(f"`{n}`" for n in lengths)
        got = ", ".join(f"{n}: {k}" for n, k in lengths.items())
        raise ValueError(f"{names} must have the same length; got {got}")


def check_tensor(
    t,
    name: str,
    *,
    ndim=None,
    shape=None,
    dtype=None,
    finite: bool = True,
    allow_empty: bool = False,
    device=None,
):
    """Check a torch tensor, as :func:`check_array` checks an array (no conversion).

    Parameters
    ----------
    t : torch.Tensor
        The tensor.
    name : str
        Argument name used in error messages.
    ndim : int or tuple of int, optional
        Allowed numbers of dimensions.
    shape : tuple of (int or None), optional
        Required shape; ``None`` entries match any size.
    dtype : torch.dtype or tuple of torch.dtype, optional
        Allowed dtypes.
    finite : bool, default=True
        Reject NaN and infinity (checked for floating and complex tensors only; not on the
        ``meta`` device, which holds no values; the stored values of sparse tensors).
    allow_empty : bool, default=False
        Accept tensors with no elements.
    device : str or torch.device, optional
        Required device; a device without an index (``"cuda"``) matches any index.

    Returns
    -------
    torch.Tensor
        `t`, unchanged.

    Raises
    ------
    TypeError
        If `t` is not a ``torch.Tensor`` or its dtype is not allowed.
    ValueError
        If dimensions, shape, emptiness, finiteness or device do not match.

    Notes
    -----
    torch is never imported here: a tensor can only exist once torch has been imported, so a
    value is a tensor only if ``sys.modules["torch"]`` is loaded and says so.
    """
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(t, torch.Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(t).__name__}")
    if dtype is not None:
        allowed = dtype if isinstance(dtype, tuple) else (dtype,)
        if t.dtype not in allowed:
            listed = " or ".join(str(d) for d in allowed)
            raise TypeError(f"`{name}` must have dtype {listed}, got {t.dtype}")
    _check_dims(tuple(t.shape), name, ndim, shape)
    if not allow_empty:
        _check_not_empty(tuple(t.shape), name)
    if device is not None:
        want = torch.device(device)
        if t.device.type != want.type or (want.index is not None and t.device != want):
            raise ValueError(f"`{name}` must be on device {want}, got {t.device}")
    if finite and (t.is_floating_point() or t.is_complex()) and t.device.type != "meta":
        if t.layout != torch.strided:  # sparse: check the stored values
            values = t.coalesce().values() if t.layout == torch.sparse_coo else t.values()
            if not torch.isfinite(values).all():
                raise ValueError(f"`{name}` contains NaN or infinity (a stored sparse value)")
            return t
        bad = ~torch.isfinite(t)
        if bad.any():
            raise _nonfinite_error(name, bad.nonzero()[0].tolist())
    return t


def check_device(device, name: str = "device", *, module=None, available: bool = False):
    """The ``torch.device`` a library creates its tensors and state on (DECISIONS 13).

    Parameters
    ----------
    device : str, torch.device or None
        The user's choice (``"cuda"``, ``"cuda:1"``, ``"cpu"``, ...).
    name : str, default="device"
        Argument name used in error messages.
    module : torch.nn.Module, optional
        Where ``device=None`` looks: the device of its first parameter or buffer.
    available : bool, default=False
        Also check that this process's torch can use `device` now (``torch.cuda.is_available()``
        and the device count for ``"cuda:1"``; likewise ``mps``, ``xpu``, ...). Pass True where
        the device is used; leave it False where a setting is only read (a run config checked
        on one machine and used on another, whose GPU this one may lack).

    Returns
    -------
    torch.device
        `device`; else `module`'s device; else CPU.

    Raises
    ------
    TypeError
        If `device` is not a str, ``torch.device`` or None.
    ValueError
        If `device` does not name a torch device (``"gpu"``), is ``"meta"`` (it holds no
        values to compute with), or, with `available`, cannot be used here (CUDA on a CPU-only
        torch, ``"cuda:1"`` with one GPU).
    """
    import torch

    if device is None:
        if module is not None:
            for tensor in (*module.parameters(), *module.buffers()):
                return tensor.device
        return torch.device("cpu")
    if not isinstance(device, str | torch.device):
        raise TypeError(f"`{name}` must be a str or torch.device, got {type(device).__name__}")
    try:
        dev = torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"`{name}` {device!r} is not a torch device ({err})") from None
    if dev.type == "meta":
        raise ValueError(f"`{name}` 'meta' holds no values to compute with; use 'cpu' or 'cuda'")
    backend = getattr(torch, dev.type, None)  # torch.cuda, torch.mps, torch.xpu, ...
    if available and dev.type != "cpu" and backend is not None and hasattr(backend, "is_available"):
        count = backend.device_count() if backend.is_available() else 0
        if count == 0 or (dev.index is not None and dev.index >= count):
            raise ValueError(
                f"`{name}` {str(dev)!r} is not available here: torch {torch.__version__} sees "
                f"{count} {dev.type} device(s)"
            )
    return dev
