r"""Python reference of PMD and RMD: the executable spec, one pair at a time.

RankNovo (Qiu et al., ICML 2025, Sec. 3.3; official ``TMmass`` / ``Greedymass``). With
$a_i = m(q_i)/g$, $b_j = m(t_j)/g$ (query q = candidate, target t = true peptide, g = 51.4238 Da):

$$
D_{i,0} = i,\quad D_{0,j} = j,\quad
D_{i,j} = \min\bigl(D_{i-1,j}+1,\; D_{i,j-1}+1,\; D_{i-1,j-1}+|a_i-b_j|\bigr),\quad
\mathrm{PMD} = D_{|q|,|t|}
$$

and $\mathrm{RMD}_i = P_q(i) - P_t(j^*)$, $j^* = \arg\min_{j\in 1..|t|} |P_q(i)-P_t(j)|$ (ties: the
smallest j), $P$ the prefix sums of $a$ and $b$; an empty target gives $\mathrm{RMD}_i = P_q(i)$.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["pmd_ref", "rmd_ref"]


def pmd_ref(a: Sequence[float], b: Sequence[float]) -> float:
    """PMD of two mass sequences already divided by the unit g (the DP above, O(|a||b|)).

    Parameters
    ----------
    a, b : sequence of float
        Scaled residue masses of the query (candidate) and the target (true peptide).

    Returns
    -------
    float
        PMD in units of g.
    """
    prev = [float(j) for j in range(len(b) + 1)]
    for i in range(1, len(a) + 1):
        ai = a[i - 1]
        cur = [float(i)] + [0.0] * len(b)
        for j in range(1, len(b) + 1):
            best = prev[j] + 1.0
            left = cur[j - 1] + 1.0
            if left < best:
                best = left
            diag = prev[j - 1] + abs(ai - b[j - 1])
            if diag < best:
                best = diag
            cur[j] = best
        prev = cur
    return prev[len(b)]


def rmd_ref(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """RMD of two scaled mass sequences (greedy nearest prefix mass, above).

    Returns
    -------
    list of float
        Signed deviation per query residue, length ``len(a)``, in units of g.
    """
    pt = []
    s = 0.0
    for x in b:
        s += x
        pt.append(s)
    out = []
    sq = 0.0
    for x in a:
        sq += x
        if not pt:
            out.append(sq)
            continue
        best, arg = abs(sq - pt[0]), 0
        for j in range(1, len(pt)):
            d = abs(sq - pt[j])
            if d < best:
                best, arg = d, j
        out.append(sq - pt[arg])
    return out
