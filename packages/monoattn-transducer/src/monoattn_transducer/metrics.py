"""Latency and quality metrics of simultaneous generation.

``average_lagging``: Ma et al., "STACL", ACL 2019, eq. (4) (SimulEval's ``AverageLagging``);
``corpus_bleu``: sacrebleu (``[eval]`` extra).
"""

import itertools
import math
from collections.abc import Iterable, Sequence

from icml25_core import check_scalar

__all__ = ["average_lagging", "corpus_bleu"]


def average_lagging(delays: Sequence[float], source_length: float, target_length: int) -> float:
    r"""Average lagging of one output.

    $$\mathrm{AL}=\frac{1}{\tau}\sum_{i=1}^{\tau}\Bigl(d_i-\frac{(i-1)\,|X|}{|Y|}\Bigr),\quad
    \tau=\min\{i: d_i\ge |X|\}\ (\text{else } |d|)$$

    (Ma et al. 2019, eq. 4.)

    Parameters
    ----------
    delays : sequence of float
        Source amount read (frames, words or ms) when each output token was written; non-decreasing.
    source_length : float
        ``|X|`` in the unit of `delays`.
    target_length : int
        ``|Y|`` (the output length; SimulEval's default).

    Returns
    -------
    float, in the unit of `delays`.

    Raises
    ------
    TypeError
        For delays that are not a sequence of numbers (a str, say).
    ValueError
        For empty or decreasing delays, negative or non-finite values, or non-positive lengths.
    """
    if isinstance(delays, str | bytes) or not isinstance(delays, Iterable):
        raise TypeError(f"`delays` must be a sequence of numbers, got {type(delays).__name__}")
    try:
        d = [float(x) for x in delays]
    except (TypeError, ValueError):
        raise TypeError("`delays` must be a sequence of numbers") from None
    if not d:
        raise ValueError("`delays` must not be empty")
    if any(not math.isfinite(x) or x < 0 for x in d) or any(
        b < a for a, b in itertools.pairwise(d)
    ):
        raise ValueError("`delays` must be finite, non-negative and non-decreasing")
    check_scalar(source_length, "source_length", low=0, inclusive="neither")
    if not math.isfinite(float(source_length)):
        raise ValueError(f"`source_length` must be finite, got {source_length}")
    check_scalar(target_length, "target_length", kind=int, low=1)
    tau = next((i + 1 for i, x in enumerate(d) if x >= source_length), len(d))
    ratio = source_length / target_length
    return sum(d[i] - i * ratio for i in range(tau)) / tau


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Corpus BLEU of space-separated token strings (sacrebleu, ``tokenize="none"``,
    ``effective_order=True``: n-gram orders absent from the whole corpus are skipped, so items of
    at most 3 morphemes do not force BLEU to 0).

    Raises
    ------
    ValueError
        For empty input or different lengths.
    """
    if len(hypotheses) == 0 or len(hypotheses) != len(references):
        raise ValueError("`hypotheses` and `references` must be non-empty and of equal length")
    from sacrebleu.metrics import BLEU

    bleu = BLEU(tokenize="none", effective_order=True)
    return float(bleu.corpus_score(list(hypotheses), [list(references)]).score)
