"""CATE learners: the default DR-learner and adapters for econml, causalml and fixed functions.

Every learner the estimators use goes through :func:`as_cate`, which returns an object with
``fit(X, T, Y) -> self`` and ``effect(X) -> ndarray (n,)``, so that PermuCATE can call any of them
the same way and clone a fresh copy per cross-fitting fold.
"""

from __future__ import annotations

import inspect

import numpy as np
from econml.dr import DRLearner
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted

from icml25_core import check_scalar

from .nuisance import (
    check_classifier,
    check_regressor,
    default_outcome_model,
    default_propensity_model,
)

__all__ = ["CateModel", "PerArmRegressor", "as_cate", "dr_learner"]


class PerArmRegressor(RegressorMixin, BaseEstimator):
    """One clone of ``estimator`` per treatment arm, for econml's ``model_regression``.

    econml feeds ``model_regression`` the matrix ``[X, W, T_onehot]`` whose trailing column is 1 for
    treated units (binary treatment, control column dropped). Pooling both arms in one linear model
    forces ``μ1 − μ0`` to be constant, which is not the per-arm DR-learner of the paper; this
    wrapper fits ``μ̂0`` on the controls and ``μ̂1`` on the treated and routes each row by its last
    column.

    Parameters
    ----------
    estimator : sklearn regressor
        Cloned for each arm.

    Attributes
    ----------
    estimators_ : list of two fitted regressors, ``[μ̂0, μ̂1]``

    Notes
    -----
    Source: Kennedy (2023) per-arm outcome regressions; official ``permucate.learners.DRLearner``
    fits ``mu_0`` / ``mu_1`` separately.
    """

    def __init__(self, estimator=None):
        self.estimator = estimator

    def fit(self, X, y, sample_weight=None):
        """Fit μ̂0 on the rows whose last column is 0 and μ̂1 on those where it is 1.

        Parameters
        ----------
        X : array-like, shape (n, d + 1)
            Features, then the binary treatment indicator.
        y : array-like, shape (n,)
        sample_weight : array-like, shape (n,), optional

        Returns
        -------
        self

        Raises
        ------
        ValueError
            If `X` has fewer than 2 columns, its last column is not 0/1, or an arm has no unit.
        """
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if X.ndim != 2 or X.shape[1] < 2:
            raise ValueError("`X` must be [features, treatment indicator] with >= 2 columns")
        arm = X[:, -1]
        if not np.isin(arm, (0.0, 1.0)).all():
            raise ValueError("the last column of `X` must be the binary treatment indicator")
        base = default_outcome_model() if self.estimator is None else self.estimator
        self.estimators_ = []
        for a in (0.0, 1.0):
            rows = arm == a
            if not rows.any():
                raise ValueError(f"no unit in arm {int(a)}: cannot fit its outcome model")
            kwargs = {} if sample_weight is None else {"sample_weight": sample_weight[rows]}
            self.estimators_.append(clone(base).fit(X[rows, :-1], y[rows], **kwargs))
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        """μ̂_a(x) per row, a = its last column (the treatment indicator): shape (n,) float64."""
        check_is_fitted(self, "estimators_")
        X = np.asarray(X, dtype=np.float64)
        treated = X[:, -1] == 1.0
        out = np.empty(len(X))
        for a, rows in ((0, ~treated), (1, treated)):
            if rows.any():
                out[rows] = np.asarray(self.estimators_[a].predict(X[rows, :-1])).reshape(-1)
        return out


def dr_learner(
    outcome_model=None,
    propensity_model=None,
    final_model=None,
    *,
    cv=5,
    clip=0.01,
    random_state=None,
):
    """Kennedy's DR-learner as an ``econml.dr.DRLearner`` configured like the paper.

    Parameters
    ----------
    outcome_model : sklearn regressor, default=None
        Per-arm outcome model (wrapped in :class:`PerArmRegressor`). ``None``:
        ``RidgeCV(alphas=logspace(-3, 3, 10))``.
    propensity_model : sklearn classifier, default=None
        ``None``: ``LogisticRegressionCV(Cs=logspace(-3, 3, 10))``.
    final_model : sklearn regressor, default=None
        Regression of the cross-fitted pseudo-outcomes on ``X``. ``None``:
        ``RidgeCV(alphas=logspace(-3, 3, 10))``.
    cv : int, default=5
        Inner cross-fitting folds for the pseudo-outcomes (official ``n_splits_learner=5``).
    clip : float in (0, 0.5), default=0.01
        ``min_propensity``: propensities are clipped to ``[clip, 1 − clip]`` (official
        ``clip=(0.01, 0.99)``; econml's default 1e-6 lets pseudo-outcomes explode).
    random_state : int or None, default=None

    Returns
    -------
    econml.dr.DRLearner
        Unfitted; ``fit(Y, T, X=X)`` then ``effect(X)``.

    Raises
    ------
    TypeError
        A model of the wrong kind (a classifier as regressor, a regressor as propensity model,
        a string), or a bad ``random_state``.
    ValueError
        ``cv < 2`` or ``clip`` outside (0, 0.5).

    Notes
    -----
    Source: Kennedy (2023), Algorithm 1; official ``utils.get_learner(model='linear',
    meta_learner='DR')`` (RidgeCV / LogisticRegressionCV nuisances, RidgeCV final, cv=5).
    """
    check_scalar(cv, "cv", kind=int, low=2)
    check_scalar(clip, "clip", kind=float, low=0, high=0.5, inclusive="neither")
    if random_state is not None and not isinstance(random_state, int | np.random.RandomState):
        raise TypeError(
            f"`random_state` must be None, an int or a RandomState, got {random_state!r}"
        )
    outcome = check_regressor(outcome_model, "outcome_model")
    propensity = check_classifier(propensity_model, "propensity_model")
    final = check_regressor(final_model, "final_model")
    return DRLearner(
        model_propensity=default_propensity_model() if propensity is None else propensity,
        model_regression=PerArmRegressor(outcome),
        model_final=default_outcome_model() if final is None else final,
        cv=int(cv),
        min_propensity=clip,
        random_state=random_state,
    )


class CateModel:
    """Uniform view of a CATE learner: ``fit(X, T, Y) -> self`` and ``effect(X) -> (n,)``.

    Built by :func:`as_cate`; ``kind`` is ``"econml"``, ``"causalml"``, ``"native"``,
    ``"fixed"`` (a callable ``τ̂(X)`` that is never fitted, e.g. an oracle) or ``"regressor"``
    (an already fitted regressor whose ``predict`` is the effect, e.g. a DR-learner's final stage).
    """

    KINDS = ("econml", "causalml", "native", "fixed", "regressor")

    def __init__(self, estimator, kind):
        if kind not in self.KINDS:
            raise ValueError(f"`kind` must be one of {self.KINDS}, got {kind!r}")
        self.estimator = estimator
        self.kind = kind

    @property
    def final_model(self):
        """The learner's final-stage regressor (``model_final``), or ``None``."""
        return getattr(self.estimator, "model_final", None)

    def clone(self):
        """An unfitted copy (the fixed function itself for ``kind == "fixed"``)."""
        if self.kind == "fixed":
            return self
        return CateModel(clone(self.estimator, safe=False), self.kind)

    def fit(self, X, T, Y):
        """Fit the wrapped learner on covariates `X` (n, d), treatment `T` (n,), outcome `Y` (n,).

        A ``"fixed"`` function is not fitted. Returns self.

        Raises
        ------
        TypeError
            For the ``"regressor"`` view (already fitted).
        """
        if self.kind == "regressor":
            raise TypeError("a fitted regressor view cannot be refitted on (X, T, Y)")
        if self.kind == "econml":
            self.estimator.fit(Y, T, X=X)
        elif self.kind == "causalml":
            self.estimator.fit(X=X, treatment=T, y=Y)
        elif self.kind == "native":
            self.estimator.fit(X, T, Y)
        return self

    def effect(self, X):
        """τ̂(X): the estimated CATE at each row of `X` (n, d), shape (n,) float64.

        Raises
        ------
        TypeError
            If the learner's output is not numeric.
        ValueError
            If it does not hold one finite value per row.
        """
        if self.kind == "econml" or self.kind == "native":
            out = self.estimator.effect(X)
        elif self.kind == "regressor":
            out = self.estimator.predict(X)
        elif self.kind == "causalml":
            out = np.asarray(self.estimator.predict(X)).reshape(len(X), -1)[:, 0]
        else:
            out = self.estimator(X)
        try:
            out = np.asarray(out, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError) as err:
            raise TypeError(f"the learner's effects are not numbers: {err}") from None
        if out.shape[0] != len(X):
            raise ValueError(
                f"the learner returned {out.shape[0]} effects for {len(X)} rows; "
                "`effect(X)` must return one effect per row"
            )
        if not np.isfinite(out).all():
            raise ValueError("the learner returned NaN or infinite effects")
        return out


def as_cate(obj):
    """Wrap a CATE learner so that PermuCATE can fit and query it.

    Parameters
    ----------
    obj : object
        - an econml estimator (``fit(Y, T, *, X=...)`` and ``effect(X)``);
        - a causalml meta-learner (``fit(X, treatment, y)`` and ``predict(X)``);
        - an object with ``fit(X, T, Y)`` and ``effect(X)``;
        - a callable ``τ̂(X) -> (n,)`` used as a fixed, already-fitted effect (oracles); it
          receives a float64 ndarray of shape (n, d) with the columns in the order of ``X``
          (never a DataFrame);
        - a :class:`CateModel` (returned unchanged).

    Returns
    -------
    CateModel

    Raises
    ------
    TypeError
        If ``obj`` matches none of the conventions above.
    """
    if isinstance(obj, CateModel):
        return obj
    if inspect.isclass(obj):
        raise TypeError(
            f"`learner` must be an estimator instance, got the class {obj.__name__}; "
            f"call it first, e.g. {obj.__name__}(...)"
        )
    fit = getattr(obj, "fit", None)
    if callable(fit):
        params = [
            p.name
            for p in inspect.signature(fit).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]
        if hasattr(obj, "effect") and params[:2] == ["Y", "T"] and "X" in params:
            return CateModel(obj, "econml")
        if hasattr(obj, "predict") and params[:3] == ["X", "treatment", "y"]:
            return CateModel(obj, "causalml")
        if hasattr(obj, "effect") and len(params) >= 3:
            return CateModel(obj, "native")
    elif callable(obj):
        return CateModel(obj, "fixed")
    raise TypeError(
        "`learner` must be an econml estimator (fit(Y, T, X=) + effect), a causalml meta-learner "
        "(fit(X, treatment, y) + predict), an object with fit(X, T, Y) + effect(X), or a callable "
        f"tau(X); got {type(obj).__name__}"
    )
