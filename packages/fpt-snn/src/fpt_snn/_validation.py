"""Argument checks shared by the public entry points (errors name the argument)."""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from icml25_core import check_choice, check_scalar, check_tensor

FLOAT_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
CONVENTIONS = ("spikingjelly", "snntorch")
RESETS = ("soft", "hard")


def check_input(x, name: str = "x", *, time_dim: int = 0, T: int | None = None):
    """Check a spike-layer input: a finite, non-empty float tensor with a time axis.

    Raises
    ------
    TypeError
        If `x` is not a tensor or not float16/bfloat16/float32/float64.
    ValueError
        If it has no dimension, is empty, holds NaN/inf, or its time axis is not `T` long.
    """
    if isinstance(x, torch.Tensor) and not x.is_floating_point():
        raise TypeError(
            f"`{name}` must be a float tensor (float32, float64, bfloat16, float16), "
            f"got dtype {x.dtype}"
        )
    check_tensor(x, name, dtype=FLOAT_DTYPES, finite=False)
    if x.is_meta:
        raise ValueError(f"`{name}` is on the meta device (no data); move it to a real device")
    # NaN/inf scan: a finite sum proves every element finite (one reduction, no mask); a
    # non-finite sum (NaN/inf inside, or an overflow) runs the element-wise check that names
    # the first bad index. Under torch.compile it would be a data-dependent branch (a graph
    # break): compiled graphs skip it, eager calls always run it.
    if not torch.compiler.is_compiling() and x.numel() and not torch.isfinite(x.sum()):
        check_tensor(x, name, finite=True)
    if x.ndim < 1:
        raise ValueError(f"`{name}` must have a time axis (ndim >= 1), got a 0-d tensor")
    if not -x.ndim <= time_dim < x.ndim:
        raise ValueError(
            f"`time_dim` must index an axis of `{name}` (ndim {x.ndim}), got {time_dim}"
        )
    if T is not None and x.shape[time_dim] != T:
        raise ValueError(
            f"`{name}` must have T={T} steps along time_dim={time_dim}, got shape {tuple(x.shape)}"
        )
    return x


def _check_neuron_tensor(value, name: str, step_shape, device, low: float, meaning: str):
    """A float tensor of per-neuron values > `low`, broadcastable to one time step of x.

    Trailing axes are aligned (NumPy), and with ``step_shape = x.shape[1:] = [B, *S]`` the
    tensor must cover every neuron axis S after the batch axis: [C] for [T, B, C] input,
    [C, 1, 1] (``tau.view(C, 1, 1)``) for [T, B, C, H, W], unless it holds one value (0-d or
    one element). Fewer axes are refused: a [C] tensor on [T, B, C, H, W] input would align
    with W, not C, which is a silent wrong answer when C == W.
    """
    if not value.is_floating_point():
        raise ValueError(f"`{name}` must be a float or a float tensor, got dtype {value.dtype}")
    if value.numel() == 0:
        raise ValueError(f"`{name}` must not be empty, got shape {tuple(value.shape)}")
    if step_shape is not None:
        step_shape = tuple(step_shape)
        shape = tuple(value.shape)
        if value.ndim < len(step_shape) - 1 and value.numel() != 1:
            raise ValueError(
                f"`{name}` of shape {shape} is ambiguous for x of shape [T, *{list(step_shape)}]: "
                f"with trailing axes aligned it covers only the last {value.ndim} of the "
                f"{len(step_shape) - 1} neuron axes after the batch axis (a [C] tensor lands on "
                f"W of [T, B, C, H, W] input, not on C). Give it one axis per neuron axis, "
                f"e.g. `{name}.view(C, 1, 1)` for [T, B, C, H, W], or use "
                f"FPTLIF({name}=[...], channel_dim=...)"
            )
        fits = len(shape) <= len(step_shape) and all(
            a in (1, b) for a, b in zip(shape[::-1], step_shape[::-1], strict=False)
        )
        if not fits:
            raise ValueError(
                f"`{name}` of shape {shape} must broadcast to one time step of x, "
                f"{step_shape} (trailing axes aligned: [C] for [T, B, C] input, [C, 1, 1] for "
                "[T, B, C, H, W])"
            )
    if device is not None and value.device != device:
        raise ValueError(f"`{name}` must be on x's device {device}, got {value.device}")
    if value.is_meta:
        raise ValueError(f"`{name}` is on the meta device (no data)")
    if torch.compiler.is_compiling():
        return value
    values = value.detach()
    if not bool(torch.isfinite(values).all()):
        raise ValueError(f"`{name}` must be finite, got NaN or infinity in {value!r}")
    smallest = float(values.min())
    if smallest <= low:
        raise ValueError(f"`{name}` must be > {low:g} ({meaning}) everywhere, got {smallest}")
    return value


def check_tau(tau, step_shape=None, *, device=None):
    """τ > 1 (λ = 1 − 1/τ in (0, 1)): a float, or a float tensor (learnable, or per neuron).

    A tensor τ holds one value (0-d) or one per neuron group, broadcastable to `step_shape`
    (``x.shape[1:]``; any shape when `step_shape` is None), on `device` when given.
    """
    if isinstance(tau, torch.Tensor):
        return _check_neuron_tensor(tau, "tau", step_shape, device, 1.0, "λ = 1 − 1/τ in (0, 1)")
    check_scalar(tau, "tau", low=1, inclusive="neither")
    if not math.isfinite(tau):
        raise ValueError(f"`tau` must be finite, got {tau}")
    return float(tau)


def check_threshold(v_threshold, step_shape=None, *, device=None):
    """θ > 0, finite: a float, or a float tensor (learnable, or per neuron) as for `tau`."""
    if isinstance(v_threshold, torch.Tensor):
        return _check_neuron_tensor(
            v_threshold, "v_threshold", step_shape, device, 0.0, "a positive threshold"
        )
    check_scalar(v_threshold, "v_threshold", low=0, inclusive="neither")
    if not math.isfinite(v_threshold):
        raise ValueError(f"`v_threshold` must be finite, got {v_threshold}")
    return float(v_threshold)


def value_range(value) -> tuple[float, float]:
    """Smallest and largest entry of a float or a tensor (without gradient tracking)."""
    if isinstance(value, torch.Tensor):
        values = value.detach()
        return float(values.min()), float(values.max())
    return float(value), float(value)


def check_threshold_fits(theta, dtype: torch.dtype):
    """θ must stay a finite positive number in the compute dtype (e.g. 1e300 overflows float32)."""
    info = torch.finfo(dtype)
    low, high = value_range(theta)
    if not (info.tiny <= low and high <= info.max):
        raise ValueError(
            f"`v_threshold` must lie in [{info.tiny:.3g}, {info.max:.3g}] to be represented in "
            f"{dtype}, got {low if low < info.tiny else high}"
        )
    return theta


# Upper bound on K: K >= T already gives the exact LIF at O(K·T²·N) cost (lif_sequential is
# O(T·N)); a bound keeps a typo such as K=10**12 from building a K-long slope tuple.
K_MAX = 10_000


def check_K(K, name: str = "K"):
    """Number of evaluations 1 <= K <= K_MAX (an int)."""
    check_scalar(K, name, kind=int, low=1)
    if K > K_MAX:
        raise ValueError(
            f"`{name}` must be <= {K_MAX} (K >= T already reproduces the LIF exactly; for exact "
            f"spikes at long T use lif_sequential), got {K}"
        )
    return int(K)


def check_alphas(alphas, K: int):
    """K positive finite slopes, or None."""
    if alphas is None:
        return None
    if isinstance(alphas, torch.Tensor):
        values = alphas.detach().reshape(-1).tolist() if alphas.ndim <= 1 else None
    elif isinstance(alphas, list | tuple):
        values = list(alphas)
    else:
        values = None
    if values is None or len(values) != K:
        raise ValueError(f"`alphas` must hold K={K} positive values, got {alphas!r}")
    for a in values:
        if isinstance(a, bool) or not isinstance(a, numbers.Real) or not math.isfinite(a) or a <= 0:
            raise ValueError(f"`alphas` must hold K={K} positive finite values, got {alphas!r}")
    return tuple(float(a) for a in values)


def check_convention(convention):
    return check_choice(convention, "convention", CONVENTIONS)


def check_T(T, name: str = "T"):
    check_scalar(T, name, kind=int, low=1)
    return int(T)


def check_flag(value, name: str) -> bool:
    """A bool (``decay_input``, ``return_state``): Python's or NumPy's; 1 or "yes" raise."""
    if isinstance(value, np.bool_):
        return bool(value)
    if not isinstance(value, bool):
        kind = type(value)
        raise TypeError(f"`{name}` must be a bool, got {kind.__module__}.{kind.__qualname__}")
    return value


def check_reset(reset, v_reset, theta, convention: str):
    """Reset mode and reset potential, checked against the threshold and the convention.

    Raises
    ------
    ValueError
        Unknown `reset`; non-finite `v_reset`; a non-zero `v_reset` with ``reset="soft"``
        (the soft reset subtracts θ, spikingjelly ``v_reset=None``); ``v_reset >= v_threshold``
        (the neuron would fire at rest; every entry of a per-neuron θ counts); a non-zero
        `v_reset` in the snntorch convention (snntorch ``reset_mechanism="zero"`` resets to 0).
    TypeError
        If `v_reset` is not a real number.
    """
    reset = check_choice(reset, "reset", RESETS)
    check_scalar(v_reset, "v_reset")
    if not math.isfinite(v_reset):
        raise ValueError(f"`v_reset` must be finite, got {v_reset}")
    v_reset = float(v_reset)
    if reset == "soft" and v_reset != 0.0:
        raise ValueError(
            f"`v_reset` applies to reset='hard' only (the soft reset subtracts v_threshold), "
            f"got v_reset={v_reset} with reset='soft'"
        )
    lowest_theta = value_range(theta)[0]  # θ may be per neuron: below every threshold
    if reset == "hard" and v_reset >= lowest_theta:
        raise ValueError(f"`v_reset` must be < v_threshold={lowest_theta}, got {v_reset}")
    if reset == "hard" and convention == "snntorch" and v_reset != 0.0:
        raise ValueError(
            "`v_reset` must be 0 with convention='snntorch' (snntorch's reset_mechanism='zero' "
            f"resets to 0), got {v_reset}"
        )
    return reset, v_reset


def check_v_init(v_init, x, *, time_dim: int = 0):
    """An initial membrane shaped like one time step of `x` (`x` without its time axis).

    Raises
    ------
    TypeError
        If `v_init` is not a float tensor.
    ValueError
        If its shape is not ``x.shape`` without `time_dim`, it is on another device than `x`,
        or it holds NaN/inf.
    """
    if v_init is None:
        return None
    if not isinstance(v_init, torch.Tensor) or not v_init.is_floating_point():
        raise TypeError(
            f"`v_init` must be a float tensor or None, got "
            f"{v_init.dtype if isinstance(v_init, torch.Tensor) else type(v_init).__name__}"
        )
    step_shape = tuple(x.shape[: time_dim % x.ndim]) + tuple(x.shape[time_dim % x.ndim + 1 :])
    if tuple(v_init.shape) != step_shape:
        raise ValueError(
            f"`v_init` must have the shape of one time step of `x`, {step_shape}, got "
            f"{tuple(v_init.shape)}"
        )
    if v_init.device != x.device:
        raise ValueError(f"`v_init` must be on x's device {x.device}, got {v_init.device}")
    if not torch.compiler.is_compiling() and not bool(torch.isfinite(v_init).all()):
        raise ValueError("`v_init` contains NaN or infinity")
    return v_init
