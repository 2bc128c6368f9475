"""Retrieval recall@K, zero-shot accuracy and caption statistics.

Retrieval follows the CLIP paper's convention (as in LAION-AI/CLIP_benchmark): per query,
hit@K = 1 if any positive is among the top K candidates, averaged over queries.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from icml25_core import check_array, check_choice

TIES = ("pessimistic", "optimistic")


def _check_ks(ks: Sequence[int], limit: int) -> tuple[int, ...]:
    ks = tuple(ks) if not isinstance(ks, int) else (ks,)
    if not ks:
        raise ValueError("`ks` is empty")
    for k in ks:
        if not isinstance(k, int | np.integer) or isinstance(k, bool):
            raise TypeError(f"`ks` must hold ints, got {k!r}")
        if k <= 0 or k > limit:
            raise ValueError(f"`ks` must be in [1, {limit}] (number of candidates), got {k}")
    return tuple(int(k) for k in ks)


def _ranks(scores: np.ndarray, positive: np.ndarray, ties: str) -> np.ndarray:
    """1-based rank of the best positive per row: 1 + #negatives scoring >= (or >) it."""
    best = np.where(positive, scores, -np.inf).max(axis=1, keepdims=True)
    neg = ~positive
    beats = scores >= best if ties == "pessimistic" else scores > best
    return 1 + (beats & neg).sum(axis=1)


def retrieval_from_scores(
    scores: Any,
    text_to_image: Any,
    *,
    ks: Sequence[int] = (1, 5, 10),
    ties: str = "pessimistic",
) -> dict[str, float]:
    r"""Text-to-image and image-to-text recall@K from a similarity matrix.

    For a query with positive set $P$ and candidate scores $s$, the rank is

    $$r = 1 + \#\{j \notin P : s_j \ge \max_{p \in P} s_p\}, \qquad \mathrm{R@K} = \frac{1}{Q}
    \sum_q \mathbb{1}[r_q \le K]$$

    (``ties="pessimistic"``; ``"optimistic"`` uses $>$). Without ties both equal the CLIP paper's
    "any positive in the top K" (Radford et al. 2021, Sec. 3.1; CLIP_benchmark ``recall_at_k``).

    Parameters
    ----------
    scores : array_like, shape (M, N), float
        Similarity of text m to image n.
    text_to_image : array_like, shape (M,), int
        The image of each text (t2i: one positive; i2t: an image's texts are all positives).
    ks : sequence of int, default=(1, 5, 10)
        Cut-offs, each in [1, min(M, N)].
    ties : {"pessimistic", "optimistic"}, default="pessimistic"

    Returns
    -------
    dict of str to float
        ``t2i_R@k`` and ``i2t_R@k`` in [0, 1] for each k (clip_benchmark calls t2i
        "image_retrieval" and i2t "text_retrieval").

    Raises
    ------
    ValueError
        Wrong shapes, NaN/inf, empty input, `ks` out of range, an image without texts.
    IndexError
        If `text_to_image` has an index outside [0, N).
    """
    ties = check_choice(ties, "ties", TIES)
    s = check_array(scores, "scores", ndim=2, dtype="floating").astype(np.float64)
    m, n = s.shape
    t2i = check_array(text_to_image, "text_to_image", shape=(m,), dtype="integer").astype(np.int64)
    if t2i.size and t2i.min() < 0:
        raise IndexError(
            f"`text_to_image` must index images in [0, {n}), got a negative value {t2i.min()}"
        )
    if t2i.size and t2i.max() >= n:
        raise IndexError(
            f"`text_to_image` must index images in [0, {n}), got values up to {t2i.max()}"
        )
    counts = np.bincount(t2i, minlength=n)
    if (counts == 0).any():
        raise ValueError(f"every image needs a text: image {int(np.argmin(counts))} has none")
    ks = _check_ks(ks, min(m, n))
    pos_t = np.zeros((m, n), dtype=bool)
    pos_t[np.arange(m), t2i] = True
    r_t2i = _ranks(s, pos_t, ties)
    r_i2t = _ranks(s.T, pos_t.T, ties)
    out: dict[str, float] = {}
    for k in ks:
        out[f"t2i_R@{k}"] = float((r_t2i <= k).mean())
        out[f"i2t_R@{k}"] = float((r_i2t <= k).mean())
    return out


def _check_emb(x: Any, name: str, dim: int | None = None) -> np.ndarray:
    a = check_array(x, name, ndim=2, dtype="floating").astype(np.float64)
    if dim is not None and a.shape[1] != dim:
        raise ValueError(f"`{name}` has dimension {a.shape[1]}, expected {dim} (mismatched D)")
    return a


def retrieval_metrics(
    image_emb: Any,
    text_emb: Any,
    text_to_image: Any,
    *,
    ks: Sequence[int] = (1, 5, 10),
    ties: str = "pessimistic",
    normalize: bool = True,
) -> dict[str, float]:
    """Recall@K from embeddings: cosine similarity (``normalize=True``), then
    :func:`retrieval_from_scores`.

    Parameters
    ----------
    image_emb : array_like, shape (N, D), float
    text_emb : array_like, shape (M, D), float
    text_to_image : array_like, shape (M,), int
    ks, ties
        As in :func:`retrieval_from_scores`.
    normalize : bool, default=True
        L2-normalise both sides first (CLIP's cosine similarity).

    Returns
    -------
    dict of str to float

    Raises
    ------
    ValueError
        NaN/inf, mismatched D, empty input, `ks` out of range, a zero-norm row when
        `normalize` is True.
    IndexError
        `text_to_image` out of range.
    """
    img = _check_emb(image_emb, "image_emb")
    txt = _check_emb(text_emb, "text_emb", img.shape[1])
    if normalize:
        for name, a in (("image_emb", img), ("text_emb", txt)):
            zero = np.flatnonzero(np.linalg.norm(a, axis=1) == 0)
            if zero.size:
                raise ValueError(
                    f"`{name}` row {int(zero[0])} has zero norm: cosine similarity is undefined "
                    "(pass normalize=False to rank by dot product)"
                )
        img = img / np.linalg.norm(img, axis=1, keepdims=True)
        txt = txt / np.linalg.norm(txt, axis=1, keepdims=True)
    return retrieval_from_scores(txt @ img.T, text_to_image, ks=ks, ties=ties)


def zero_shot_accuracy(
    image_emb: Any,
    class_emb: Any,
    labels: Any,
    *,
    ks: Sequence[int] = (1, 5),
    ties: str = "pessimistic",
) -> dict[str, float]:
    """Zero-shot top-K accuracy: an image is right if its class is among the K most similar
    class embeddings (short prompts, CLIP paper Sec. 3.1.4).

    Parameters
    ----------
    image_emb : array_like, shape (N, D), float
    class_emb : array_like, shape (C, D), float
    labels : array_like, shape (N,), int in [0, C)
    ks : sequence of int, default=(1, 5), each in [1, C]
    ties : {"pessimistic", "optimistic"}

    Returns
    -------
    dict of str to float
        ``top{k}`` in [0, 1].

    Raises
    ------
    ValueError, IndexError
        As in :func:`retrieval_metrics`.
    """
    ties = check_choice(ties, "ties", TIES)
    img = _check_emb(image_emb, "image_emb")
    cls = _check_emb(class_emb, "class_emb", img.shape[1])
    n, c = img.shape[0], cls.shape[0]
    y = check_array(labels, "labels", shape=(n,), dtype="integer").astype(np.int64)
    if y.min() < 0 or y.max() >= c:
        raise IndexError(f"`labels` must be in [0, {c})")
    ks = _check_ks(ks, c)
    img = img / np.maximum(np.linalg.norm(img, axis=1, keepdims=True), 1e-12)
    cls = cls / np.maximum(np.linalg.norm(cls, axis=1, keepdims=True), 1e-12)
    pos = np.zeros((n, c), dtype=bool)
    pos[np.arange(n), y] = True
    r = _ranks(img @ cls.T, pos, ties)
    return {f"top{k}": float((r <= k).mean()) for k in ks}


def caption_stats(
    captions: Sequence[str],
    *,
    tokenizer: Callable[[str], Sequence[int]] | None = None,
    context_length: int = 77,
    bins: Sequence[int] = (0, 5, 10, 20, 40, 80, 160, 10**9),
) -> dict[str, Any]:
    """Length and vocabulary statistics of captions (paper: recaptions ≈49.4 vs alt-text ≈10
    tokens), and the share a CLIP text encoder of `context_length` would truncate.

    Parameters
    ----------
    captions : sequence of str
    tokenizer : callable, optional
        ``tokenizer(text) -> ids`` including any special tokens; default whitespace words
        (+2 for start/end tokens when judging truncation).
    context_length : int, default=77 (CLIP)
    bins : sequence of int
        Histogram edges (tokens).

    Returns
    -------
    dict
        ``n``, ``mean_tokens``, ``median_tokens``, ``histogram`` (edges, counts),
        ``vocab_size``, ``type_token_ratio``, ``frac_over_context``.

    Raises
    ------
    TypeError
        If `captions` is one str or holds a non-str (``None``, a number).
    ValueError
        If `captions` is empty or `context_length` < 1.
    """
    if isinstance(captions, str):
        raise TypeError("`captions` must be a sequence of str, not one str")
    captions = [c.as_py() if hasattr(c, "as_py") else c for c in captions]  # pyarrow scalars
    if not captions:
        raise ValueError("`captions` is empty")
    bad = next((i for i, c in enumerate(captions) if not isinstance(c, str)), None)
    if bad is not None:
        raise TypeError(
            f"`captions` must hold str, got {type(captions[bad]).__name__} at index {bad}"
        )
    if not isinstance(context_length, int) or context_length < 1:
        raise ValueError(f"`context_length` must be an int >= 1, got {context_length!r}")
    words = [str(c).lower().split() for c in captions]
    if tokenizer is None:
        lengths = np.array([len(w) for w in words])
        with_special = lengths + 2
    else:
        lengths = np.array([len(tokenizer(str(c))) for c in captions])
        with_special = lengths
    vocab = Counter(w for ws in words for w in ws)
    total = sum(vocab.values())
    hist, edges = np.histogram(lengths, bins=np.asarray(bins))
    return {
        "n": len(captions),
        "mean_tokens": float(lengths.mean()),
        "median_tokens": float(np.median(lengths)),
        "histogram": {"edges": edges.tolist(), "counts": hist.tolist()},
        "vocab_size": len(vocab),
        "type_token_ratio": len(vocab) / total if total else 0.0,
        "frac_over_context": float((with_special > context_length).mean()),
    }
