r"""Visibility levels and scores of WMarkGPT (Tan et al., ICML 2025).

The synthetic set's score is $s = \operatorname{round}(5 - 20w, 2)$ for the blend weight
$w \in [0, 0.25]$ (official ``datasetCreating/emb_watermark.py``), banded into five levels
(paper Sec. 3, WQA-Synthetic; official ``playground`` labels): $[0,1)$ obvious, $[1,2)$ visible,
$[2,3)$ moderate, $[3,4)$ faint, $[4,5]$ invisible.
"""

from __future__ import annotations

import math
import numbers

#: The five visibility words, from least to most visible (the order of the Q-score weights).
VISIBILITY_LEVELS: tuple[str, ...] = ("invisible", "faint", "moderate", "visible", "obvious")

#: Q-score weight of each level in `VISIBILITY_LEVELS` order (official ``evaluate/iqa_eval.py``:
#: ``score = sum(p * (5, 4, 3, 2, 1))``).
LEVEL_WEIGHTS: tuple[int, ...] = (5, 4, 3, 2, 1)

#: Largest blend weight of the official generator (``np.random.uniform(0, 0.25)``).
MAX_WEIGHT = 0.25


def _real(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be a real number, got {type(value).__name__}")
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"`{name}` must not be NaN")
    return value


def weight_to_score(w: float) -> float:
    r"""Visibility score of a blend weight: $s = \operatorname{round}(5 - 20 w, 2)$.

    Parameters
    ----------
    w : float
        Blend weight in $[0, 1]$ (the official generator draws $w \sim U[0, 0.25]$).

    Returns
    -------
    float
        The score in $[0, 5]$; weights above 0.25 are outside the paper's range and saturate at
        0 (obvious).

    Raises
    ------
    TypeError
        If `w` is not a real number.
    ValueError
        If `w` is NaN or outside $[0, 1]$.

    Notes
    -----
    Source: official ``datasetCreating/emb_watermark.py``,
    ``score = round((5 - 20 * weight), 2)`` (Python's ``round`` on the binary float).

    Examples
    --------
    >>> weight_to_score(0.12)
    2.6
    """
    w = _real(w, "w")
    if not 0.0 <= w <= 1.0:
        raise ValueError(f"`w` must be in [0, 1], got {w}")
    return max(round(5 - 20 * w, 2), 0.0)


def score_to_level(s: float) -> str:
    """Visibility level of a score: [0,1) obvious, [1,2) visible, [2,3) moderate, [3,4) faint,
    [4,5] invisible.

    Parameters
    ----------
    s : float
        Score in $[0, 5]$ (5 = invisible).

    Returns
    -------
    str
        One of `VISIBILITY_LEVELS`.

    Raises
    ------
    TypeError
        If `s` is not a real number.
    ValueError
        If `s` is NaN or outside $[0, 5]$.

    Notes
    -----
    Source: paper Sec. 3 (five levels of the 0-5 score, 5 = invisible); the half-open bands are
    the spec's reading of the official synthetic labels. WQA-Real's *human* labels follow them for
    483 of 500 images; the other 17 sit on a band edge (e.g. ``gt_score`` 4.0 labelled "faint").

    Examples
    --------
    >>> score_to_level(4.0), score_to_level(3.99)
    ('invisible', 'faint')
    """
    s = _real(s, "s")
    if not 0.0 <= s <= 5.0:
        raise ValueError(f"`s` must be in [0, 5], got {s}")
    band = min(math.floor(s), 4)  # 5.0 belongs to [4, 5]
    return VISIBILITY_LEVELS[::-1][band]
