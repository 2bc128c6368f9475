r"""Refresh policies of ReFrame: when to recompute the cached deep features.

A policy sees frame ``t`` (counted from 0 at the last reset), the trigger tensor and the previous
frame's output, and answers *refresh* (run the full network, store the cache) or *hit* (reuse
the cache). The wrapper forces a refresh on frame 0, after ``reset()`` and when an input's shape,
dtype or device changes, and tells the policy through :meth:`Policy.on_refresh`.

Sources: Liu & Aamodt, ICML 2025 (arXiv:2506.13814), Sec. 3 (cache policies); official code
github.com/ubc-aamodt-group/reframe-layer-caching at commit 83696aa: ``samples/unet/unet.py``
(``N-k`` and ``delta``), ``samples/FE/inference.py`` (``delta``, reference = input at the last
refresh), ``samples/SS/inference.py`` (``delta`` on input and output, halved score at a start).
"""

from __future__ import annotations

import math
import re

import torch

from icml25_core import check_choice, check_scalar

from .metrics import smape

__all__ = ["Policy", "EveryN", "Delta", "DeltaInOut", "Always", "Never", "parse_policy"]


class Policy:
    """Base class of refresh policies: decide per frame whether the cache is refreshed.

    Subclasses implement :meth:`decide`; they may keep state (reference tensors) that
    :meth:`on_refresh` updates and :meth:`reset` clears. Policies hold no globals and pickle.
    :class:`~reframe_cache.ReFrame` deep-copies the policy it is given, so one object can
    configure several wrappers without sharing state; read a wrapper's own as ``.policy``.

    Attributes
    ----------
    uses_output : bool
        Whether the policy reads the outputs; if so the wrapper hands it private copies (the
        caller may modify returned outputs in place). False skips that copy.
    """

    uses_output: bool = True

    def decide(self, t: int, trigger: torch.Tensor | None, prev_output) -> bool:
        """Whether frame `t` refreshes the cache (True) or reuses it (False).

        Parameters
        ----------
        t : int
            Frame index since the last reset (0 is always a forced refresh, handled by the
            wrapper, which does not call `decide` then).
        trigger : Tensor or None
            The trigger buffer of frame `t` (the input by default).
        prev_output : Tensor or None
            The wrapper's output of frame ``t - 1`` (None at a start).

        Returns
        -------
        bool
        """
        raise NotImplementedError

    def on_refresh(self, trigger: torch.Tensor | None, output, prev_output=None) -> None:
        """Record a refresh (forced or decided): store the references the policy compares to.

        Parameters
        ----------
        trigger : Tensor or None
            The trigger of the refresh frame.
        output : Tensor or None
            The output of the refresh frame.
        prev_output : Tensor or None
            The output of the frame before it (what SS's rule stores).
        """

    def observe(self, trigger: torch.Tensor | None, output) -> None:
        """Called after every frame (refresh or hit); policies with a previous-frame reference
        update it here."""

    def reset(self) -> None:
        """Forget all references (a new sequence starts)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Always(Policy):
    """Refresh every frame: the plain model (bit-identical outputs, spec §5 test 1)."""

    uses_output = False

    def decide(self, t, trigger, prev_output) -> bool:
        """Always True."""
        return True


class Never(Policy):
    """Never refresh unless forced (frame 0, ``reset()``, a changed input shape/dtype/device)."""

    uses_output = False

    def decide(self, t, trigger, prev_output) -> bool:
        """Always False."""
        return False


class EveryN(Policy):
    r"""Refresh iff $t \bmod k = 0$, $t$ counted from 0 at the last reset (``N-k``).

    Over $T$ frames it refreshes $\lceil T/k \rceil$ times and skips $T - \lceil T/k \rceil$.

    Parameters
    ----------
    k : int
        Refresh period, >= 1 (1 = always).

    Raises
    ------
    TypeError
        If `k` is not an int.
    ValueError
        If ``k < 1``.

    Notes
    -----
    Source: official ``samples/unet/unet.py`` and ``samples/FE/inference.py``
    (``refresh = i % every_n == 0``, ``i`` from 0). The SS sample counts its ``iter`` from 1, so
    its first refresh after frame 0 is frame ``k - 1``: a phase difference, not reproduced here.
    """

    uses_output = False

    def __init__(self, k: int):
        check_scalar(k, "k", kind=int, low=1)
        self.k = int(k)

    def decide(self, t, trigger, prev_output) -> bool:
        """True iff ``t % k == 0``."""
        return t % self.k == 0

    def __repr__(self) -> str:
        return f"EveryN(k={self.k})"


def _check_threshold(threshold) -> float:
    check_scalar(threshold, "threshold", low=0)
    return float(threshold)


class Delta(Policy):
    r"""Frame-difference trigger (``delta-τ``): refresh iff $s(x_t, x_r) > \tau$.

    $$ s(x_t, x_r) = \frac{2\,\mathrm{mean}|x_t - x_r|}{\mathrm{mean}(|x_t| + |x_r|)} $$

    (:func:`reframe_cache.metrics.smape`), with $x_r$ the trigger at the **last refresh**.

    Parameters
    ----------
    threshold : float
        $\tau \ge 0$; ``math.inf`` never refreshes unless forced, 0 refreshes whenever the
        trigger changes. Official defaults: FE 0.20, SS 0.25, IC 0.25, demo U-Net 0.10.
    reference : {"last_refresh", "previous"}, default="last_refresh"
        What $x_r$ is. ``"previous"`` (the previous frame) is *not* ReFrame's rule: slow drift
        never accumulates and the cache can go stale forever (spec §5 test 3).

    Raises
    ------
    TypeError
        If `threshold` is not a real number.
    ValueError
        If `threshold` is negative or NaN, or `reference` is unknown.

    Notes
    -----
    A NaN score (a NaN or infinite trigger) refreshes, so a broken frame never freezes the cache.
    Source: official ``samples/FE/inference.py`` (``prev_input = input`` only on a refresh) and
    ``samples/unet/unet.py`` (``reframe_cached_input`` stored on a refresh).
    """

    uses_output = False

    def __init__(self, threshold: float, reference: str = "last_refresh"):
        self.threshold = _check_threshold(threshold)
        self.reference = check_choice(reference, "reference", ("last_refresh", "previous"))
        self._ref: torch.Tensor | None = None

    def score(self, trigger: torch.Tensor) -> torch.Tensor:
        """The SMAPE of `trigger` against the stored reference (0-dim tensor on its device)."""
        if self._ref is None:
            raise RuntimeError("no reference stored yet: the first frame must be a refresh")
        return smape(trigger, self._ref)

    def decide(self, t, trigger, prev_output) -> bool:
        """True iff the SMAPE against the reference exceeds the threshold (one host sync)."""
        if trigger is None:
            raise ValueError("`trigger` is required by the delta policy")
        if self._ref is None or self._ref.shape != trigger.shape:
            return True
        if math.isinf(self.threshold):
            return False
        return not bool(self.score(trigger) <= self.threshold)  # NaN refreshes

    def on_refresh(self, trigger, output, prev_output=None) -> None:
        """Store the refresh frame's trigger as the reference."""
        self._ref = None if trigger is None else trigger.detach().clone()

    def observe(self, trigger, output) -> None:
        """With ``reference="previous"``, every frame becomes the next reference."""
        if self.reference == "previous" and trigger is not None:
            self._ref = trigger.detach().clone()

    def reset(self) -> None:
        """Forget the reference."""
        self._ref = None

    def __repr__(self) -> str:
        return f"Delta(threshold={self.threshold}, reference={self.reference!r})"


class DeltaInOut(Policy):
    r"""SS's input-and-output trigger (``delta-in-out-τ``): refresh iff $(s_{in}+s_{out})/2 > \tau$.

    $s_{in} = s(x_t, x_r)$ on the trigger (the LR input) against the trigger at the last
    refresh; $s_{out} = s(y_{t-1}, y_r)$ between the previous frame's output and the output
    stored at the last refresh, which is the output of the frame *before* that refresh.

    While no output is stored (after a start, until the next refresh), the clean rule here uses
    $s = s_{in}$; ``compat="official"`` uses SS's $s = s_{in}/2$ (its ``prev_res`` is ``None``
    then, and it halves the score: refreshes come later at a sequence start; DECISIONS 7).

    Parameters
    ----------
    threshold : float
        $\tau \ge 0$ (SS's default 0.25).
    compat : {None, "official"}, default=None
        ``"official"`` reproduces the halved score at a sequence start.

    Raises
    ------
    TypeError, ValueError
        As :class:`Delta`, and for an unknown `compat`.

    Notes
    -----
    Source: official ``samples/SS/inference.py`` lines 136-160 (``full_smape = (smape +
    res_smape) / 2``; ``full_smape = smape / 2`` while ``prev_res is None``; on a refresh
    ``prev_res = net.resimg``, the output of the previous call).
    """

    def __init__(self, threshold: float, compat: str | None = None):
        self.threshold = _check_threshold(threshold)
        self.compat = check_choice(compat, "compat", (None, "official"))
        self._ref_in: torch.Tensor | None = None
        self._ref_out: torch.Tensor | None = None

    def score(self, trigger: torch.Tensor, prev_output) -> torch.Tensor:
        """The combined score $s$ of this frame (0-dim tensor)."""
        if self._ref_in is None:
            raise RuntimeError("no reference stored yet: the first frame must be a refresh")
        s_in = smape(trigger, self._ref_in)
        if self._ref_out is None or prev_output is None or prev_output.shape != self._ref_out.shape:
            return s_in / 2 if self.compat == "official" else s_in
        return (s_in + smape(prev_output, self._ref_out)) / 2

    def decide(self, t, trigger, prev_output) -> bool:
        """True iff the combined score exceeds the threshold."""
        if trigger is None:
            raise ValueError("`trigger` is required by the delta-in-out policy")
        if self._ref_in is None or self._ref_in.shape != trigger.shape:
            return True
        return not bool(self.score(trigger, prev_output) <= self.threshold)  # NaN refreshes

    def on_refresh(self, trigger, output, prev_output=None) -> None:
        """Store the trigger and the *previous* frame's output (SS stores ``net.resimg``)."""
        self._ref_in = None if trigger is None else trigger.detach().clone()
        self._ref_out = None if prev_output is None else prev_output.detach().clone()

    def reset(self) -> None:
        """Forget both references."""
        self._ref_in = None
        self._ref_out = None

    def __repr__(self) -> str:
        return f"DeltaInOut(threshold={self.threshold}, compat={self.compat!r})"


def _tau(spec: str, text: str) -> float:
    try:
        tau = float(text)
    except ValueError:
        raise ValueError(
            f"`policy` {spec!r} is not understood: {text!r} is not a number; use "
            "'delta-<tau>' or 'delta-in-out-<tau>' with tau >= 0 (e.g. 'delta-0.1', 'delta-inf')"
        ) from None
    if math.isnan(tau):
        raise ValueError(f"`policy` {spec!r}: tau must not be NaN")
    if tau < 0:
        raise ValueError(f"`policy` {spec!r}: tau must be >= 0, got {tau}")
    return tau


def parse_policy(spec: str | Policy, *, compat: str | None = None) -> Policy:
    """A policy from its name: ``"N-4"``, ``"delta-0.25"``, ``"delta-in-out-0.25"``, ``"always"``,
    ``"never"`` (the official samples' ``reframe_cache_policy`` strings), or a :class:`Policy`.

    Parameters
    ----------
    spec : str or Policy
        The name (case-insensitive; ``"delta-inf"`` never refreshes unless forced) or a ready
        policy (returned as it is; :class:`~reframe_cache.ReFrame` copies it).
    compat : {None, "official"}, default=None
        Passed to :class:`DeltaInOut`.

    Returns
    -------
    Policy

    Raises
    ------
    ValueError
        If `spec` cannot be parsed, ``k < 1``, ``τ < 0`` or τ is NaN (naming `policy`).
    TypeError
        If `spec` is neither a str nor a Policy.
    """
    if isinstance(spec, Policy):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"`policy` must be a str or a Policy, got {type(spec).__name__}")
    text = spec.strip().lower()
    if text == "always":
        return Always()
    if text == "never":
        return Never()
    if m := re.fullmatch(r"n-([0-9]+)", text):
        k = int(m.group(1))
        if k < 1:
            raise ValueError(f"`policy` {spec!r}: k must be >= 1")
        return EveryN(k)
    if m := re.fullmatch(r"delta-in-out-(.+)", text):
        return DeltaInOut(_tau(spec, m.group(1)), compat=compat)
    if m := re.fullmatch(r"delta-(.+)", text):
        return Delta(_tau(spec, m.group(1)))
    raise ValueError(
        f"`policy` {spec!r} is not understood; use 'always', 'never', 'N-<k>' (k >= 1), "
        "'delta-<tau>' or 'delta-in-out-<tau>' (tau >= 0), or a Policy instance"
    )
