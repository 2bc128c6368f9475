"""Convergence diagnostics: how far K Heaviside evaluations are from the exact LIF.

Source: Feng et al., ICML 2025, Sec. 4 (convergence of the fixed-point iteration: A is strictly
lower-triangular, so after k evaluations the spikes of steps t <= k are exact, and all are for
k >= T). That holds in exact arithmetic; in floating point the matrix form rounds differently
from the sequential recurrence, so a membrane within rounding of the threshold (a tie) can
fire differently, which this report then counts as a mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ._validation import check_input, check_K
from .fpt import fpt_lif
from .lif import lif_sequential

_LIF_KEYS = ("tau", "v_threshold", "convention", "reset", "v_reset", "decay_input")


@dataclass(frozen=True)
class ConvergenceReport:
    """Mismatch of Heaviside FPT against :func:`fpt_snn.lif_sequential`, per K.

    Attributes
    ----------
    K : tuple of int
        1, ..., K_max.
    mismatch : tuple of float
        Fraction of (step, neuron) spikes that differ, per K.
    first_wrong_step : tuple of (int or None)
        The earliest 1-based step with a wrong spike, per K (None: all exact).
    T : int
        Number of steps.
    rate : float
        Spike rate of the exact LIF.
    """

    K: tuple
    mismatch: tuple
    first_wrong_step: tuple
    T: int
    rate: float

    def as_rows(self):
        """``[(K, mismatch, first_wrong_step), ...]`` for printing."""
        return list(zip(self.K, self.mismatch, self.first_wrong_step, strict=True))


def convergence_report(x, K_max, **lif_kwargs):
    """Measure FPT's spike mismatch against the exact LIF for K = 1..K_max.

    Parameters
    ----------
    x : Tensor, shape [T, ...], float
        Input currents.
    K_max : int
        Largest number of evaluations (>= 1). K_max >= T gives zero mismatch in exact
        arithmetic (paper Sec. 4) and on generic real-valued currents; in floating point a
        membrane that lands on the threshold within rounding (integer or quantised currents,
        e.g. x = [1, 1, 2] at τ = 5 in float32: 1/3 of the spikes differ at K = 3) makes the
        matrix form and :func:`fpt_snn.lif_sequential` disagree there and after, so a nonzero
        mismatch at K >= T means threshold ties, not non-convergence. The computation runs in
        `x`'s dtype (half in float32), as :func:`fpt_snn.fpt_lif` does; float64 makes ties
        rarer, not impossible. Bit-exact LIF spikes come from :func:`fpt_snn.lif_sequential`
        (``FPTLIF(sample="lif")``, ``eval_sample="lif"``, :func:`fpt_snn.use_exact_lif`).
    **lif_kwargs
        ``tau``, ``v_threshold``, ``convention``, ``reset``, ``v_reset``, ``decay_input`` as in
        :func:`fpt_snn.lif_sequential`.

    Returns
    -------
    ConvergenceReport

    Raises
    ------
    TypeError, ValueError
        On a bad `x`, `K_max` < 1 or > 10000, or an unknown keyword.

    Examples
    --------
    >>> import torch
    >>> x = torch.randn(8, 1000, dtype=torch.float64) * 0.8 + 0.6
    >>> convergence_report(x, 8).mismatch[-1]
    0.0
    """
    check_input(x)
    check_K(K_max, "K_max")
    unknown = set(lif_kwargs) - set(_LIF_KEYS)
    if unknown:
        raise ValueError(f"`lif_kwargs` accepts {', '.join(_LIF_KEYS)}; got {sorted(unknown)}")
    with torch.no_grad():
        exact = lif_sequential(x, **lif_kwargs)
        T = x.shape[0]
        mismatch, first = [], []
        for K in range(1, K_max + 1):
            spikes = fpt_lif(x, K=K, spike_fn="heaviside", sample="none", **lif_kwargs)
            wrong = (spikes != exact).reshape(T, -1)
            mismatch.append(float(wrong.float().mean()))
            steps = torch.nonzero(wrong.any(dim=1))
            first.append(int(steps[0]) + 1 if len(steps) else None)
    return ConvergenceReport(
        K=tuple(range(1, K_max + 1)),
        mismatch=tuple(mismatch),
        first_wrong_step=tuple(first),
        T=T,
        rate=float(exact.float().mean()),
    )
