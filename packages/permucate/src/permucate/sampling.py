"""Samplers of perturbed copies ``X̃_g`` of a feature group, for permutation importances.

A sampler is fitted once per cross-fitting fold on the train part (``fit(X, groups)``) and then
draws ``P`` copies of one feature group on the test part
(``sample(X, group, n_samples, rng) -> (P, n, |g|)``).

Conditional copies ``X̃_g ~ X_g | X_−g`` (CPI, the paper's method): continuous groups (Chamma et
al. 2023, Sec. 3) ``X̃_g = ν̂_g(X_−g) + perm(X_g − ν̂_g(X_−g))``, one row permutation per draw,
shared by the group's columns; binary / categorical features drawn row-wise from
``ν̂_g.predict_proba``. Marginal copies (PFI, :class:`MarginalSampler`): ``X̃_g = X_g[perm]``.
Only the CATE model sees ``X̃``.
"""

from __future__ import annotations

import numpy as np
from hidimstat.samplers import ConditionalSampler as _HidimstatSampler
from joblib import Parallel, delayed
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError

from icml25_core import check_scalar

from ._validation import check_design
from .nuisance import default_outcome_model, default_propensity_model

__all__ = [
    "ConditionalSampler",
    "LinearGaussianSampler",
    "MarginalSampler",
    "infer_feature_types",
]

FEATURE_TYPES = ("continuous", "categorical")


def infer_feature_types(X, max_cardinality=10):
    """``"categorical"`` for columns with at most ``max_cardinality`` distinct values, else
    ``"continuous"`` (hidimstat's ``auto`` rule). Ordinal columns with few levels (IHDP
    ``birth.o``) are misread: pass the types explicitly for them.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    max_cardinality : int >= 1, default=10

    Returns
    -------
    list of str, length d
    """
    X = np.asarray(X)
    return [
        "categorical" if np.unique(X[:, j]).size <= max_cardinality else "continuous"
        for j in range(X.shape[1])
    ]


def resolve_feature_types(feature_types, X, max_cardinality=10):
    """Column types from ``"auto"``, one type name for all columns, or a list of ``d`` names.

    Raises
    ------
    ValueError
        Unknown names or a list whose length is not ``d``.
    """
    d = X.shape[1]
    if isinstance(feature_types, str):
        if feature_types == "auto":
            return infer_feature_types(X, max_cardinality)
        if feature_types in FEATURE_TYPES:
            return [feature_types] * d
        raise ValueError(
            "`feature_types` must be 'auto', 'continuous', 'categorical' or a list; "
            f"got {feature_types!r}"
        )
    types = list(feature_types)
    if len(types) != d or any(t not in FEATURE_TYPES for t in types):
        raise ValueError(
            f"`feature_types` must list {d} entries from {FEATURE_TYPES}, got {types!r}"
        )
    return types


def _check_groups(groups, d):
    if groups is None:
        return [np.array([j]) for j in range(d)]
    try:
        groups = [np.atleast_1d(np.asarray(g, dtype=np.intp)) for g in groups]
    except (TypeError, ValueError):
        raise TypeError("`groups` must be a sequence of sequences of column indices") from None
    for g in groups:
        if g.size == 0 or g.min() < 0 or g.max() >= d or np.unique(g).size != g.size:
            raise ValueError(
                f"`groups` entries must be distinct column indices in [0, {d}), got {g}"
            )
    return groups


def _check_model(model, name, method):
    if not (hasattr(model, "fit") and hasattr(model, method)) or (
        method == "predict" and is_classifier(model)
    ):
        kind = "regressor" if method == "predict" else "classifier"
        raise TypeError(f"`{name}` must be an sklearn {kind} with fit and {method}, got {model!r}")
    return model


class ConditionalSampler:
    """Conditional sampler built on ``hidimstat.samplers.ConditionalSampler``, one per group.

    Categorical columns may hold any numeric codes (``0/1``, ``±0.05``, ``1/2``): they are mapped
    to class indices for the classifier and back for the draws. A group whose other columns are
    all of ``X`` is drawn from its marginal (an intercept-only ``ν̂_g``); a categorical column
    with a single value in the train part is drawn as that value.

    Parameters
    ----------
    model_regression : sklearn regressor, default=None
        ``ν̂_g`` for continuous groups. ``None``: ``RidgeCV(alphas=logspace(-3, 3, 10))``
        (official experiment scripts).
    model_categorical : sklearn classifier, default=None
        ``ν̂_g`` for binary / categorical groups. ``None``:
        ``LogisticRegressionCV(Cs=logspace(-3, 3, 10))``.
    feature_types : "auto", "continuous", "categorical" or list of them, default="auto"
        One entry per column of ``X``; ``"auto"`` applies :func:`infer_feature_types`.
    categorical_max_cardinality : int >= 1, default=10
    n_jobs : int, default=1
        Parallel fits of the per-group models.

    Attributes
    ----------
    samplers_ : list of fitted ``hidimstat.samplers.ConditionalSampler`` (``None`` for a
        constant group), one per group
    groups_ : list of ndarray of int
    classes_ : list of (list of ndarray or None)
        Per group, the original values of each categorical column.

    Notes
    -----
    Source: Chamma, Engemann & Thirion (2023), "Statistically valid variable importance assessment
    through conditional permutations", Algorithm 1; hidimstat's reference implementation. A group
    mixing continuous and categorical columns is refused: residual permutation and class draws
    cannot be combined in one joint draw.
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

    def fit(self, X, groups=None):
        """Fit ``ν̂_g : X_−g → X_g`` for every group.

        Parameters
        ----------
        X : ndarray of shape (n, d), float
        groups : sequence of sequences of int, default=None
            Column indices of each group; ``None``: every column alone.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Bad ``groups``, bad ``feature_types``, a group that mixes continuous and categorical
            columns, or a multi-column categorical group with a constant column.
        TypeError
            A regression model without ``predict`` or a classifier without ``predict_proba``.
        """
        X = check_design(X, "X")
        check_scalar(
            self.categorical_max_cardinality, "categorical_max_cardinality", kind=int, low=1
        )
        self.n_features_in_ = X.shape[1]
        self.groups_ = _check_groups(groups, X.shape[1])
        types = resolve_feature_types(self.feature_types, X, self.categorical_max_cardinality)
        reg = default_outcome_model() if self.model_regression is None else self.model_regression
        clf = (
            default_propensity_model() if self.model_categorical is None else self.model_categorical
        )
        _check_model(reg, "model_regression", "predict")
        _check_model(clf, "model_categorical", "predict_proba")
        jobs: list[tuple | None] = []
        self.classes_ = []
        for g in self.groups_:
            kinds = {types[j] for j in g}
            if len(kinds) > 1:
                raise ValueError(
                    f"group of columns {g.tolist()} mixes continuous and categorical columns; "
                    "split it, or declare its columns with one type in `feature_types`"
                )
            kind = kinds.pop()
            target, classes = X[:, g], None
            if kind == "categorical":
                classes = [np.unique(target[:, k]) for k in range(g.size)]
                if any(c.size == 1 for c in classes) and g.size > 1:
                    raise ValueError(
                        f"group of columns {g.tolist()} has a column with a single value in a "
                        "training fold: its conditional distribution cannot be learned"
                    )
                target = np.column_stack(
                    [np.searchsorted(c, target[:, k]) for k, c in enumerate(classes)]
                )
            self.classes_.append(classes)
            if classes is not None and classes[0].size == 1:
                jobs.append(None)  # a constant column: every draw is its single value
                continue
            rest = np.delete(X, g, axis=1)
            if rest.shape[1] == 0:  # nothing to condition on: intercept-only model = marginal
                rest = np.zeros((len(X), 1))
            sampler = _HidimstatSampler(
                model_regression=clone(reg), model_categorical=clone(clf), data_type=kind
            )
            jobs.append((sampler, rest, target, g))
        fitted = Parallel(n_jobs=self.n_jobs)(
            delayed(_fit_one)(*job) for job in jobs if job is not None
        )
        self.samplers_ = [None if job is None else fitted.pop(0) for job in jobs]
        return self

    def sample(self, X, group, n_samples, random_state):
        """Draw ``n_samples`` conditional copies of group ``group`` at the rows of ``X``.

        Parameters
        ----------
        X : ndarray of shape (n, d), float
        group : int
            Index into the ``groups`` passed to :meth:`fit`.
        n_samples : int >= 1
            Number of draws ``P``.
        random_state : numpy.random.Generator or int

        Returns
        -------
        ndarray of shape (n_samples, n, |g|), float64

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before :meth:`fit`.
        ValueError
            ``group`` out of range or ``n_samples < 1``.
        """
        g = _fitted_group(self, group)
        check_scalar(n_samples, "n_samples", kind=int, low=1)
        X = _check_width(self, X)
        shape = (n_samples, X.shape[0], g.size)
        classes = self.classes_[group]
        if self.samplers_[group] is None:
            return np.full(shape, classes[0][0], dtype=np.float64)
        rest = np.delete(X, g, axis=1)
        if rest.shape[1] == 0:
            rest = np.zeros((len(X), 1))
        target = X[:, g]
        if classes is not None:
            target = np.column_stack(
                [np.searchsorted(c, target[:, k]) for k, c in enumerate(classes)]
            )
        draws = self.samplers_[group].sample(
            rest, target, n_samples=n_samples, random_state=random_state
        )
        draws = np.asarray(draws).reshape(shape)
        if classes is None:
            return draws.astype(np.float64)
        codes = draws.astype(np.intp)
        return np.stack([classes[k][codes[..., k]] for k in range(g.size)], axis=-1).astype(
            np.float64
        )


def _check_width(sampler, X):
    X = check_design(X, "X")
    if X.shape[1] != sampler.n_features_in_:
        raise ValueError(
            f"`X` has {X.shape[1]} columns, the sampler was fitted on {sampler.n_features_in_}"
        )
    return X


def _fitted_group(sampler, group):
    if not hasattr(sampler, "groups_"):
        raise NotFittedError(f"this {type(sampler).__name__} is not fitted yet; call fit first")
    if not isinstance(group, int | np.integer) or not 0 <= group < len(sampler.groups_):
        raise ValueError(f"`group` must be an index in [0, {len(sampler.groups_)}), got {group!r}")
    return sampler.groups_[group]


def _fit_one(sampler, X_minus_g, X_g, group):
    try:
        sampler.fit(X_minus_g, X_g)
    except ValueError as err:
        raise ValueError(
            f"fitting the conditional model of columns {group.tolist()} "
            f"({sampler.data_type}) failed: {err}. A categorical column with rare levels needs "
            "a classifier without internal cross-validation (model_categorical="
            "LogisticRegression()), or declare it continuous in `feature_types`"
        ) from err
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
        self.n_features_in_ = d
        self.groups_ = _check_groups(groups, d)
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
        if not hasattr(self, "precision_"):
            raise NotFittedError("this LinearGaussianSampler is not fitted yet; call fit first")
        Xc = _check_width(self, X) - self.mean_
        if group is None:
            return (Xc @ self.precision_) / np.diag(self.precision_)
        g = _fitted_group(self, group)
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
        g = _fitted_group(self, group)
        check_scalar(n_samples, "n_samples", kind=int, low=1)
        X = _check_width(self, X)
        resid = self.residuals(X, group)
        fitted = X[:, g] - resid
        return fitted[None] + resid[_row_permutations(len(X), n_samples, random_state)]


class MarginalSampler:
    """Marginal permutation ``X̃_g = X_g[perm]`` of a feature group: permutation feature
    importance (PFI).

    Each draw permutes the rows of the group's columns jointly, breaking their link with the
    other covariates as well as with the outcome. When ``X_g`` is correlated with other
    covariates this moves the CATE model off the data's support, so PFI can score a null
    covariate that is correlated with a relevant one above 0 where the conditional permutation
    (:class:`ConditionalSampler`) does not: use it to see what conditioning buys.

    Attributes
    ----------
    groups_ : list of ndarray of int
    n_features_in_ : int

    Notes
    -----
    Source: Breiman (2001), "Random forests", Sec. 10 (permutation importance); Fisher, Rudin &
    Dominici (2019), "All models are wrong, but many are useful" (model reliance); Hooker, Mentch
    & Zhou (2021), "Unrestricted permutation forces extrapolation"; Chamma et al. (2023) compare
    it with CPI. Any column type (the draws keep the column's own values).
    """

    def fit(self, X, groups=None):
        """Record the width of ``X`` (n, d) and the groups; nothing is learned.

        Parameters
        ----------
        X : ndarray of shape (n, d), float
        groups : sequence of sequences of int, default=None
            ``None``: every column is its own group.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            NaN/inf or empty ``X``, or bad ``groups``.
        """
        X = check_design(X, "X")
        self.n_features_in_ = X.shape[1]
        self.groups_ = _check_groups(groups, X.shape[1])
        return self

    def sample(self, X, group, n_samples, random_state):
        """``n_samples`` row permutations of group ``group``'s columns of ``X``.

        Parameters
        ----------
        X : ndarray of shape (n, d), float
        group : int
            Index into ``groups_``.
        n_samples : int >= 1
        random_state : numpy.random.Generator or int

        Returns
        -------
        ndarray of shape (n_samples, n, |g|), float64

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before :meth:`fit`.
        ValueError
            ``group`` out of range, ``n_samples < 1``, or ``X`` of another width than in fit.
        """
        g = _fitted_group(self, group)
        check_scalar(n_samples, "n_samples", kind=int, low=1)
        X = _check_width(self, X)
        return X[:, g][_row_permutations(len(X), n_samples, random_state)]


def _row_permutations(n, n_samples, random_state):
    """``(n_samples, n)`` int array: one independent permutation of ``0..n−1`` per row."""
    rng = np.random.default_rng(random_state)
    return rng.permuted(np.tile(np.arange(n), (n_samples, 1)), axis=1)
