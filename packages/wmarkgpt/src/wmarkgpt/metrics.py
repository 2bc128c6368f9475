r"""Metrics of WMarkGPT's evaluation: BLEU, ROUGE-L, visibility accuracy and the Q-score
correlations — correct by default, the official numbers under ``compat="wmarkgpt"``.

Sources: official ``llm/metrics/calulate_t2t_metrics.py`` and ``compute_from_json.py`` (BLEU-1,
ROUGE-L, ACC), ``evaluate/iqa_eval.py`` (Q-score), TanSongBai/WMarkGPT@2d812b4; paper Sec. 5
(Table 1 columns BLEU-1, ROUGE-L, LLM-Score, Vis. ACC; SRCC / PLCC of the Q-score).

Correct metrics (defaults): BLEU-n as in Papineni et al. 2002 (NLTK), ROUGE-L as the LCS F1 of
Lin 2004 with ``rouge-score``'s tokenizer, exact level match, Spearman (average ranks for ties) and
Pearson correlations from scipy.
"""

from __future__ import annotations

import gzip
import json
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from icml25_core import check_array, check_choice, check_scalar

from .levels import LEVEL_WEIGHTS, VISIBILITY_LEVELS

__all__ = [
    "Table",
    "bleu",
    "clean_text",
    "evaluate",
    "evaluate_qscore",
    "expected_score",
    "extract_visibility",
    "level_token_ids",
    "official_strip",
    "plcc",
    "position_accuracy",
    "rouge_l",
    "srcc",
    "visibility_accuracy",
]

COMPATS = (None, "wmarkgpt")


# --------------------------------------------------------------------------------------------
# text cleaning


def clean_text(s: str, eos: Sequence[str] = ("</s>",)) -> str:
    """Remove end-of-sequence token strings and surrounding whitespace.

    Parameters
    ----------
    s : str
        A model's answer or a reference.
    eos : sequence of str, default=("</s>",)
        Token strings removed wherever they occur (exact substrings).

    Returns
    -------
    str

    Raises
    ------
    TypeError
        If `s` is not a str or `eos` holds a non-str.

    Notes
    -----
    The official code writes ``.strip('<\\s>')``, which strips the *characters* ``<``, ``\\``,
    ``s``, ``>`` from both ends ("obvious</s>" -> "obvious</", "visibility is: obvious" ->
    "visibility is: obviou"); see :func:`official_strip` for that compat behaviour (spec Sec. 9).

    Examples
    --------
    >>> clean_text("The watermark visibility is: obvious</s>")
    'The watermark visibility is: obvious'
    """
    if not isinstance(s, str):
        raise TypeError(f"`s` must be a str, got {type(s).__name__}")
    for token in eos:
        if not isinstance(token, str) or not token:
            raise TypeError(f"`eos` must hold non-empty str, got {token!r}")
        s = s.replace(token, "")
    return s.strip()


def official_strip(s: str) -> str:
    r"""The official text cleaning, ``s.strip('<\s>')`` (compat; strips characters, not a token).

    Parameters
    ----------
    s : str

    Returns
    -------
    str

    Raises
    ------
    TypeError
        If `s` is not a str.

    Notes
    -----
    Source: ``llm/metrics/calulate_t2t_metrics.py`` (``'<\s>'`` is the 4 characters
    ``<``, ``\``, ``s``, ``>``).

    Examples
    --------
    >>> official_strip("sure, obvious</s>")
    'ure, obvious</'
    """
    if not isinstance(s, str):
        raise TypeError(f"`s` must be a str, got {type(s).__name__}")
    return s.strip("<\\s>")


# --------------------------------------------------------------------------------------------
# BLEU (NLTK)


def _texts(values, name: str) -> list[str]:
    if isinstance(values, str):
        raise TypeError(f"`{name}` must be a list of str, not a single str")
    values = list(values)
    if not values:
        raise ValueError(f"`{name}` is empty")
    for v in values:
        if not isinstance(v, str):
            raise TypeError(f"`{name}` must hold str, got {type(v).__name__}")
    return values


def _smoother(smoothing) -> Callable | None:
    from nltk.translate.bleu_score import SmoothingFunction

    if smoothing is None or callable(smoothing):
        return smoothing
    names = [f"method{i}" for i in range(8)]
    check_choice(smoothing, "smoothing", [None, *names])
    return getattr(SmoothingFunction(), smoothing)


def bleu(
    hyps: Sequence[str],
    refs: Sequence[str] | Sequence[Sequence[str]],
    n: int = 4,
    level: str = "sentence",
    smoothing: str | Callable | None = None,
) -> float:
    r"""BLEU-n: brevity penalty times the geometric mean of the clipped 1..n-gram precisions.

    $\mathrm{BLEU}_n = \mathrm{BP} \cdot \exp\big(\tfrac1n \sum_{k=1}^n \log p_k\big)$, tokens
    split on whitespace.

    Parameters
    ----------
    hyps : list of str
        Hypotheses.
    refs : list of str or list of list of str
        One reference per hypothesis, or a list of references per hypothesis.
    n : int, default=4
        Highest n-gram order (uniform weights $1/n$).
    level : {"sentence", "corpus"}, default="sentence"
        Mean of NLTK ``sentence_bleu`` over the pairs, or NLTK ``corpus_bleu``.
    smoothing : {None, "method0", ..., "method7"} or callable, default=None
        NLTK ``SmoothingFunction`` method (Chen & Cherry 2014).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If `hyps` is empty, lengths differ, `n` < 1 or `level` / `smoothing` is unknown.
    TypeError
        If an entry is not a str.

    Notes
    -----
    Source: Papineni et al. 2002, Eq. (1)-(2), computed by NLTK
    ``nltk.translate.bleu_score``. The official "BLEU-n" is ``corpus_bleu(weights=(n,))``
    $= \mathrm{BP} \cdot p_1^n$, not BLEU-n (spec Sec. 9); BLEU-1 coincides.

    Examples
    --------
    >>> round(bleu(["the cat sat on the mat"], ["the cat sat on a mat"], n=1), 4)
    0.8333
    """
    from nltk.translate.bleu_score import corpus_bleu, sentence_bleu

    hyps = _texts(hyps, "hyps")
    if isinstance(refs, str):
        raise TypeError("`refs` must be a list, not a single str")
    refs = list(refs)
    if len(refs) != len(hyps):
        raise ValueError(f"`refs` has {len(refs)} entries, `hyps` {len(hyps)}")
    ref_lists = [[r] if isinstance(r, str) else _texts(r, "refs") for r in refs]
    check_scalar(n, "n", kind=int, low=1)
    check_choice(level, "level", ("sentence", "corpus"))
    smooth = _smoother(smoothing)
    weights = (1.0 / n,) * n
    hyp_tokens = [h.split() for h in hyps]
    ref_tokens = [[r.split() for r in rs] for rs in ref_lists]
    import warnings

    with warnings.catch_warnings():  # NLTK warns on every zero n-gram count
        warnings.simplefilter("ignore", UserWarning)
        if level == "corpus":
            return float(
                corpus_bleu(ref_tokens, hyp_tokens, weights=weights, smoothing_function=smooth)
            )
        scores = [
            sentence_bleu(r, h, weights=weights, smoothing_function=smooth)
            for r, h in zip(ref_tokens, hyp_tokens, strict=True)
        ]
    return float(np.mean(scores))


# --------------------------------------------------------------------------------------------
# ROUGE-L


def _lcs_table(x: Sequence[str], y: Sequence[str]) -> np.ndarray:
    """DP table of LCS lengths, ``T[i, j] = LCS(x[:i], y[:j])``, one numpy row at a time:
    row_i = cummax(max(row_{i-1}, row_{i-1}[j-1] + [x_i = y_j])) (no recursion)."""
    vocab: dict[str, int] = {}
    xi = np.array([vocab.setdefault(t, len(vocab)) for t in x], dtype=np.int64)
    yi = np.array([vocab.setdefault(t, len(vocab)) for t in y], dtype=np.int64)
    table = np.zeros((len(x) + 1, len(y) + 1), dtype=np.int32)
    for i in range(1, len(x) + 1):
        prev = table[i - 1]
        cand = prev.copy()
        hit = np.flatnonzero(yi == xi[i - 1]) + 1
        cand[hit] = np.maximum(cand[hit], prev[hit - 1] + 1)
        table[i] = np.maximum.accumulate(cand)
    return table


def _lcs_words(x: Sequence[str], y: Sequence[str]) -> list[str]:
    """The LCS that ``rouge`` 1.0.1's ``_recon_lcs`` reconstructs (same tie rule), iteratively."""
    table = _lcs_table(x, y)
    i, j, out = len(x), len(y), []
    while i > 0 and j > 0:
        if x[i - 1] == y[j - 1]:
            out.append(x[i - 1])
            i, j = i - 1, j - 1
        elif table[i - 1, j] > table[i, j - 1]:
            i -= 1
        else:
            j -= 1
    return out[::-1]


def _rouge_l_wmarkgpt(hyp: str, ref: str) -> float:
    # rouge 1.0.1 Rouge._get_scores: sentences split on "." (empty pieces dropped), whitespace
    # normalised; words split on " "; rouge_l_summary_level with exclusive=True (sets).
    hyp_s = [" ".join(p.split()) for p in hyp.split(".") if len(p) > 0]
    ref_s = [" ".join(p.split()) for p in ref.split(".") if len(p) > 0]
    if not hyp_s or not ref_s:
        return 0.0  # rouge 1.0.1 raises "Collections must contain at least 1 sentence."

    def words(sentences):
        return [w for s in sentences for w in s.split(" ")]

    m, n = len(set(words(ref_s))), len(set(words(hyp_s)))
    union: set[str] = set()
    for r in ref_s:
        r_words = r.split(" ")
        for c in hyp_s:
            union.update(_lcs_words(r_words, c.split(" ")))
    llcs = len(union)
    r_lcs, p_lcs = llcs / m, llcs / n
    return 2.0 * ((p_lcs * r_lcs) / (p_lcs + r_lcs + 1e-8))


_TOKENIZER: Any = None


def _rouge_tokens(text: str) -> list[str]:
    global _TOKENIZER
    if _TOKENIZER is None:
        from rouge_score.tokenizers import DefaultTokenizer

        _TOKENIZER = DefaultTokenizer(use_stemmer=False)
    return _TOKENIZER.tokenize(text)


def rouge_l(hyp: str, ref: str, variant: str = "standard") -> float:
    r"""ROUGE-L F1 of one hypothesis against one reference.

    Standard: $R = \mathrm{LCS}/|ref|$, $P = \mathrm{LCS}/|hyp|$, $F = 2PR/(P+R)$ over
    ``rouge-score``'s tokens (lower-cased, non-alphanumerics as separators, no stemming).

    Parameters
    ----------
    hyp, ref : str
    variant : {"standard", "wmarkgpt"}, default="standard"
        "wmarkgpt" is ``rouge`` 1.0.1's (pltrdy) ``rouge-l`` f that the official table uses:
        summary-level union LCS over ``.``-split sentences, counting *unique* words (sets),
        $F = 2PR/(P+R+10^{-8})$, case-sensitive, tokens split on spaces.

    Returns
    -------
    float
        In $[0, 1]$.

    Raises
    ------
    TypeError
        If `hyp` or `ref` is not a str.
    ValueError
        If `variant` is unknown.

    Notes
    -----
    Source: Lin 2004, Sec. 3.1 (standard; equals ``rouge_score.rouge_scorer`` ``rougeL``);
    official ``calulate_t2t_metrics.py`` -> ``rouge.Rouge().get_scores`` (variant "wmarkgpt").
    The LCS is computed row by row with numpy, iteratively: ``rouge`` 1.0.1 recurses once per
    LCS word and fails past ~1000 tokens (pltrdy/rouge#19, #67) and raises on a hypothesis
    that is only "." (#75), where this returns 0.0.

    Examples
    --------
    >>> round(rouge_l("the cat sat", "the cat sat down"), 4)
    0.8571
    """
    if not isinstance(hyp, str) or not isinstance(ref, str):
        raise TypeError("`hyp` and `ref` must be str")
    check_choice(variant, "variant", ("standard", "wmarkgpt"))
    if variant == "wmarkgpt":
        return _rouge_l_wmarkgpt(hyp, ref)
    h, r = _rouge_tokens(hyp), _rouge_tokens(ref)
    if not h or not r:
        return 0.0
    lcs = int(_lcs_table(r, h)[-1, -1])
    p, rec = lcs / len(h), lcs / len(r)
    return 0.0 if p + rec == 0 else 2 * p * rec / (p + rec)


# --------------------------------------------------------------------------------------------
# visibility


_LEVEL_RE = re.compile(r"\b(" + "|".join(VISIBILITY_LEVELS) + r")\b", re.IGNORECASE)
_FORMAT_RE = re.compile(
    r"visibility\s+is\s*:?\s*\**\s*\[?\s*(" + "|".join(VISIBILITY_LEVELS) + r")\b",
    re.IGNORECASE,
)


def extract_visibility(text: str) -> str | None:
    """The visibility level a description states (rule-based extractor).

    The level after "visibility is:" (the task's required format) when present, else the last
    level word in the text, else None.

    Parameters
    ----------
    text : str

    Returns
    -------
    str or None
        One of `VISIBILITY_LEVELS`, lower case.

    Raises
    ------
    TypeError
        If `text` is not a str.

    Notes
    -----
    Ours: the official pipeline asks an LLM (``datasetCreating/evaluate_*_gpt_api.py``) and
    stores its answer as ``visibility``; this is a deterministic stand-in, matching whole words
    ("invisible" never counts as "visible").

    Examples
    --------
    >>> extract_visibility("Faint lines. The watermark visibility is: moderate.")
    'moderate'
    """
    if not isinstance(text, str):
        raise TypeError(f"`text` must be a str, got {type(text).__name__}")
    found = _FORMAT_RE.search(text)
    if found:
        return found.group(1).lower()
    words = _LEVEL_RE.findall(text)
    return words[-1].lower() if words else None


def visibility_accuracy(
    preds: Sequence[str | None], gts: Sequence[str], match: str = "exact"
) -> float:
    """Fraction of predicted levels that match the ground truth.

    Parameters
    ----------
    preds : list of str or None
        Predicted level (or extracted text); None counts as wrong.
    gts : list of str
        Ground-truth levels.
    match : {"exact", "substring"}, default="exact"
        "exact": ``pred.strip().lower() == gt``. "substring": ``gt in pred`` (official
        ``compute_from_json.py``: "visible" is found in "invisible").

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If the lists are empty or differ in length, a prediction is neither a str nor None, a
        ground truth is not one of `VISIBILITY_LEVELS`, or `match` is unknown.

    Examples
    --------
    >>> visibility_accuracy(["invisible", "faint"], ["visible", "faint"], match="substring")
    1.0
    """
    check_choice(match, "match", ("exact", "substring"))
    preds, gts = list(preds), list(gts)
    if not gts:
        raise ValueError("`gts` is empty")
    if len(preds) != len(gts):
        raise ValueError(f"`preds` has {len(preds)} entries, `gts` {len(gts)}")
    for k, g in enumerate(gts):
        if not isinstance(g, str) or g.strip().lower() not in VISIBILITY_LEVELS:
            raise ValueError(f"`gts`[{k}] must be one of {VISIBILITY_LEVELS}, got {g!r}")
    for k, p in enumerate(preds):
        if p is not None and not isinstance(p, str):
            raise ValueError(f"`preds`[{k}] must be a str or None, got {p!r}")
    hits = []
    for p, g in zip(preds, gts, strict=True):
        if p is None:
            hits.append(False)
        elif match == "substring":
            hits.append(g in p)
        else:
            hits.append(p.strip().lower() == g.strip().lower())
    return float(np.mean(hits))


# --------------------------------------------------------------------------------------------
# Q-score


def level_token_ids(
    tokenizer, prefix: str = "The watermark visibility is: ", compat: str | None = None
) -> list[int]:
    """Token id of each level word at the position after `prefix` (Q-score readout).

    Parameters
    ----------
    tokenizer : callable
        A Hugging Face tokenizer (``tokenizer(text)["input_ids"]``).
    prefix : str, default="The watermark visibility is: "
    compat : {None, "wmarkgpt"}, default=None
        None: the first token that ``prefix + word`` adds after ``prefix``'s tokens.
        "wmarkgpt": ``tokenizer(word)["input_ids"][1]``, the first sub-token of the word
        tokenized alone after BOS (official ``evaluate/iqa_eval.py``).

    Returns
    -------
    list of int
        One id per level in `VISIBILITY_LEVELS` order.

    Raises
    ------
    ValueError
        If two level words map to the same first sub-token (their Q-score would be
        indistinguishable), naming the words, a word maps to the tokenizer's ``unk_token_id``,
        or `compat` is unknown.

    Examples
    --------
    >>> class Words:  # a toy whitespace tokenizer with BOS = 0
    ...     def __call__(self, text):
    ...         return {"input_ids": [0] + [len(w) for w in text.split()]}
    >>> level_token_ids(Words(), "visibility:")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ValueError: ...
    """
    check_choice(compat, "compat", COMPATS)
    if not isinstance(prefix, str):
        raise TypeError(f"`prefix` must be a str, got {type(prefix).__name__}")
    ids = []
    for word in VISIBILITY_LEVELS:
        if compat == "wmarkgpt":
            tokens = list(tokenizer(word)["input_ids"])
            if len(tokens) < 2:
                raise ValueError(f"`tokenizer` gives no token after BOS for {word!r}")
            ids.append(int(tokens[1]))
            continue
        base = list(tokenizer(prefix)["input_ids"])
        full = list(tokenizer(prefix + word)["input_ids"])
        k = 0
        while k < min(len(base), len(full)) and base[k] == full[k]:
            k += 1
        if k >= len(full):
            raise ValueError(f"`tokenizer` adds no token for {word!r} after `prefix`")
        ids.append(int(full[k]))
    unk = getattr(getattr(tokenizer, "tokenizer", tokenizer), "unk_token_id", None)
    for word, i in zip(VISIBILITY_LEVELS, ids, strict=True):
        if unk is not None and i == unk:
            raise ValueError(
                f"`tokenizer` maps level word {word!r} to the unknown token (id {i}): its "
                "vocabulary lacks the word, so the Q-score cannot read it"
            )
    seen: dict[int, str] = {}
    for word, i in zip(VISIBILITY_LEVELS, ids, strict=True):
        if i in seen:
            raise ValueError(
                f"level words {seen[i]!r} and {word!r} share first sub-token {i} with this "
                "`tokenizer` and `prefix`: the Q-score cannot tell them apart"
            )
        seen[i] = word
    return ids


def expected_score(logits) -> np.ndarray:
    r"""Q-score: $\sum_k \mathrm{softmax}(z)_k \cdot (5, 4, 3, 2, 1)_k$ over the 5 level logits.

    Parameters
    ----------
    logits : array_like of shape (..., 5), float
        Logits of the level words in `VISIBILITY_LEVELS` order (invisible ... obvious).

    Returns
    -------
    ndarray of shape (...), float64
        Scores in $[1, 5]$; uniform logits give 3.0.

    Raises
    ------
    ValueError
        If the last axis is not 5, or a logit is NaN/inf, or `logits` is empty.

    Notes
    -----
    Source: official ``evaluate/iqa_eval.py`` (softmax over the five level-word logits,
    weights 5..1; Q-Align's level-token scoring, Wu et al. 2024).

    Examples
    --------
    >>> float(expected_score([0.0, 0.0, 0.0, 0.0, 0.0]))
    3.0
    """
    from scipy.special import softmax

    z = check_array(
        logits,
        "logits",
        dtype="floating" if np.asarray(logits).dtype.kind == "f" else "numeric",
        cast=np.float64,
    )
    if z.ndim == 0 or z.shape[-1] != len(LEVEL_WEIGHTS):
        raise ValueError(f"`logits` must have shape (..., 5), got {z.shape}")
    return softmax(z, axis=-1) @ np.asarray(LEVEL_WEIGHTS, dtype=np.float64)


def _pair(x, y) -> tuple[np.ndarray, np.ndarray]:
    x = check_array(x, "x", ndim=1, cast=np.float64)
    y = check_array(y, "y", ndim=1, cast=np.float64)
    if len(x) != len(y):
        raise ValueError(f"`x` has {len(x)} values, `y` {len(y)}")
    if len(x) < 2:
        raise ValueError("`x` and `y` need at least 2 values")
    for name, v in (("x", x), ("y", y)):
        if np.all(v == v[0]):
            raise ValueError(f"`{name}` is constant: the correlation is undefined")
    return x, y


def srcc(x, y) -> float:
    """Spearman rank correlation (average ranks for ties), from ``scipy.stats.spearmanr``.

    Parameters
    ----------
    x, y : array_like of shape (n,)

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If lengths differ, n < 2, a value is NaN/inf, or one side is constant.

    Examples
    --------
    >>> srcc([1, 2, 3], [1, 3, 2])
    0.5
    """
    from scipy.stats import spearmanr

    x, y = _pair(x, y)
    return float(spearmanr(x, y)[0])


def plcc(x, y) -> float:
    """Pearson linear correlation, from ``scipy.stats.pearsonr`` (no logistic fitting, as the
    official ``evaluate/iqa_eval.py``).

    Parameters
    ----------
    x, y : array_like of shape (n,)

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If lengths differ, n < 2, a value is NaN/inf, or one side is constant.

    Examples
    --------
    >>> round(plcc([1, 2, 3], [2, 4, 7]), 4)
    0.9934
    """
    from scipy.stats import pearsonr

    x, y = _pair(x, y)
    return float(pearsonr(x, y)[0])


# --------------------------------------------------------------------------------------------
# whole-file evaluation


def _load(data, name: str):
    if isinstance(data, (str, Path)):
        path = Path(data)
        if not path.is_file():
            raise ValueError(f"`{name}` {path} is not a file")
        opener = gzip.open if path.suffix == ".gz" else open
        try:
            with opener(path, "rt", encoding="utf-8") as f:
                return json.load(f)
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ValueError(f"`{name}` {path} is not a JSON file ({error})") from None
    return data


def _image_key(record: dict):
    """A record's image: ``image`` (LLaVA) or the first of ``images`` (LLaMA-Factory ShareGPT)."""
    if not isinstance(record, dict):
        return None
    if "image" in record:
        return record["image"]
    images = record.get("images")
    return images[0] if isinstance(images, list) and images else None


def _answer(record: dict, name: str) -> str:
    try:
        if "messages" in record:  # LLaMA-Factory ShareGPT: role / content
            texts = [t["content"] for t in record["messages"] if t.get("role") == "assistant"]
        else:  # LLaVA / official WQA: from / value
            turns = record["conversations"]
            texts = [t["value"] for t in turns if t.get("from") in ("gpt", "assistant")]
    except (KeyError, TypeError, AttributeError):
        raise ValueError(
            f"`{name}` record {_image_key(record)!r} has neither LLaVA `conversations` nor "
            "ShareGPT `messages`"
        ) from None
    if not texts:
        raise ValueError(f"`{name}` record {_image_key(record)!r} has no assistant answer")
    return texts[-1]


@dataclass(frozen=True)
class Table:
    """One model's row of the WQA description table.

    Attributes
    ----------
    n : int
        Number of evaluated items.
    bleu1 : float
        Mean sentence BLEU-1.
    rouge_l : float
        Mean ROUGE-L F (standard, or ``rouge`` 1.0.1 under compat).
    acc : float
        Visibility accuracy (exact, or the official substring test under compat).
    bleu4 : float
        Corpus BLEU-4 (uniform weights; correct metric, also reported under compat).
    compat : str or None
    """

    n: int
    bleu1: float
    rouge_l: float
    acc: float
    bleu4: float
    compat: str | None

    def as_dict(self) -> dict[str, Any]:
        """The row as a plain dict."""
        return asdict(self)


_STRIP = string.whitespace + string.punctuation


def evaluate(pred_json, gt_json, compat: str | None = None) -> Table:
    """Score a model's WQA answers against the ground truth (paper Table 1 columns).

    Parameters
    ----------
    pred_json : path or list of dict
        Records ``{"image", "conversations": [..., {"from": "gpt", "value": answer}],
        "visibility"?}`` (official ``result/WQA-*/<model>.json`` and LLaVA format; ``.json.gz``
        read too), or LLaMA-Factory ShareGPT records (``messages``, ``images``).
    gt_json : path or list of dict
        Ground truth, same format plus ``visibility`` (official ``test.json``).
    compat : {None, "wmarkgpt"}, default=None
        None: texts cleaned by :func:`clean_text`, ROUGE-L standard, ACC = exact match of the
        prediction's ``visibility`` field (lower-cased, whitespace and punctuation stripped;
        :func:`extract_visibility` of the field when it is a sentence, of the answer when the
        field is absent, None or empty). "wmarkgpt": the official numbers:
        ``.strip('<\\s>')`` cleaning, ``rouge`` 1.0.1 ROUGE-L, ACC = ``gt in pred["visibility"]``.

    Returns
    -------
    Table

    Raises
    ------
    ValueError
        If a file cannot be read, a record lacks an answer, the ground truth is empty, an image
        of the ground truth has no prediction, an image appears twice in a file, a
        ``visibility`` is not a str (or a ground-truth one not a level), or `compat` is unknown.

    Notes
    -----
    Predictions are matched to the ground truth by the exact ``image`` string (LLaMA-Factory:
    the first of ``images``); predictions for other images are ignored.


    Source: official ``llm/metrics/calulate_t2t_metrics.py`` (per-item BLEU-1 =
    ``sentence_bleu(weights=(1,))``, ROUGE-L = ``Rouge().get_scores`` ``rouge-l`` f) and
    ``compute_from_json.py`` (means over items; ACC substring test). Its ``JPEG -> JJPEG``
    renaming (which would fail on WQA-Real's names) is not reproduced. The LLM-Score column
    needs an API and is not computed.
    """
    check_choice(compat, "compat", COMPATS)
    preds = _load(pred_json, "pred_json")
    gts = _load(gt_json, "gt_json")
    if not isinstance(gts, list) or not gts:
        raise ValueError("`gt_json` must hold a non-empty list of records")
    if not isinstance(preds, list):
        raise ValueError("`pred_json` must hold a list of records")
    for data, name in ((preds, "pred_json"), (gts, "gt_json")):
        seen: set = set()
        for record in data:
            key = _image_key(record)
            if key in seen:
                raise ValueError(f"`{name}` has two records for image {key!r}")
            seen.add(key)
    by_image = {_image_key(p): p for p in preds}
    cleaner = official_strip if compat == "wmarkgpt" else clean_text
    hyps, refs, pred_levels, gt_levels = [], [], [], []
    for g in gts:
        image = _image_key(g)
        if image not in by_image:
            raise ValueError(f"`pred_json` has no answer for image {image!r}")
        p = by_image[image]
        hyps.append(cleaner(_answer(p, "pred_json")))
        refs.append(cleaner(_answer(g, "gt_json")))
        stored = p.get("visibility")
        if stored is not None and not isinstance(stored, str):
            raise ValueError(
                f"`pred_json` record {image!r} has visibility {stored!r}: must be a str or null"
            )
        if compat is None and stored is not None:
            stored = stored.strip(_STRIP).lower()
            if stored not in VISIBILITY_LEVELS:
                stored = extract_visibility(stored) if stored else None
                stored = stored if stored is not None else extract_visibility(hyps[-1])
        pred_levels.append(stored if stored is not None else extract_visibility(hyps[-1]))
        if "visibility" not in g:
            raise ValueError(
                f"`gt_json` record {image!r} has no visibility (WQA-Position records: use "
                "`position_accuracy`)"
            )
        level = g["visibility"]
        if not isinstance(level, str) or level.strip().lower() not in VISIBILITY_LEVELS:
            raise ValueError(
                f"`gt_json` record {image!r} has visibility {level!r}, not one of "
                f"{VISIBILITY_LEVELS}"
            )
        gt_levels.append(level)
    variant = "wmarkgpt" if compat == "wmarkgpt" else "standard"
    bleu1 = float(np.mean([bleu([h], [r], n=1) for h, r in zip(hyps, refs, strict=True)]))
    rouge = float(np.mean([rouge_l(h, r, variant) for h, r in zip(hyps, refs, strict=True)]))
    acc = visibility_accuracy(pred_levels, gt_levels, match="substring" if compat else "exact")
    bleu4 = bleu(hyps, refs, n=4, level="corpus")
    return Table(len(gts), bleu1, rouge, acc, bleu4, compat)


def position_accuracy(pred_json, gt_json) -> float:
    """Fraction of WQA-Position answers that name the ground truth's position label.

    Parameters
    ----------
    pred_json : path or list of dict
        Records with ``id`` and an answer (LLaVA ``conversations`` or ShareGPT ``messages``).
    gt_json : path or list of dict
        :func:`~wmarkgpt.build_position` records (one per question, ``id`` unique).

    Returns
    -------
    float
        Exact match after lower-casing and stripping whitespace and punctuation at both ends
        ("Middle-left." counts as "middle-left").

    Raises
    ------
    ValueError
        If a file cannot be read, a record has no ``id`` or answer, an ``id`` appears twice in
        a file, or a ground-truth question has no prediction.

    Notes
    -----
    Ours: the paper reports no position metric; records are matched by ``id``, since one image
    carries several questions.
    """
    preds = _load(pred_json, "pred_json")
    gts = _load(gt_json, "gt_json")
    if not isinstance(gts, list) or not gts:
        raise ValueError("`gt_json` must hold a non-empty list of records")
    if not isinstance(preds, list):
        raise ValueError("`pred_json` must hold a list of records")
    tables = []
    for data, name in ((preds, "pred_json"), (gts, "gt_json")):
        table: dict = {}
        for record in data:
            key = record.get("id") if isinstance(record, dict) else None
            if key is None:
                raise ValueError(f"`{name}` has a record without `id`")
            if key in table:
                raise ValueError(f"`{name}` has two records with id {key!r}")
            table[key] = record
        tables.append(table)
    by_id, hits = tables[0], []
    for key, g in tables[1].items():
        if key not in by_id:
            raise ValueError(f"`pred_json` has no answer for id {key!r}")
        p = _answer(by_id[key], "pred_json").strip(_STRIP).lower()
        hits.append(p == _answer(g, "gt_json").strip(_STRIP).lower())
    return float(np.mean(hits))


def evaluate_qscore(qscore_json, compat: str | None = None) -> tuple[float, float]:
    """SRCC and PLCC of the Q-score against the human / synthetic ``gt_score``.

    Parameters
    ----------
    qscore_json : path or dict
        ``{image: {"gt_score": float, "logits": {level: float}}}`` (official
        ``wmarkgpt_qscore.json``).
    compat : {None, "wmarkgpt"}, default=None
        The same computation either way (the official one has no quirk here); accepted for a
        uniform interface.

    Returns
    -------
    tuple of float
        ``(srcc, plcc)`` of :func:`expected_score` of the logits vs ``gt_score``.

    Raises
    ------
    ValueError
        If the file cannot be read or a record lacks a level's logit.

    Notes
    -----
    Source: official ``evaluate/iqa_eval.py`` (``spearmanr``, ``pearsonr`` of the predicted
    score and ``gt_score``).
    """
    check_choice(compat, "compat", COMPATS)
    data = _load(qscore_json, "qscore_json")
    if not isinstance(data, dict) or not data:
        raise ValueError("`qscore_json` must hold a non-empty {image: record} mapping")
    try:
        logits = [[v["logits"][w] for w in VISIBILITY_LEVELS] for v in data.values()]
        gt = [v["gt_score"] for v in data.values()]
    except (KeyError, TypeError) as error:
        raise ValueError(f"`qscore_json` record lacks {error}") from None
    if len(gt) < 2:
        raise ValueError(f"`qscore_json` holds {len(gt)} record: correlations need at least 2")
    for image, g in zip(data, gt, strict=True):
        if not isinstance(g, (int, float)) or not 0 <= g <= 5:
            raise ValueError(f"`qscore_json` record {image!r} has gt_score {g!r}, not in [0, 5]")
    score = expected_score(np.asarray(logits, dtype=np.float64))
    return srcc(score, gt), plcc(score, gt)
