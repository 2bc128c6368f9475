r"""Peptide and residue mass deviation (PMD, RMD): RankNovo's training targets and metrics.

RankNovo (Qiu et al., ICML 2025, Sec. 3.3; official ``TMmass`` / ``Greedymass``). With the unit
g = 51.4238 Da, $a_i = m(q_i)/g$ and $b_j = m(t_j)/g$ (q = candidate, t = true peptide):

$$
D_{i,j} = \min\bigl(D_{i-1,j}+1,\; D_{i,j-1}+1,\; D_{i-1,j-1}+|a_i-b_j|\bigr),\;
D_{i,0}=i,\; D_{0,j}=j,\qquad \mathrm{PMD}(q,t) = D_{|q|,|t|}
$$

$\mathrm{RMD}_i = P_q(i) - P_t(j^*)$ with $j^* = \arg\min_{1\le j\le|t|}|P_q(i)-P_t(j)|$ (ties: the
smallest j), $P$ the prefix sums of $a$, $b$. Both are in units of g, not Da (g's origin is not
documented by the paper, so `unit` is configurable).

Backends of the batched functions: ``"native"`` (the C++/OpenMP package ``ranknovo_kernels``,
``kernels/ranknovo``), ``"numpy"``, ``"reference"`` (pure Python); ``"auto"`` takes the native one
when it is importable and numpy otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from icml25_core import check_array, check_choice, check_scalar

from .kernels import native_module
from .kernels.pmd_numpy import pmd_numpy, rmd_numpy
from .kernels.pmd_ref import pmd_ref, rmd_ref
from .vocab import Vocab

__all__ = ["pmd", "rmd", "pmd_batch", "rmd_batch", "pack", "resolve_backend", "UNIT"]

#: The official mass unit g (Da) of PMD / RMD.
UNIT = 51.4238
_BACKENDS = ("auto", "native", "numpy", "reference")
_DEFAULT_VOCAB: Vocab | None = None


def _vocab(vocab: Vocab | None) -> Vocab:
    global _DEFAULT_VOCAB
    if vocab is None:
        if _DEFAULT_VOCAB is None:
            _DEFAULT_VOCAB = Vocab.massivekb()
        return _DEFAULT_VOCAB
    if not isinstance(vocab, Vocab):
        raise TypeError(f"`vocab` must be a ranknovo.Vocab, got {type(vocab).__name__}")
    return vocab


def _unit(unit) -> float:
    unit = float(check_scalar(unit, "unit", low=0, inclusive="neither"))
    if not math.isfinite(unit):
        raise ValueError(f"`unit` must be a finite mass in Da, got {unit}")
    return unit


def _scaled_masses(peptide, vocab: Vocab, unit: float, name: str) -> list[float]:
    if isinstance(peptide, str):
        toks = vocab.tokenize(peptide)
    elif isinstance(peptide, Sequence):
        toks = vocab.check_tokens(peptide, name)
    else:
        raise TypeError(f"`{name}` must be a peptide string or a token list, got {peptide!r}")
    return [float(vocab.masses[vocab.index[t]]) / unit for t in toks]


def pmd(q, t, vocab: Vocab | None = None, unit: float = UNIT) -> float:
    """Peptide mass deviation of candidate `q` against true peptide `t`.

    Parameters
    ----------
    q, t : str or sequence of str
        Peptides (MassIVE-KB or ProForma spelling) or token lists.
    vocab : Vocab, optional
        Vocabulary with the masses; default ``Vocab.massivekb()``.
    unit : float, default=51.4238
        The mass unit g in Da (official ``TMmass``).

    Returns
    -------
    float
        PMD in units of g; 0 for mass-identical sequences (I/L), 1 per unmatched residue.
        An empty peptide is allowed: PMD against it is the other peptide's length. Leading and
        trailing whitespace of a peptide string is ignored.

    Raises
    ------
    ValueError
        On an unknown token (named with the peptide) or a `unit` that is not a positive
        finite number.
    """
    unit = _unit(unit)
    v = _vocab(vocab)
    return pmd_ref(_scaled_masses(q, v, unit, "q"), _scaled_masses(t, v, unit, "t"))


def rmd(q, t, vocab: Vocab | None = None, unit: float = UNIT) -> np.ndarray:
    """Residue mass deviation of each residue of candidate `q` against true peptide `t`.

    Parameters
    ----------
    q, t, vocab, unit
        As in :func:`pmd`.

    Returns
    -------
    numpy.ndarray of float64, shape (len(q),)
        Signed deviation per candidate token (an N-terminal modification counts as a token), in
        units of g. Against an empty `t` (P_t(0) = 0) it is the prefix sum P_q(i).

    Raises
    ------
    ValueError
        As :func:`pmd`.
    """
    unit = _unit(unit)
    v = _vocab(vocab)
    return np.asarray(
        rmd_ref(_scaled_masses(q, v, unit, "q"), _scaled_masses(t, v, unit, "t")),
        dtype=np.float64,
    )


def pack(peptides: Sequence, vocab: Vocab | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Right-pad peptides into an id matrix for the batched functions.

    Parameters
    ----------
    peptides : sequence of str or of token lists
    vocab : Vocab, optional

    Returns
    -------
    ids : numpy.ndarray of int64, shape (P, L)
        Token ids, ``gap_id`` past each length; L = max(1, longest).
    lengths : numpy.ndarray of int64, shape (P,)
    """
    v = _vocab(vocab)
    enc = [v.encode(p) for p in peptides]
    width = max([1, *(len(e) for e in enc)])
    ids = np.full((len(enc), width), v.gap_id, dtype=np.int64)
    for k, e in enumerate(enc):
        ids[k, : len(e)] = e
    return ids, np.array([len(e) for e in enc], dtype=np.int64)


def resolve_backend(backend: str = "auto") -> str:
    """The backend `backend` names, resolving ``"auto"`` (native when importable, else numpy).

    Raises
    ------
    ValueError
        If `backend` is not one of ``auto, native, numpy, reference``.
    RuntimeError
        If ``"native"`` is asked for and ``ranknovo_kernels`` is not installed.
    """
    check_choice(backend, "backend", _BACKENDS)
    if backend == "auto":
        return "native" if native_module() is not None else "numpy"
    if backend == "native" and native_module() is None:
        raise RuntimeError(
            "backend='native' needs the ranknovo-kernels package: pip install ./kernels/ranknovo"
        )
    return backend


def _check_batch(q_ids, q_len, t_ids, t_len, masses, unit):
    q_ids = check_array(q_ids, "q_ids", ndim=2, dtype="integer", cast=np.int64, allow_empty=True)
    t_ids = check_array(t_ids, "t_ids", ndim=2, dtype="integer", cast=np.int64, allow_empty=True)
    q_len = check_array(q_len, "q_len", ndim=1, dtype="integer", cast=np.int64, allow_empty=True)
    t_len = check_array(t_len, "t_len", ndim=1, dtype="integer", cast=np.int64, allow_empty=True)
    masses = check_array(masses, "masses", ndim=1, dtype="floating", cast=np.float64)
    unit = _unit(unit)
    n = q_ids.shape[0]
    for name, arr in (("t_ids", t_ids), ("q_len", q_len), ("t_len", t_len)):
        if arr.shape[0] != n:
            raise ValueError(
                f"`{name}` has {arr.shape[0]} pairs but `q_ids` has {n}: one row per pair"
            )
    for name, lens, ids in (("q_len", q_len, q_ids), ("t_len", t_len, t_ids)):
        if n and (lens.min() < 0 or lens.max() > ids.shape[1]):
            bad = int(lens[(lens < 0) | (lens > ids.shape[1])][0])
            raise ValueError(f"`{name}` holds {bad}, outside [0, {ids.shape[1]}]")
    for name, lens, ids in (("q_ids", q_len, q_ids), ("t_ids", t_len, t_ids)):
        used = ids[np.arange(ids.shape[1])[None, :] < lens[:, None]]
        if used.size and (used.min() < 0 or used.max() >= masses.shape[0]):
            bad = int(used[(used < 0) | (used >= masses.shape[0])][0])
            raise ValueError(f"`{name}` holds id {bad}, outside the {masses.shape[0]} masses")
    return (
        np.ascontiguousarray(q_ids),
        np.ascontiguousarray(q_len),
        np.ascontiguousarray(t_ids),
        np.ascontiguousarray(t_len),
        np.ascontiguousarray(masses),
        unit,
    )


def _reference_batch(fn, q_ids, q_len, t_ids, t_len, masses, unit):
    out = []
    for k in range(q_ids.shape[0]):
        a = [float(masses[i]) / unit for i in q_ids[k, : q_len[k]]]
        b = [float(masses[i]) / unit for i in t_ids[k, : t_len[k]]]
        out.append(fn(a, b))
    return out


def pmd_batch(
    q_ids,
    q_len,
    t_ids,
    t_len,
    masses,
    unit: float = UNIT,
    *,
    backend: str = "auto",
) -> np.ndarray:
    """PMD of many (candidate, target) pairs.

    Parameters
    ----------
    q_ids : array_like of int, shape (P, Lq)
        Candidate token ids (e.g. from :func:`pack`); entries past `q_len` are ignored.
    q_len : array_like of int, shape (P,)
        Candidate lengths, in [0, Lq].
    t_ids : array_like of int, shape (P, Lt)
        Target (true peptide) ids.
    t_len : array_like of int, shape (P,)
    masses : array_like of float, shape (V,)
        Mass of each id in Da (``Vocab.masses``).
    unit : float, default=51.4238
        Mass unit g in Da.
    backend : {"auto", "native", "numpy", "reference"}, default="auto"
        See the module docstring.

    Returns
    -------
    numpy.ndarray of float64, shape (P,)
        PMD per pair in units of g.

    Raises
    ------
    ValueError
        On a wrong shape, dtype, length outside the id matrix or an id outside `masses`.
    """
    args = _check_batch(q_ids, q_len, t_ids, t_len, masses, unit)
    kind = resolve_backend(backend)
    if kind == "native":
        mod = native_module()
        assert mod is not None
        return np.asarray(mod.pmd_batch(*args))
    if kind == "numpy":
        return pmd_numpy(*args)
    return np.array(_reference_batch(pmd_ref, *args), dtype=np.float64)


def rmd_batch(
    q_ids,
    q_len,
    t_ids,
    t_len,
    masses,
    unit: float = UNIT,
    *,
    backend: str = "auto",
) -> np.ndarray:
    """RMD of many (candidate, target) pairs.

    Parameters
    ----------
    q_ids, q_len, t_ids, t_len, masses, unit, backend
        As in :func:`pmd_batch`.

    Returns
    -------
    numpy.ndarray of float64, shape (P, Lq)
        RMD per candidate token in units of g; 0 past each `q_len`.

    Raises
    ------
    ValueError
        As :func:`pmd_batch`.
    """
    args = _check_batch(q_ids, q_len, t_ids, t_len, masses, unit)
    kind = resolve_backend(backend)
    if kind == "native":
        mod = native_module()
        assert mod is not None
        return np.asarray(mod.rmd_batch(*args))
    if kind == "numpy":
        return rmd_numpy(*args)
    q_ids_, q_len_ = args[0], args[1]
    out = np.zeros(q_ids_.shape, dtype=np.float64)
    for k, row in enumerate(_reference_batch(rmd_ref, *args)):
        out[k, : q_len_[k]] = row
    return out
