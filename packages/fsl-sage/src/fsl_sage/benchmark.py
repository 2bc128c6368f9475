"""Benchmarks of spec Sec. 6 (run by ``fsl-sage bench`` and ``benchmarks/bench_*.py``).

* alignment step: closed-form linear-aux gradient (:meth:`LinearGradScalarAux.alignment_grad`)
  vs autograd double backward (:meth:`GradScalarAux.alignment_loss`), eager and
  ``torch.compile``'d; B = 1000, d = 2304, C = 10.
* one round: wall time FSL-SAGE / SplitFed-v2 and the exact bytes ratio (closed forms of Sec. 2).
"""

from __future__ import annotations

import time

import torch

from .algorithms import fsl_sage, splitfed_v2
from .aux import GradScalarAux, LinearGradScalarAux
from .models import simple_conv_split
from .simulate import Simulation

__all__ = ["align_step_timings", "round_timings"]


def _best_of(fn, repeats: int) -> float:
    fn()  # warm-up (and compilation)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def align_step_timings(
    batch: int = 1000, d: int = 2304, classes: int = 10, repeats: int = 10, compile: bool = True
) -> dict[str, float | str]:
    """Seconds per alignment-gradient evaluation (best of ``repeats``), by method.

    Both methods are timed as ``align`` runs them per mini-batch: without the input checks,
    which ``align`` does once per call (their NaN scans cost more than either gradient at this
    shape, ``input_checks``).

    Returns
    -------
    dict
        ``closed_form``, ``double_backward``, ``input_checks`` and, when ``compile`` works
        here, ``double_backward_compiled`` (else ``compile_error`` holds the reason).
    """
    torch.manual_seed(0)
    aux = LinearGradScalarAux(d, classes)
    generic = GradScalarAux(aux.net)
    z, y = torch.randn(batch, d), torch.randint(0, classes, (batch,))
    g_star = torch.randn(batch, d) * 1e-2
    params = [aux.linear.weight, aux.linear.bias]

    def autograd_step():
        return torch.autograd.grad(generic._alignment_loss(z, y, g_star), params)

    out: dict[str, float | str] = {
        "closed_form": _best_of(lambda: aux._alignment_grad(z, y, g_star), repeats),
        "double_backward": _best_of(autograd_step, repeats),
        "input_checks": _best_of(lambda: aux._check(z, y, g_star), repeats),
    }
    if compile:
        try:
            compiled = torch.compile(autograd_step)
            out["double_backward_compiled"] = _best_of(compiled, repeats)
        except Exception as err:  # inductor needs a C++ toolchain; report instead of failing
            out["compile_error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
    return out


def round_timings(
    clients: int = 2, per_client: int = 256, batch_size: int = 64, seed: int = 0
) -> dict[str, float]:
    """One round of FSL-SAGE (aligning) and SplitFed-v2 on random 28x28 data, widths 16/32.

    Returns
    -------
    dict
        ``fsl_sage_s``, ``splitfed_v2_s`` (wall seconds) and their official bytes.
    """
    gen = torch.Generator().manual_seed(seed)
    parts = [
        (torch.randn(per_client, 1, 28, 28, generator=gen),
         torch.randint(0, 10, (per_client,), generator=gen))
        for _ in range(clients)
    ]  # fmt: skip
    out = {}
    for name, alg in (("fsl_sage", fsl_sage(5, 1, 1000)), ("splitfed_v2", splitfed_v2())):
        torch.manual_seed(seed)
        sim = Simulation(simple_conv_split(widths=(16, 32)), parts, alg, batch_size=batch_size)
        start = time.perf_counter()
        sim.run_round()
        out[f"{name}_s"] = time.perf_counter() - start
        out[f"{name}_bytes"] = sim.meter.official_total()
    return out
