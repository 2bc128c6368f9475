r"""Cost and quality of a ReFrame policy on a frame sequence, against the plain model.

$F_{full}$, $F_{hit}$ by ``FlopCounterMode``; per-hit cut $e = 1 - F_{hit}/F_{full}$; with skip
rate $s$ the FLOP cut is $s\,e$ and Amdahl's latency bound $1/(1 - s\,e)$ (spec §2). Wall times
are measured apart (median of repeats, CUDA synchronised, TF32 off), and so is the trigger.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import platform
import statistics
import time
import warnings
from typing import Any

import torch
from torch import nn

from icml25_core import check_scalar, check_tensor

from .metrics import flip, psnr, sequence_psnr, smape
from .policies import Policy
from .wrapper import ReFrame

__all__ = ["BenchReport", "run", "amdahl_bound", "machine_info"]


def amdahl_bound(skip_rate: float, e: float) -> float:
    r"""Amdahl's latency bound $1 / (1 - s\,e)$ of skipping a fraction $e$ of the work on a
    fraction $s$ of the frames.

    Parameters
    ----------
    skip_rate : float
        $s \in [0, 1]$.
    e : float
        Per-hit FLOP cut $1 - F_{hit}/F_{full} \in [0, 1]$.

    Returns
    -------
    float
        >= 1; ``inf`` when $s\,e = 1$.

    Notes
    -----
    Source: Amdahl's law; spec §2.
    """
    check_scalar(skip_rate, "skip_rate", low=0, high=1)
    check_scalar(e, "e", low=0, high=1)
    cut = skip_rate * e
    return math.inf if cut >= 1 else 1.0 / (1.0 - cut)


def machine_info(device: torch.device) -> dict[str, Any]:
    """Device, threads, cores and load average, with ``unreliable`` when the 1-minute load
    exceeds the core count (timings on a shared machine)."""
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
    return {
        "device": str(device),
        "device_name": name or platform.machine(),
        "threads": torch.get_num_threads(),
        "cores": cores,
        "load_1min": load,
        "unreliable": bool(load > cores),
    }


@contextlib.contextmanager
def _no_tf32():
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclasses.dataclass
class BenchReport:
    r"""What :func:`run` measured; ``to_dict()`` gives plain JSON types.

    Attributes
    ----------
    policy : str
    frames, skipped : int
    skip_rate, e, flops_reduction, amdahl_bound : float
        $s$, $e$, $s\,e$, $1/(1-s\,e)$.
    flops_full, flops_hit : int
        Exact ``FlopCounterMode`` counts per frame.
    history : list of bool
        True for refresh frames.
    psnr_vs_baseline, flip_vs_baseline : list of float
        Per frame against the uncached output (``inf`` / 0 on refresh frames).
    psnr_vs_baseline_mean, psnr_vs_baseline_skipped, sequence_psnr_vs_baseline : float
    flip_vs_baseline_mean, flip_vs_baseline_skipped : float or None
        None without flip-evaluator or for non-RGB outputs.
    psnr_vs_reference, baseline_psnr_vs_reference : float or None
        Mean per-frame PSNR against the ground truth, cached and plain.
    wall_baseline_s, wall_reframe_s, speedup : float or None
        Median seconds for the whole sequence (None when ``repeats=0``).
    wall_full_s, wall_hit_s, wall_trigger_s : float or None
        Median seconds per full frame, hit frame and SMAPE trigger.
    bitwise_refresh_equal : bool
        Refresh frames equal the plain model's output bit for bit.
    machine : dict
        :func:`machine_info` plus batch size.
    """

    policy: str
    frames: int
    skipped: int
    skip_rate: float
    flops_full: int
    flops_hit: int
    e: float
    flops_reduction: float
    amdahl_bound: float
    history: list[bool]
    psnr_vs_baseline: list[float]
    flip_vs_baseline: list[float] | None
    psnr_vs_baseline_mean: float
    psnr_vs_baseline_skipped: float | None
    sequence_psnr_vs_baseline: float
    flip_vs_baseline_mean: float | None
    flip_vs_baseline_skipped: float | None
    psnr_vs_reference: float | None
    baseline_psnr_vs_reference: float | None
    wall_baseline_s: float | None
    wall_reframe_s: float | None
    speedup: float | None
    wall_full_s: float | None
    wall_hit_s: float | None
    wall_trigger_s: float | None
    bitwise_refresh_equal: bool
    machine: dict

    def to_dict(self) -> dict:
        """Plain-type dict (JSON-ready; inf/NaN kept as floats)."""
        return dataclasses.asdict(self)


def _mean(values) -> float | None:
    values = list(values)
    return float(sum(values) / len(values)) if values else None


def _time(fn, repeats: int, device) -> float:
    times = []
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@torch.inference_mode()
def run(
    model: nn.Module,
    frames: torch.Tensor,
    *,
    cache,
    policy: str | Policy,
    trigger="input",
    warmup: int = 5,
    repeats: int = 5,
    reference: torch.Tensor | None = None,
    baseline: list[torch.Tensor] | None = None,
    with_flip: bool = True,
    compat: str | None = None,
) -> BenchReport:
    """Run `model` plain and wrapped by :class:`ReFrame` over `frames`; measure cost and quality.

    Parameters
    ----------
    model : nn.Module
        The network on its device (run in eval mode, its mode restored after); frames are
        moved there.
    frames : Tensor, shape [T, C, H, W], floating point
        The input sequence; frame t is fed as a batch of one, ``frames[t:t+1]``.
    cache, policy, trigger, compat
        As for :class:`ReFrame`.
    warmup : int, default=5
        Untimed frames before timing.
    repeats : int, default=5
        Timed repetitions of the sequence (median); 0 skips wall timing.
    reference : Tensor, shape [T, C', H', W'], optional
        Ground truth for PSNR against the model's outputs.
    baseline : list of Tensor, optional
        Precomputed plain outputs (saves a pass when several policies share a sequence).
    with_flip : bool, default=True
        Compute ꟻLIP (needs the ``[flip]`` extra and RGB outputs; warns and reports None
        otherwise).

    Returns
    -------
    BenchReport

    Raises
    ------
    ValueError
        If `frames` is not [T, C, H, W], `reference` or `baseline` has another length, or a
        `reference` frame's shape differs from the output's.

    Warns
    -----
    UserWarning
        When the measured per-hit saving is below the trigger's cost (DeltaCNN#7), or ꟻLIP
        was asked for but cannot be computed.

    Notes
    -----
    The model runs in eval mode; its train/eval mode is restored on return.

    Source: spec §2 (cost and quality protocol), §6 (timing: warm-up, median, synchronize,
    TF32 off); official ``samples/flip/compare_images.py`` (ꟻLIP against the uncached output).
    """
    check_tensor(frames, "frames", ndim=4)
    if not frames.is_floating_point():
        raise TypeError(f"`frames` must be floating point, got {frames.dtype}")
    check_scalar(warmup, "warmup", kind=int, low=0)
    check_scalar(repeats, "repeats", kind=int, low=0)
    T = frames.shape[0]
    if reference is not None:
        check_tensor(reference, "reference", ndim=4)
        if reference.shape[0] != T:
            raise ValueError(
                f"`reference` must have {T} frames like `frames`, got {reference.shape[0]}"
            )
    if baseline is not None and len(baseline) != T:
        raise ValueError(f"`baseline` must have {T} outputs like `frames`, got {len(baseline)}")
    was_training = model.training
    model.eval()
    try:
        return _run(
            model, frames, cache, policy, trigger, warmup, repeats, reference, baseline,
            with_flip, compat,
        )  # fmt: skip
    finally:
        model.train(was_training)


def _run(
    model, frames, cache, policy, trigger, warmup, repeats, reference, baseline, with_flip, compat
) -> BenchReport:
    T = frames.shape[0]
    param = next(iter(model.parameters()), None)
    device = param.device if param is not None else frames.device
    frames = frames.to(device)
    wrapped = ReFrame(model, cache, policy=policy, trigger=trigger, compat=compat)
    seq = [frames[t : t + 1] for t in range(T)]
    with _no_tf32():
        if baseline is None:
            baseline = [model(x) for x in seq]
        outputs = [wrapped(x) for x in seq]
        history = list(wrapped.history)
        counts = wrapped.flops(seq[0])
        e = 1.0 - counts["hit"] / counts["full"] if counts["full"] else 0.0
        s = wrapped.skip_rate
        timing: dict[str, float | None] = dict.fromkeys(
            ("base", "wrapped", "full", "hit", "trigger")
        )
        if repeats:
            for x in seq[:warmup]:
                model(x)

            def run_wrapped():
                wrapped.reset()
                for x in seq:
                    wrapped(x)

            def run_base():
                for x in seq:
                    model(x)

            run_wrapped()
            base_t, wrapped_t = [], []
            for _ in range(repeats):  # interleaved, so that a changing load hits both alike
                base_t.append(_time(run_base, 1, device))
                wrapped_t.append(_time(run_wrapped, 1, device))
            timing["base"] = statistics.median(base_t)
            timing["wrapped"] = statistics.median(wrapped_t)
            if wrapped.full_graph is not None:
                full, hit = wrapped.full_graph, wrapped.hit_graph
                assert hit is not None
                _, cached = full(seq[0])
                n = min(T, 10)
                timing["full"] = _time(lambda: [full(x) for x in seq[:n]], repeats, device) / n
                timing["hit"] = (
                    _time(lambda: [hit(*cached, x) for x in seq[:n]], repeats, device) / n
                )
                timing["trigger"] = (
                    _time(lambda: [float(smape(x, seq[0])) for x in seq[:n]], repeats, device) / n
                )
    saving = None if timing["full"] is None else timing["full"] - (timing["hit"] or 0.0)
    if saving is not None and timing["trigger"] is not None and saving < timing["trigger"]:
        warnings.warn(
            f"the per-hit saving ({1e3 * saving:.3f} ms) is below the trigger's cost "
            f"({1e3 * timing['trigger']:.3f} ms): caching cannot pay off here (DeltaCNN#7)",
            stacklevel=4,
        )
    skipped_idx = [t for t in range(T) if not history[t]]
    p_frames = [psnr(o, b) for o, b in zip(outputs, baseline, strict=True)]
    mses = [
        float(((o.double().clamp(0, 1) - b.double().clamp(0, 1)) ** 2).mean())
        for o, b in zip(outputs, baseline, strict=True)
    ]
    f_frames = None
    if with_flip and not (
        isinstance(outputs[0], torch.Tensor) and outputs[0].ndim == 4 and outputs[0].shape[1] == 3
    ):
        warnings.warn(
            "with_flip=True but the outputs are not [N, 3, H, W] RGB: no FLIP reported",
            stacklevel=4,
        )
    elif with_flip:
        try:
            f_frames = [
                0.0 if h else flip(b, o) for o, b, h in zip(outputs, baseline, history, strict=True)
            ]
        except ImportError as err:
            warnings.warn(
                f"with_flip=True but FLIP is unavailable ({err}); install the [flip] extra. "
                "No FLIP reported",
                stacklevel=4,
            )
    p_ref = b_ref = None
    if reference is not None:
        ref = reference.to(device)
        if ref.shape[1:] != outputs[0].shape[1:]:
            raise ValueError(
                f"`reference` frames must have the output's shape {tuple(outputs[0].shape[1:])}, "
                f"got {tuple(ref.shape[1:])}"
            )
        p_ref = _mean(psnr(o, ref[t : t + 1]) for t, o in enumerate(outputs))
        b_ref = _mean(psnr(b, ref[t : t + 1]) for t, b in enumerate(baseline))
    bitwise = all(
        torch.equal(o, b) for o, b, h in zip(outputs, baseline, history, strict=True) if h
    )
    finite = [p for p in p_frames if math.isfinite(p)]
    info = machine_info(device) | {"batch": 1, "sequence": list(frames.shape)}
    speed = None
    if timing["base"] is not None and timing["wrapped"]:
        speed = timing["base"] / timing["wrapped"]
    return BenchReport(
        policy=str(policy),
        frames=T,
        skipped=wrapped.skipped,
        skip_rate=s,
        flops_full=counts["full"],
        flops_hit=counts["hit"],
        e=e,
        flops_reduction=s * e,
        amdahl_bound=amdahl_bound(s, e),
        history=history,
        psnr_vs_baseline=p_frames,
        flip_vs_baseline=f_frames,
        psnr_vs_baseline_mean=sum(finite) / len(finite) if finite else math.inf,
        psnr_vs_baseline_skipped=_mean(p_frames[t] for t in skipped_idx),
        sequence_psnr_vs_baseline=sequence_psnr(mses),
        flip_vs_baseline_mean=_mean(f_frames) if f_frames is not None else None,
        flip_vs_baseline_skipped=(
            _mean(f_frames[t] for t in skipped_idx) if f_frames is not None else None
        ),
        psnr_vs_reference=p_ref,
        baseline_psnr_vs_reference=b_ref,
        wall_baseline_s=timing["base"],
        wall_reframe_s=timing["wrapped"],
        speedup=speed,
        wall_full_s=timing["full"],
        wall_hit_s=timing["hit"],
        wall_trigger_s=timing["trigger"],
        bitwise_refresh_equal=bitwise,
        machine=info,
    )
