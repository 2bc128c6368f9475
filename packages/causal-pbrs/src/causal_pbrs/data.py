"""Offline logs of a demonstrator and their sufficient statistics.

Everything the causal bound needs from a log of tuples (h, s, x, y, s', done) is a set of counts
(Li, Zhang & Bareinboim, ICML 2025, Sec. 3): the propensities P̂_h(x | s) = N_h(s, x) / N_h(s),
the observational transitions T̃_h(s, x, s') = N_h(s, x, s') / N_h(s, x) and rewards
R̃_h(s, x) = ΣY / N_h(s, x). Counts are additive, so shards of a large log can be counted apart
(on Dask or Ray workers) and summed. The transition counts are stored sparse (a log or a
tabular model touches few s' per (h, s, x)): dense, Taxi at H = 200 would need
H·S·A·S·8 bytes = 2.4 GB.

Axis letters: N rows, H horizon, S states, A actions.
"""

from __future__ import annotations

from dataclasses import dataclass
from os import PathLike
from pathlib import Path

import numpy as np
import scipy.sparse

from icml25_core import check_array, check_consistent_length

from ._validation import check_bool, check_index_array, check_int, check_real

__all__ = ["Counts", "OfflineDataset"]


@dataclass(frozen=True, eq=False)
class Counts:
    """Sufficient statistics of one or more logs (or their exact expectation).

    Parameters
    ----------
    n_s : ndarray of shape (H, S)
        N_h(s): visits of s at step h.
    n_sa : ndarray of shape (H, S, A)
        N_h(s, x): times x was taken there.
    n_sas : scipy.sparse array of shape (H·S·A, S), or array_like of shape (H, S, A, S)
        N_h(s, x, s'): steps that continued to s' (``done`` False), at row (h·S + s)·A + x.
        Stored as a ``scipy.sparse.csr_array`` of shape (H·S·A, S) whatever the input;
        :meth:`transition_counts` gives the dense (H, S, A, S) array.
    n_end : ndarray of shape (H, S, A)
        Steps that entered a terminal state (``done`` True); ``n_sa = n_sas.sum(-1) + n_end``.
    y_sum : ndarray of shape (H, S, A)
        Sum of the rewards of those steps.
    terminal : ndarray of shape (S,), bool
        States entered with ``done`` True.
    y_min, y_max : float
        Smallest and largest reward logged.
    pooled_horizon : int, optional
        Set on counts summed over the steps of an H-step log (:meth:`pooled`,
        ``OfflineDataset.counts(pooled=True)``): their one row stands for H steps, which the
        stationary bound needs and the time-indexed bound refuses.

    Raises
    ------
    ValueError
        If `pooled_horizon` is given for counts with more than one step or is < 1, the shapes
        disagree, a count is negative, a value is NaN or infinite, the counts do
        not add up (``n_s = n_sa.sum(-1)``, ``n_sa = n_sas.sum(-1) + n_end``, relative
        tolerance 1e-7), ``y_min > y_max``, or `y_sum` lies outside
        ``[y_min · n_sa, y_max · n_sa]`` (the `reward_max` check relies on `y_max`).
    TypeError
        If `y_min` or `y_max` is not a real number.

    Notes
    -----
    The arrays are copied and made read-only, so the checks hold for the object's lifetime.
    """

    n_s: np.ndarray
    n_sa: np.ndarray
    n_sas: scipy.sparse.csr_array
    n_end: np.ndarray
    y_sum: np.ndarray
    terminal: np.ndarray
    y_min: float
    y_max: float
    pooled_horizon: int | None = None

    def __post_init__(self):
        n_s = check_array(self.n_s, "n_s", ndim=2, cast=np.float64)
        H, S = n_s.shape
        n_sa = check_array(self.n_sa, "n_sa", ndim=3, cast=np.float64)
        A = n_sa.shape[2]
        checked = {
            "n_s": n_s,
            "n_sa": check_array(n_sa, "n_sa", shape=(H, S, A)),
            "n_end": check_array(self.n_end, "n_end", shape=(H, S, A), cast=np.float64),
            "y_sum": check_array(self.y_sum, "y_sum", shape=(H, S, A), cast=np.float64),
        }
        for name in ("n_s", "n_sa", "n_end"):
            if (checked[name] < 0).any():
                raise ValueError(f"`{name}` must be non-negative")
        checked["terminal"] = check_array(self.terminal, "terminal", shape=(S,), dtype="bool")
        for name, value in checked.items():
            value = np.array(value)  # a private copy: the caller's array may change later
            value.setflags(write=False)
            object.__setattr__(self, name, value)
        object.__setattr__(self, "n_sas", _sparse_transitions(self.n_sas, H, S, A))
        if self.pooled_horizon is not None:
            if H != 1:
                raise ValueError(f"`pooled_horizon` needs counts of one step, these have {H}")
            object.__setattr__(
                self, "pooled_horizon", check_int(self.pooled_horizon, "pooled_horizon", low=1)
            )
        y_min, y_max = check_real(self.y_min, "y_min"), check_real(self.y_max, "y_max")
        if y_min > y_max:
            raise ValueError(f"`y_min` = {y_min} exceeds `y_max` = {y_max}")
        object.__setattr__(self, "y_min", y_min)
        object.__setattr__(self, "y_max", y_max)
        self._check_sums()

    def _check_sums(self) -> None:
        """The identities every log and every exact distribution satisfies."""

        def close(a, b):
            return np.allclose(a, b, rtol=1e-7, atol=1e-9)

        if not close(self.n_sa.sum(axis=-1), self.n_s):
            raise ValueError("`n_sa` must add up to `n_s` over actions (n_s = n_sa.sum(-1))")
        continued = self.n_sas.sum(axis=1).reshape(self.n_sa.shape)
        if not close(continued + self.n_end, self.n_sa):
            raise ValueError(
                "`n_sas` and `n_end` must add up to `n_sa` (n_sa = n_sas.sum(-1) + n_end)"
            )
        slack = 1e-7 * np.abs(self.n_sa) * max(abs(self.y_min), abs(self.y_max)) + 1e-9
        if (self.y_sum > self.y_max * self.n_sa + slack).any():
            raise ValueError(
                f"`y_sum` implies a reward above `y_max` = {self.y_max}: `y_max` must be the "
                "largest reward logged"
            )
        if (self.y_sum < self.y_min * self.n_sa - slack).any():
            raise ValueError(
                f"`y_sum` implies a reward below `y_min` = {self.y_min}: `y_min` must be the "
                "smallest reward logged"
            )

    @property
    def horizon(self) -> int:
        """H, the number of steps (1 for pooled counts)."""
        return self.n_s.shape[0]

    @property
    def n_states(self) -> int:
        """S, the number of states."""
        return self.n_s.shape[1]

    @property
    def n_actions(self) -> int:
        """A, the number of actions."""
        return self.n_sa.shape[2]

    def transition_counts(self, h: int | None = None) -> np.ndarray:
        """N_h(s, x, s') as a dense array: shape (H, S, A, S), or (S, A, S) for one step `h`.

        The full array takes H·S·A·S·8 bytes (2.4 GB for Taxi at H = 200); the bounds never
        build it, they read the sparse :attr:`n_sas` row block of each step.

        Raises
        ------
        ValueError
            If `h` is outside [0, H).
        """
        H, S, A = self.n_sa.shape
        if h is None:
            return self.n_sas.toarray().reshape(H, S, A, S)
        h = check_int(h, "h", low=0, high=H - 1)
        return self.step_transitions(h).toarray().reshape(S, A, S)

    def step_transitions(self, h: int) -> scipy.sparse.csr_array:
        """The rows of :attr:`n_sas` for step `h`: sparse, shape (S·A, S), row s·A + x.

        Raises
        ------
        ValueError
            If `h` is outside [0, H).
        """
        H, S, A = self.n_sa.shape
        h = check_int(h, "h", low=0, high=H - 1)
        return self.n_sas if H == 1 else self.n_sas[h * S * A : (h + 1) * S * A]

    def __add__(self, other: Counts) -> Counts:
        if not isinstance(other, Counts):
            return NotImplemented
        if other.n_sa.shape != self.n_sa.shape:
            raise ValueError(
                f"cannot add counts of (H, S, A) {other.n_sa.shape} to counts of (H, S, A) "
                f"{self.n_sa.shape} (different horizon, states or actions)"
            )
        if other.pooled_horizon != self.pooled_horizon:
            raise ValueError(
                f"cannot add counts pooled over {other.pooled_horizon} steps to counts pooled "
                f"over {self.pooled_horizon} (None: per-step counts)"
            )
        return Counts(
            self.n_s + other.n_s,
            self.n_sa + other.n_sa,
            self.n_sas + other.n_sas,
            self.n_end + other.n_end,
            self.y_sum + other.y_sum,
            self.terminal | other.terminal,
            min(self.y_min, other.y_min),
            max(self.y_max, other.y_max),
            self.pooled_horizon,
        )

    def __radd__(self, other) -> Counts:
        """``0 + counts`` is ``counts``, so ``sum(list_of_counts)`` works."""
        if isinstance(other, int) and other == 0:
            return self
        return NotImplemented

    def pooled(self) -> Counts:
        """The counts summed over steps h: shape (1, ...) (the stationary, official estimate),
        with ``pooled_horizon`` = H (an already pooled Counts is returned as it is)."""
        if self.pooled_horizon is not None:
            return self
        H, S, A = self.n_sa.shape
        coo = self.n_sas.tocoo()
        n_sas = _csr(coo.data, coo.row % (S * A), coo.col, S * A, S)
        return Counts(
            self.n_s.sum(axis=0, keepdims=True),
            self.n_sa.sum(axis=0, keepdims=True),
            n_sas,
            self.n_end.sum(axis=0, keepdims=True),
            self.y_sum.sum(axis=0, keepdims=True),
            self.terminal,
            self.y_min,
            self.y_max,
            H,
        )


DENSE_KEYS = 1 << 22  # below this many (row, col) cells, sum with one bincount over all of them


def _csr(values, rows, cols, n_rows, n_cols) -> scipy.sparse.csr_array:
    """A canonical float64 CSR array (sorted, duplicates summed, no zeros) from triplets.

    Sums over the flat keys row·n_cols + col: one ``np.bincount`` over all cells when there
    are few, else over the distinct keys (``np.unique``), so memory follows the entries."""
    keys = np.asarray(rows, dtype=np.int64) * n_cols + np.asarray(cols, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    if n_rows * n_cols <= DENSE_KEYS:
        sums = np.bincount(keys, weights=values, minlength=n_rows * n_cols)
        keys = np.flatnonzero(sums)
        sums = sums[keys]
    else:
        keys, inverse = np.unique(keys, return_inverse=True)
        sums = np.bincount(inverse.ravel(), weights=values, minlength=len(keys))
        keys, sums = keys[sums != 0], sums[sums != 0]
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // n_cols, minlength=n_rows), out=indptr[1:])
    out = scipy.sparse.csr_array((sums, keys % n_cols, indptr), shape=(n_rows, n_cols))
    for part in (out.data, out.indices, out.indptr):
        part.setflags(write=False)
    return out


def _sparse_transitions(n_sas, H: int, S: int, A: int) -> scipy.sparse.csr_array:
    """Check N_h(s, x, s') (dense (H, S, A, S) or sparse (H·S·A, S)) and store it as CSR."""
    if scipy.sparse.issparse(n_sas):
        if n_sas.shape != (H * S * A, S):
            raise ValueError(
                f"`n_sas` must have shape (H·S·A, S) = ({H * S * A}, {S}) when sparse, "
                f"got {n_sas.shape}"
            )
        csr = scipy.sparse.csr_array(n_sas)
        values = check_array(
            csr.data, "n_sas", ndim=1, dtype="numeric", cast=np.float64, allow_empty=True,
            finite=False,
        )  # fmt: skip
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            coo = csr.tocoo()
            at = (int(coo.row[bad[0]]), int(coo.col[bad[0]]))
            raise ValueError(f"`n_sas` contains NaN or infinity (first at row, column {at})")
        if (values < 0).any():
            raise ValueError("`n_sas` must be non-negative")
        ours = csr.dtype == np.float64 and not csr.data.flags.writeable
        if ours and csr.has_canonical_format:
            return csr  # read-only: built by _csr (counts, pooled, exact distribution)
        coo = csr.tocoo()  # a caller's array: rebuilt into a private, read-only copy
        rows, cols, values = coo.row, coo.col, coo.data
    else:
        dense = check_array(n_sas, "n_sas", shape=(H, S, A, S), cast=np.float64)
        rows, cols = np.nonzero(dense.reshape(H * S * A, S))
        values = dense.reshape(H * S * A, S)[rows, cols]
    if (values < 0).any():
        raise ValueError("`n_sas` must be non-negative")
    return _csr(values, rows, cols, H * S * A, S)


class OfflineDataset:
    """A log of transitions (h, s, x, y, s', done) from a demonstrator, one row per step.

    Parameters
    ----------
    h : array_like of shape (N,), int
        Step within the episode, 0 <= h < `horizon`.
    s : array_like of shape (N,), int
        State, 0 <= s < `n_states`.
    x : array_like of shape (N,), int
        The demonstrator's action, 0 <= x < `n_actions`.
    y : array_like of shape (N,), float
        Reward.
    s_next : array_like of shape (N,), int
        Next state.
    done : array_like of shape (N,), bool
        Whether the step entered a terminal state (not set when the horizon cut the episode).
    n_states, n_actions, horizon : int
        Sizes of the problem (>= 1).

    Raises
    ------
    ValueError
        If the dataset is empty, the arrays differ in length, an index is out of range or a
        reward is NaN or infinite.
    TypeError
        If an index array is not of integer dtype or `done` is not boolean (or 0/1).

    Examples
    --------
    >>> data = OfflineDataset(
    ...     h=[0, 1], s=[0, 1], x=[1, 0], y=[0.0, 1.0], s_next=[1, 2], done=[False, True],
    ...     n_states=3, n_actions=2, horizon=2,
    ... )
    >>> len(data), data.counts().n_sa[0, 0, 1]
    (2, 1.0)
    """

    fields = ("h", "s", "x", "y", "s_next", "done")

    def __init__(self, h, s, x, y, s_next, done, n_states, n_actions, horizon) -> None:
        self.n_states = check_int(n_states, "n_states", low=1)
        self.n_actions = check_int(n_actions, "n_actions", low=1)
        self.horizon = check_int(horizon, "horizon", low=1)
        check_consistent_length(h=h, s=s, x=x, y=y, s_next=s_next, done=done)
        if len(h) == 0:
            raise ValueError("`h` is empty: the dataset has no transitions")
        self.h = check_index_array(h, "h", self.horizon)
        self.s = check_index_array(s, "s", self.n_states)
        self.x = check_index_array(x, "x", self.n_actions)
        self.s_next = check_index_array(s_next, "s_next", self.n_states)
        self.y = check_array(y, "y", ndim=1, dtype="numeric", cast=np.float64)
        done = check_array(done, "done", ndim=1, dtype="numeric")
        if done.dtype != bool and not np.isin(done, (0, 1)).all():
            raise ValueError("`done` must be boolean (or 0/1)")
        self.done = done.astype(bool)
        for name in self.fields:
            getattr(self, name).setflags(write=False)

    def __len__(self) -> int:
        return len(self.h)

    def __repr__(self) -> str:
        return (
            f"OfflineDataset({len(self)} transitions, n_states={self.n_states}, "
            f"n_actions={self.n_actions}, horizon={self.horizon})"
        )

    def __add__(self, other: OfflineDataset) -> OfflineDataset:
        """Concatenate two logs of the same problem (same sizes)."""
        if not isinstance(other, OfflineDataset):
            return NotImplemented
        mine = (self.n_states, self.n_actions, self.horizon)
        theirs = (other.n_states, other.n_actions, other.horizon)
        if mine != theirs:
            raise ValueError(
                f"cannot merge datasets of (n_states, n_actions, horizon) {theirs} and {mine}"
            )
        h, s, x, y, s_next, done = (
            np.concatenate([getattr(self, f), getattr(other, f)]) for f in self.fields
        )
        return OfflineDataset(h, s, x, y, s_next, done, *mine)

    def counts(self, *, pooled: bool = False) -> Counts:
        """Count visits, actions, transitions and reward sums per step.

        Parameters
        ----------
        pooled : bool, default=False
            Count every step as h = 0: the same as ``counts().pooled()``, without the per-step
            arrays (the official, stationary estimate).

        Returns
        -------
        Counts
            ``n_s`` (H, S), ``n_sa`` (H, S, A), ``n_sas`` (sparse, (H·S·A, S)) for continuing steps,
            ``n_end`` (H, S, A), ``y_sum`` (H, S, A), ``terminal`` (S,); H is 1 when `pooled`.
            Computed with ``np.bincount`` over flat indices (the same sums as ``np.add.at``).
        """
        pooled = check_bool(pooled, "pooled")
        H, S, A = (1 if pooled else self.horizon), self.n_states, self.n_actions
        hs = self.s if pooled else self.h * S + self.s
        hsa = hs * A + self.x
        ends = self.done.astype(np.float64)

        def count(index, size, weights=None):
            out = np.bincount(index, weights=weights, minlength=size)
            return out if weights is not None else out.astype(np.float64)

        n_sa = count(hsa, H * S * A)
        n_end = count(hsa, H * S * A, ends)
        return Counts(
            n_s=count(hs, H * S).reshape(H, S),
            n_sa=n_sa.reshape(H, S, A),
            n_sas=_csr(1.0 - ends, hsa, self.s_next, H * S * A, S),  # weight 0: ended steps
            n_end=n_end.reshape(H, S, A),
            y_sum=count(hsa, H * S * A, self.y).reshape(H, S, A),
            terminal=count(self.s_next, S, ends) > 0,
            y_min=float(self.y.min()),
            y_max=float(self.y.max()),
            pooled_horizon=self.horizon if pooled else None,
        )

    def episode_starts(self) -> np.ndarray:
        """Boolean (N,): rows that begin an episode (h = 0, or the previous row ended or does
        not lead to this one)."""
        start = np.ones(len(self), dtype=bool)
        start[1:] = (
            (self.h[1:] == 0)
            | (self.h[1:] != self.h[:-1] + 1)
            | self.done[:-1]
            | (self.s[1:] != self.s_next[:-1])
        )
        return start

    def returns_to_go(self) -> np.ndarray:
        """Σ of the rewards from each row to the end of its episode, shape (N,)."""
        episode = np.cumsum(self.episode_starts())
        G = self.y.copy()
        for t in range(1, self.horizon):
            same = np.zeros(len(self), dtype=bool)
            same[: len(self) - t] = episode[t:] == episode[:-t]
            G[same] += self.y[t:][same[: len(self) - t]]
        return G

    def save(self, path) -> Path:
        """Write the log and its sizes to a compressed ``.npz`` file; returns the path."""
        path = Path(path)
        np.savez_compressed(
            path,
            **{f: getattr(self, f) for f in self.fields},
            n_states=self.n_states,
            n_actions=self.n_actions,
            horizon=self.horizon,
        )
        return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")

    @classmethod
    def load(cls, path, *, n_states=None, n_actions=None, horizon=None) -> OfflineDataset:
        """Read a log from ``.npz`` with arrays ``h, s, x, y, s_next, done``.

        The sizes are read from the file when it has them (files written by :meth:`save`);
        otherwise, or to override them, pass `n_states`, `n_actions` and `horizon`.

        Raises
        ------
        FileNotFoundError
            If `path` does not exist.
        TypeError
            If `path` is not a str or path-like.
        ValueError
            If `path` is a folder or not an ``.npz`` archive of plain arrays (a single ``.npy``
            array, a text file, pickled objects), or an array or a size is missing.
        """
        if not isinstance(path, str | PathLike):
            raise TypeError(f"`path` must be a str or path-like, got {type(path).__name__}")
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"`path` {path}: no such file")
        if path.is_dir():
            raise ValueError(f"`path` {path} is a folder, not an .npz file")
        try:
            archive = np.load(path, allow_pickle=False)
        except (ValueError, OSError, EOFError) as error:
            raise ValueError(
                f"`path` {path} is not an .npz archive of the arrays {list(cls.fields)} ({error})"
            ) from None
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise ValueError(
                f"`path` {path} holds a single array (.npy); save a log with "
                f"OfflineDataset.save or np.savez with the arrays {list(cls.fields)}"
            )
        with archive:
            missing = [f for f in cls.fields if f not in archive]
            if missing:
                raise ValueError(f"{path}: arrays {missing} missing (needs {list(cls.fields)})")
            try:
                cols = [archive[f] for f in cls.fields]
                stored = {
                    n: archive[n] for n in ("n_states", "n_actions", "horizon") if n in archive
                }
            except ValueError as error:  # object arrays need pickle, which stays off
                raise ValueError(
                    f"`path` {path}: an array cannot be read safely ({error})"
                ) from None
            sizes = {}
            for name, given in (
                ("n_states", n_states),
                ("n_actions", n_actions),
                ("horizon", horizon),
            ):
                if given is not None:
                    sizes[name] = given
                elif name in stored:
                    sizes[name] = int(stored[name])
                else:
                    flag = "--" + name.replace("_", "-")
                    raise ValueError(
                        f"{path} does not record `{name}`: pass {name}=... (command line: {flag})"
                    )
        return cls(*cols, **sizes)
