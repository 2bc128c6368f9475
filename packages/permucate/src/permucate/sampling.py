"""Conditional samplers ``X̃_g ~ X_g | X_−g`` for the conditional permutation importance (CPI).

A sampler is fitted once per cross-fitting fold on the train part (``fit(X, groups)``) and then
draws ``P`` conditional copies of one feature group on the test part
(``sample(X, group, n_samples, rng) -> (P, n, |g|)``).

Continuous groups (Chamma et al. 2023, Sec. 3): ``X̃_g = ν̂_g(X_−g) + perm(X_g − ν̂_g(X_−g))``, one
row permutation per draw, shared by the group's columns. Binary / categorical features are drawn
row-wise from ``ν̂_g.predict_proba``. Only the CATE model sees ``X̃``.
"""

from __future__ import annotations

import numpy as np
from hidimstat.samplers import ConditionalSampler as _HidimstatSampler
from joblib import Parallel, delayed
from sklearn.base import clone

from ._validation import check_design
from .nuisance import default_outcome_model, default_propensity_model

__all__ = ["ConditionalSampler", "LinearGaussianSampler", "infer_feature_types"]

FEATURE_TYPES = ("continuous", "categorical")


def infer_feature_types(X, max_cardinality=10):
    """``"categorical"`` for columns with at most ``max_cardinality`` distinct values, else
    ``"continuous"`` (hidimstat's ``auto`` rule). Ordinal columns with few levels (IHDP
    ``birth.o``) are misread: pass the types explicitly for them.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    max_cardinality : int, default=10

    Returns
    -------
    list of str, length d
    """
    X = np.asarray(X)
    return [
        "categorical" if np.unique(X[:, j]).size <= max_cardinality else "continuous"
        for j in range(X.shape[1])
    ]


def _check_groups(groups, d):
    groups = [np.atleast_1d(np.asarray(g, dtype=np.intp)) for g in groups]
    for g in groups:
        if g.size == 0 or g.min() < 0 or g.max() >= d or np.unique(g).size != g.size:
            raise ValueError(
                f"`groups` entries must be distinct column indices in [0, {d}), got {g}"
            )
    return groups


class ConditionalSampler:
    """Conditional sampler built on ``hidimstat.samplers.ConditionalSampler``, one per group.

    Parameters
    ----------
    model_regression : sklearn regressor, default=None
        ``ν̂_g`` for continuous groups. ``None``: ``RidgeCV(alphas=logspace(-3, 3, 10))``
        (official experiment scripts).
    model_categorical : sklearn classifier, default=None
        ``ν̂_g`` for binary / categorical groups. ``None``:
        ``LogisticRegressionCV(Cs=logspace(-3, 3, 10))``.
    feature_types : "auto" or sequence of {"continuous", "categorical"}, default="auto"
        One entry per column of ``X``; ``"auto"`` applies :func:`infer_feature_types`.
    categorical_max_cardinality : int, default=10
    n_jobs : int, default=1
        Parallel fits of the per-group models.

    Attributes
    ----------
    samplers_ : list of fitted ``hidimstat.samplers.ConditionalSampler``, one per group
    groups_ : list of ndarray of int

    Notes
    -----
    Source: Chamma, Engemann & Thirion (2023), "Statistically valid variable importance assessment
    through conditional permutations", Algorithm 1; hidimstat's reference implementation.
    """

    def __init__(
        self,
        model_regression=None,
        model_categorical=None,
        feature_types="auto",
        categorical_max_cardinality=10,
        n_jobs=1,
    ):
        self.model_regression = model_regression
        self.model_categorical = model_categorical
        self.feature_types = feature_types
        self.categorical_max_cardinality = categorical_max_cardinality
        self.n_jobs = n_jobs

    def fit(self, X, groups):
        """Fit ``ν̂_g : X_−g → X_g`` for every group.

        Parameters
        ----------
        X : ndarray of shape (n, d), float
        groups : sequence of sequences of int
            Column indices of each group (a single feature is a group of one).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Bad ``groups``, ``feature_types`` of the wrong length or with unknown names, or a group
            that mixes continuous and categorical columns.
        """
        X = check_design(X, "X")
        d = X.shape[1]
        self.groups_ = _check_groups(groups, d)
        types = self._column_types(X)
        reg = default_outcome_model() if self.model_regression is None else self.model_regression
        clf = (
            default_propensity_model() if self.model_categorical is None else self.model_categorical
        )
        samplers = []
        for g in self.groups_:
            kinds = {types[j] for j in g}
            if len(kinds) > 1:
                raise ValueError(f"group {g.tolist()} mixes continuous and categorical columns")
            samplers.append(
                _HidimstatSampler(
                    model_regression=clone(reg),
                    model_categorical=clone(clf),
                    data_type=kinds.pop(),
                )
            )
        self.samplers_ = Parallel(n_jobs=self.n_jobs)(
            delayed(_fit_one)(s, np.delete(X, g, axis=1), X[:, g])
            for s, g in zip(samplers, self.groups_, strict=True)
        )
        return self

    def sample(self, X, group, n_samples, random_state):
        """Draw ``n_samples`` conditional copies of group ``group`` at the rows of ``X``.

        Parameters
        ----------
        X : ndarray of shape (n, d), float
        group : int
            Index into the ``groups`` passed to :meth:`fit`.
        n_samples : int
            Number of draws ``P``.
        random_state : numpy.random.Generator or int

        Returns
        -------
        ndarray of shape (n_samples, n, |g|), float64
        """
        g = self.groups_[group]
        draws = self.samplers_[group].sample(
            np.delete(X, g, axis=1), X[:, g], n_samples=n_samples, random_state=random_state
        )
        return np.asarray(draws, dtype=np.float64).reshape(n_samples, X.shape[0], g.size)

    def _column_types(self, X):
        d = X.shape[1]
        if isinstance(self.feature_types, str):
            if self.feature_types == "auto":
                return infer_feature_types(X, self.categorical_max_cardinality)
            if self.feature_types in FEATURE_TYPES:
                return [self.feature_types] * d
            raise ValueError(
                f"`feature_types` must be 'auto', 'continuous', 'categorical' or a list; "
                f"got {self.feature_types!r}"
            )
        types = list(self.feature_types)
        if len(types) != d or any(t not in FEATURE_TYPES for t in types):
            raise ValueError(
                f"`feature_types` must list {d} entries from {FEATURE_TYPES}, got {types!r}"
            )
        return types


def _fit_one(sampler, X_minus_g, X_g):
    sampler.fit(X_minus_g, X_g)
    return sampler


class LinearGaussianSampler:
    """Exact ridge-residual sampler for continuous features from a single matrix inverse.

    With ``Θ = (X_cᵀ X_c + α I)⁻¹`` (``X_c`` centred with the train means), the residual of the
    ridge regression (penalty ``α``, unpenalised intercept) of group ``g`` on the other columns is
    ``r_g = X_c Θ[:, g] Θ[g, g]⁻¹`` (block inversion; for one feature ``r_j = (X_c Θ)_j / Θ_jj``).
    One ``d × d`` inverse replaces ``d`` separate regressions.

    Parameters
    ----------
    alpha : float > 0, default=1.0
        Ridge penalty of every ``ν̂_g``.

    Attributes
    ----------
    mean_ : ndarray of shape (d,)
    precision_ : ndarray of shape (d, d)
        ``Θ``.
    groups_ : list of ndarray of int

    Notes
    -----
    Source: block-matrix inversion (Schur complement) applied to the ridge normal equations; the
    residual permutation is Chamma et al. (2023) Algorithm 1. Suitable for continuous features;
    use :class:`ConditionalSampler` for binary or categorical ones.
    """

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, groups=None):
        """Compute ``Θ`` from the train part.

        Parameters
        ----------
        X : ndarray of shape (n, d), float
        groups : sequence of sequences of int, default=None
            ``None``: every column is its own group.

        Returns
        -------
        self
        """
        if not (isinstance(self.alpha, int | float | np.number) and self.alpha > 0):
            raise ValueError(f"`alpha` must be a positive number, got {self.alpha!r}")
        X = check_design(X, "X")
        d = X.shape[1]
        self.groups_ = _check_groups([[j] for j in range(d)] if groups is None else groups, d)
        self.mean_ = X.mean(axis=0)
        Xc = X - self.mean_
        self.precision_ = np.linalg.inv(Xc.T @ Xc + self.alpha * np.eye(d))
        return self

    def residuals(self, X, group=None):
        """Ridge residuals ``X_g − ν̂_g(X_−g)``.

        Parameters
        ----------
        X : ndarray of shape (n, d), float
        group : int or None, default=None
            Index into ``groups_``; ``None`` returns every single-feature residual ``(n, d)``.

        Returns
        -------
        ndarray of shape (n, |g|) or (n, d), float64
        """
        Xc = check_design(X, "X") - self.mean_
        if group is None:
            return (Xc @ self.precision_) / np.diag(self.precision_)
        g = self.groups_[group]
        theta_g = self.precision_[:, g]
        return np.linalg.solve(theta_g[g].T, (Xc @ theta_g).T).T

    def sample(self, X, group, n_samples, random_state):
        """``X̃_g = ν̂_g(X_−g) + perm(r_g)``, one row permutation per draw.

        Parameters
        ----------
        X : ndarray of shape (n, d), float
        group : int
        n_samples : int
        random_state : numpy.random.Generator or int

        Returns
        -------
        ndarray of shape (n_samples, n, |g|), float64
        """
        rng = np.random.default_rng(random_state)
        g = self.groups_[group]
        resid = self.residuals(X, group)
        fitted = X[:, g] - resid
        perms = rng.permuted(np.tile(np.arange(len(X)), (n_samples, 1)), axis=1)
        return fitted[None] + resid[perms]
