r"""Casanovo-compatible amino-acid and peptide metrics.

The matching rule of Casanovo 5.2.1 (``denovo/evaluate.py``, after DeepNovo): walk both peptides
from the N-terminus; when the cumulative masses agree within `cum_tol` Da, the paired residues
match if their masses agree within `ind_tol` Da and both advance, otherwise the lighter side
advances; in mode ``"best"`` the same from the C-terminus up to the first prefix mismatch.
A peptide matches when every paired position matches. Then

$$
\text{AA precision} = \frac{\#\text{matched}}{\#\text{predicted residues}},\quad
\text{AA recall} = \frac{\#\text{matched}}{\#\text{true residues}},\quad
\text{peptide recall} = \frac{\#\text{matched peptides}}{\#\text{spectra}}
$$

Tokens come from :meth:`ranknovo.Vocab.tokenize` (an N-terminal modification is its own token,
not glued to the first residue with mass 0 as Casanovo's regex split does).
``compat="official"`` reproduces RankNovo's evaluation, which passes (pred, true) into
``aa_match_metrics(·, n_true, n_pred)`` so that its "AA precision" is the AA recall (casanovo
#252; DECISIONS 7).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from icml25_core import check_choice, check_scalar

from .vocab import Vocab

__all__ = ["aa_match", "evaluate"]


def _toks(p, vocab: Vocab, name: str) -> list[str] | None:
    if p is None:
        return None
    if isinstance(p, str):
        return vocab.tokenize(p)
    return vocab.check_tokens(p, name)


def _prefix(p1, p2, md, cum_tol, ind_tol):
    matches = np.zeros(max(len(p1), len(p2)), dtype=bool)
    i1 = i2 = 0
    c1 = c2 = 0.0
    while i1 < len(p1) and i2 < len(p2):
        m1, m2 = md.get(p1[i1], 0.0), md.get(p2[i2], 0.0)
        if abs((c1 + m1) - (c2 + m2)) < cum_tol:
            matches[max(i1, i2)] = abs(m1 - m2) < ind_tol
            i1, i2, c1, c2 = i1 + 1, i2 + 1, c1 + m1, c2 + m2
        elif c2 + m2 > c1 + m1:
            i1, c1 = i1 + 1, c1 + m1
        else:
            i2, c2 = i2 + 1, c2 + m2
    return matches, bool(matches.all())


def aa_match(
    pred,
    true,
    vocab: Vocab | None = None,
    *,
    cum_tol: float = 0.5,
    ind_tol: float = 0.1,
    mode: str = "best",
) -> tuple[np.ndarray, bool]:
    """Match the residues of a predicted and a true peptide by mass (module docstring).

    Parameters
    ----------
    pred, true : str, sequence of str or None
        Peptides or token lists; None means no prediction.
    vocab : Vocab, optional
    cum_tol : float, default=0.5
        Cumulative mass tolerance (Da, Casanovo's ``cum_mass_threshold``).
    ind_tol : float, default=0.1
        Residue mass tolerance (Da, ``ind_mass_threshold``).
    mode : {"best", "forward", "backward"}, default="best"

    Returns
    -------
    matches : numpy.ndarray of bool, shape (max(len(pred), len(true)),)
    peptide_match : bool

    Raises
    ------
    ValueError
        On an unknown token, a bad mode or a negative tolerance.
    """
    vocab = vocab if vocab is not None else Vocab.massivekb()
    cum_tol = float(check_scalar(cum_tol, "cum_tol", low=0))
    ind_tol = float(check_scalar(ind_tol, "ind_tol", low=0))
    check_choice(mode, "mode", ("best", "forward", "backward"))
    p1, p2 = _toks(pred, vocab, "pred"), _toks(true, vocab, "true")
    if p1 is None and p2 is None:
        return np.empty(0, dtype=bool), False
    if p1 is None or p2 is None:
        return np.zeros(len(p1 if p1 is not None else p2), dtype=bool), False  # type: ignore[arg-type]
    md = vocab.mass_dict()
    if mode == "forward":
        return _prefix(p1, p2, md, cum_tol, ind_tol)
    if mode == "backward":
        m, ok = _prefix(p1[::-1], p2[::-1], md, cum_tol, ind_tol)
        return m[::-1], ok
    matches, ok = _prefix(p1, p2, md, cum_tol, ind_tol)
    if ok:
        return matches, ok
    i1, i2 = len(p1) - 1, len(p2) - 1
    stop = int(np.flatnonzero(~matches)[0])
    c1 = c2 = 0.0
    while i1 >= stop and i2 >= stop:
        m1, m2 = md.get(p1[i1], 0.0), md.get(p2[i2], 0.0)
        if abs((c1 + m1) - (c2 + m2)) < cum_tol:
            matches[max(i1, i2)] = abs(m1 - m2) < ind_tol
            i1, i2, c1, c2 = i1 - 1, i2 - 1, c1 + m1, c2 + m2
        elif c2 + m2 > c1 + m1:
            i1, c1 = i1 - 1, c1 + m1
        else:
            i2, c2 = i2 - 1, c2 + m2
    return matches, bool(matches.all())


def evaluate(
    *,
    preds: Sequence,
    trues: Sequence,
    vocab: Vocab | None = None,
    cum_tol: float = 0.5,
    ind_tol: float = 0.1,
    compat: str = "paper",
) -> dict[str, float]:
    """AA precision, AA recall and peptide recall over a set of spectra (keyword-only).

    Parameters
    ----------
    preds : sequence of (str, token list or None)
        One prediction per spectrum (None: no prediction).
    trues : sequence of str or token lists
        True peptides, same length.
    vocab : Vocab, optional
    cum_tol, ind_tol : float
        As in :func:`aa_match`.
    compat : {"paper", "official"}, default="paper"
        ``"official"`` swaps precision and recall as RankNovo's evaluation does.

    Returns
    -------
    dict
        ``aa_precision``, ``aa_recall``, ``peptide_recall`` (floats in [0, 1]), ``n_spectra``.

    Raises
    ------
    TypeError
        If `preds` or `trues` is a str (one peptide instead of a list) or a true peptide is
        None.
    ValueError
        If `preds` and `trues` differ in length or are empty, or on an unknown token.
    """
    check_choice(compat, "compat", ("paper", "official"))
    for name, value in (("preds", preds), ("trues", trues)):
        if isinstance(value, str):
            raise TypeError(
                f"`{name}` must be a list with one peptide per spectrum, got the str {value!r}"
            )
    if len(preds) != len(trues):
        raise ValueError(f"`preds` has {len(preds)} entries but `trues` has {len(trues)}")
    if len(trues) == 0:
        raise ValueError("`trues` is empty")
    for i, t in enumerate(trues):
        if t is None:
            raise TypeError(f"`trues[{i}]` is None: every spectrum needs its true peptide")
    vocab = vocab if vocab is not None else Vocab.massivekb()
    n_correct = n_pred = n_true = n_pep = 0
    for p, t in zip(preds, trues, strict=True):
        pt, tt = _toks(p, vocab, "preds"), _toks(t, vocab, "trues")
        m, ok = aa_match(pt, tt, vocab, cum_tol=cum_tol, ind_tol=ind_tol)
        n_correct += int(m.sum())
        n_pred += 0 if pt is None else len(pt)
        n_true += 0 if tt is None else len(tt)
        n_pep += int(ok)
    prec = n_correct / n_pred if n_pred else 0.0
    rec = n_correct / n_true if n_true else 0.0
    if compat == "official":
        prec, rec = rec, prec
    return {
        "aa_precision": prec,
        "aa_recall": rec,
        "peptide_recall": n_pep / len(trues),
        "n_spectra": len(trues),
    }
