"""PMD / RMD vectorised over pairs with numpy.

PMD: the DP of :mod:`.pmd_ref` one row i at a time for all pairs at once. Within a row the left
dependency ``D[i,j] = min(x_j, D[i,j-1] + 1)``, ``x_j = min(D[i-1,j] + 1, D[i-1,j-1] + |a_i-b_j|)``,
unrolls to ``D[i,j] = j + min_{k<=j}(x_k - k)``, a prefix minimum (``np.minimum.accumulate``):
O(Lq) numpy calls instead of O(Lq + Lt) anti-diagonals, the same values up to rounding (< 1e-12).
Pairs of different lengths share the padded grid; cells past a pair's lengths never feed the
cells it reads. RMD: prefix sums and an argmin over all target prefixes (first index on ties),
in blocks of pairs to bound memory.
"""

from __future__ import annotations

import numpy as np

__all__ = ["pmd_numpy", "rmd_numpy"]


def _scaled(ids: np.ndarray, lens: np.ndarray, masses: np.ndarray, unit: float) -> np.ndarray:
    a = masses[ids] / unit
    a[np.arange(ids.shape[1])[None, :] >= lens[:, None]] = 0.0
    return a


def _buckets(q_len: np.ndarray, t_len: np.ndarray, size: int = 1024):
    """Pairs sorted by length, in groups of `size`: each group is trimmed to its own longest."""
    order = np.lexsort((t_len, q_len))
    for s in range(0, order.size, size):
        idx = order[s : s + size]
        yield idx, max(1, int(q_len[idx].max())), max(1, int(t_len[idx].max()))


def pmd_numpy(
    q_ids: np.ndarray,
    q_len: np.ndarray,
    t_ids: np.ndarray,
    t_len: np.ndarray,
    masses: np.ndarray,
    unit: float,
) -> np.ndarray:
    """Batched PMD, float64 (P,); inputs as in :func:`ranknovo.mass.pmd_batch` (validated there).

    Pairs are processed in length-sorted groups so that short pairs do not pay for long ones.
    """
    out = np.empty(q_ids.shape[0], dtype=np.float64)
    for idx, lq, lt in _buckets(q_len, t_len):
        out[idx] = _pmd_block(
            q_ids[idx, :lq], q_len[idx], t_ids[idx, :lt], t_len[idx], masses, unit
        )
    return out


def _pmd_block(q_ids, q_len, t_ids, t_len, masses, unit):
    n_pairs, lq = q_ids.shape
    lt = t_ids.shape[1]
    a = _scaled(q_ids, q_len, masses, unit)
    b = _scaled(t_ids, t_len, masses, unit)
    cols = np.arange(lt + 1, dtype=np.float64)
    prev = np.broadcast_to(cols, (n_pairs, lt + 1)).copy()
    rows = np.arange(n_pairs)
    out = np.empty(n_pairs, dtype=np.float64)
    done = q_len == 0
    out[done] = t_len[done].astype(np.float64)
    x = np.empty_like(prev)
    for i in range(1, lq + 1):
        x[:, 0] = float(i)
        np.minimum(prev[:, 1:] + 1.0, prev[:, :-1] + np.abs(a[:, i - 1 : i] - b), out=x[:, 1:])
        x -= cols
        np.minimum.accumulate(x, axis=1, out=x)
        x += cols
        prev, x = x, prev
        sel = q_len == i
        if sel.any():
            out[sel] = prev[rows[sel], t_len[sel]]
    return out


def rmd_numpy(
    q_ids: np.ndarray,
    q_len: np.ndarray,
    t_ids: np.ndarray,
    t_len: np.ndarray,
    masses: np.ndarray,
    unit: float,
    block: int = 2048,
) -> np.ndarray:
    """Batched RMD, float64 (P, Lq), zero past ``q_len``; inputs as in
    :func:`ranknovo.mass.rmd_batch`."""
    out = np.zeros(q_ids.shape, dtype=np.float64)
    for idx, lq, lt in _buckets(q_len, t_len, block):
        out[idx, :lq] = _rmd_block(
            q_ids[idx, :lq], q_len[idx], t_ids[idx, :lt], t_len[idx], masses, unit
        )
    return out


def _rmd_block(q_ids, q_len, t_ids, t_len, masses, unit, block=1 << 30):
    n_pairs, lq = q_ids.shape
    lt = t_ids.shape[1]
    pq = np.cumsum(_scaled(q_ids, q_len, masses, unit), axis=1)
    pt = np.cumsum(_scaled(t_ids, t_len, masses, unit), axis=1)
    out = np.zeros((n_pairs, lq), dtype=np.float64)
    qmask = np.arange(lq)[None, :] < q_len[:, None]
    for s in range(0, n_pairs, block):
        e = min(s + block, n_pairs)
        dev = np.abs(pq[s:e, :, None] - pt[s:e, None, :])
        dev[np.broadcast_to(np.arange(lt)[None, None, :] >= t_len[s:e, None, None], dev.shape)] = (
            np.inf
        )
        if lt:
            arg = np.argmin(dev, axis=2)
            near = np.take_along_axis(pt[s:e], arg, axis=1)
        else:
            near = np.zeros((e - s, lq))
        near[t_len[s:e] == 0] = 0.0
        out[s:e] = np.where(qmask[s:e], pq[s:e] - near, 0.0)
    return out
