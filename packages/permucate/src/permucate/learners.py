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

    econml feeds ``model_regression`` the matrix ``[X, W, T_onehot]`` whose ``n_arms − 1``
    trailing columns one-hot encode the arm (the base arm, all zeros, is dropped). Pooling the arms
    in one linear model forces ``μ_a − μ_0`` to be constant, which is not the per-arm DR-learner
    of the paper; this wrapper fits ``μ̂_a`` on the units of arm ``a`` only and routes each row by
    its trailing columns.

    Parameters
    ----------
    estimator : sklearn regressor, default=None
        Cloned for each arm. ``None``: ``RidgeCV(alphas=logspace(-3, 3, 10))``.
    n_arms : int >= 2, default=2
        Number of treatment arms ``A`` (levels of ``T``): ``A − 1`` trailing indicator columns.

    Attributes
    ----------
    estimators_ : list of ``n_arms`` fitted regressors, ``[μ̂_0, μ̂_1, ...]``

    Notes
    -----
    Source: Kennedy (2023) per-arm outcome regressions; official ``permucate.learners.DRLearner``
    fits ``mu_0`` / ``mu_1`` separately; econml ``DRLearner`` for the ``[X, W, T_onehot]`` layout.
    """

    def __init__(self, estimator=None, n_arms=2):
        self.estimator = estimator
        self.n_arms = n_arms

    def fit(self, X, y, sample_weight=None):
        """Fit ``μ̂_a`` on the rows of arm ``a`` (all trailing indicators 0: the base arm).

        Parameters
        ----------
        X : array-like, shape (n, d + n_arms − 1)
            Features, then the one-hot treatment indicators.
        y : array-like, shape (n,)
        sample_weight : array-like, shape (n,), optional

        Returns
        -------
        self

        Raises
        ------
        ValueError
            ``n_arms < 2``, ``X`` without a feature column before the indicators, indicators
            that are not one-hot 0/1, or an arm with no unit.
        """
        check_scalar(self.n_arms, "n_arms", kind=int, low=2)
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if X.ndim != 2 or X.shape[1] < self.n_arms:
            raise ValueError(
                f"`X` must be [features, {self.n_arms - 1} treatment indicator(s)] with >= "
                f"{self.n_arms} columns"
            )
        arm = self._arm(X)
        base = default_outcome_model() if self.estimator is None else self.estimator
        features = X[:, : 1 - self.n_arms]
        self.estimators_ = []
        for a in range(self.n_arms):
            rows = arm == a
            if not rows.any():
                raise ValueError(f"no unit in arm {a}: cannot fit its outcome model")
            kwargs = {} if sample_weight is None else {"sample_weight": sample_weight[rows]}
            self.estimators_.append(clone(base).fit(features[rows], y[rows], **kwargs))
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        """``μ̂_a(x)`` per row, ``a`` read from its trailing indicators: shape (n,) float64."""
        check_is_fitted(self, "estimators_")
        X = np.asarray(X, dtype=np.float64)
        arm = self._arm(X)
        features = X[:, : 1 - self.n_arms]
        out = np.empty(len(X))
        for a, model in enumerate(self.estimators_):
            rows = arm == a
            if rows.any():
                out[rows] = np.asarray(model.predict(features[rows])).reshape(-1)
        return out

    def _arm(self, X):
        """Arm index of each row: 0 if every indicator is 0, else 1 + the indicator set to 1."""
        indicators = X[:, 1 - self.n_arms :]
        if not (np.isin(indicators, (0.0, 1.0)).all() and (indicators.sum(axis=1) <= 1).all()):
            raise ValueError(
                f"the last column(s) of `X` must be the {self.n_arms - 1} one-hot treatment "
                "indicator(s): 0/1 with at most one 1 per row"
            )
        return indicators @ np.arange(1, self.n_arms)


def dr_learner(
    outcome_model=None,
    propensity_model=None,
    final_model=None,
    *,
    cv=5,
    clip=0.01,
    n_arms=2,
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
    n_arms : int >= 2, default=2
        Number of treatment arms ``A``. With more than two, econml fits one final model per arm
        against the base (lowest) arm: ``effect(X, T0=base, T1=a)``. :class:`PermuCATE` sets it
        from ``T`` for its default learner.
    random_state : int or None, default=None

    Returns
    -------
    econml.dr.DRLearner
        Unfitted; ``fit(Y, T, X=X)`` then ``effect(X, T0=, T1=)``.

    Raises
    ------
    TypeError
        A model of the wrong kind (a classifier as regressor, a regressor as propensity model,
        a string), or a bad ``random_state``.
    ValueError
        ``cv < 2``, ``clip`` outside (0, 0.5) or ``n_arms < 2``.

    Notes
    -----
    Source: Kennedy (2023), Algorithm 1; official ``utils.get_learner(model='linear',
    meta_learner='DR')`` (RidgeCV / LogisticRegressionCV nuisances, RidgeCV final, cv=5);
    several arms: econml ``DRLearner`` (one pseudo-outcome and final model per arm).
    """
    check_scalar(cv, "cv", kind=int, low=2)
    check_scalar(n_arms, "n_arms", kind=int, low=2)
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
        model_regression=PerArmRegressor(outcome, n_arms=n_arms),
        model_final=default_outcome_model() if final is None else final,
        cv=int(cv),
        min_propensity=clip,
        random_state=random_state,
    )


class CateModel:
    """Uniform view of a CATE learner: ``fit(X, T, Y) -> self`` and ``effect(X)``.

    Built by :func:`as_cate`; ``kind`` is ``"econml"``, ``"causalml"``, ``"native"``,
    ``"fixed"`` (a callable ``τ̂(X)`` that is never fitted, e.g. an oracle) or ``"regressor"``
    (an already fitted regressor whose ``predict`` is the effect, e.g. a DR-learner's final stage).
    With a multi-valued discrete treatment there is one effect per arm against the base (lowest)
    arm, arms in increasing order.
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

        ``T`` holds integer arm labels; ``arms_`` records them, sorted (``arms_[0]`` is the
        base). A ``"fixed"`` function is not fitted. Returns self.

        Raises
        ------
        TypeError
            For the ``"regressor"`` view (already fitted).
        ValueError
            A causalml learner whose ``control_name`` is not the base (lowest) arm.
        """
        if self.kind == "regressor":
            raise TypeError("a fitted regressor view cannot be refitted on (X, T, Y)")
        self.arms_ = np.unique(T)
        if self.kind == "econml":
            self.estimator.fit(Y, T, X=X)
        elif self.kind == "causalml":
            control = getattr(self.estimator, "control_name", self.arms_[0])
            if control != self.arms_[0]:
                raise ValueError(
                    f"`learner` has control_name={control!r}, but the base arm is the lowest "
                    f"treatment label {self.arms_[0]!r}: set control_name to it"
                )
            self.estimator.fit(X=X, treatment=T, y=Y)
        elif self.kind == "native":
            self.estimator.fit(X, T, Y)
        return self

    def effect(self, X):
        """τ̂(X): the estimated CATE at each row of `X` (n, d).

        Returns
        -------
        ndarray of shape (n,) with two arms, (n, A − 1) with ``A`` arms; float64
            Column ``c`` is arm ``arms_[c + 1]`` against ``arms_[0]``.

        Raises
        ------
        TypeError
            If the learner's output is not numeric.
        ValueError
            If it does not hold one finite value per row (and arm, after :meth:`fit`).
        """
        if self.kind == "econml":
            base, *others = getattr(self, "arms_", (0, 1))
            out = np.column_stack([self.estimator.effect(X, T0=base, T1=a) for a in others])
        elif self.kind == "native":
            out = self.estimator.effect(X)
        elif self.kind in ("regressor", "causalml"):
            out = self.estimator.predict(X)
        else:
            out = self.estimator(X)
        try:
            out = np.asarray(out, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise TypeError(f"the learner's effects are not numbers: {err}") from None
        if out.ndim == 0 or out.shape[0] != len(X):
            raise ValueError(
                f"the learner returned {out.size} effects for {len(X)} rows; "
                "`effect(X)` must return one effect per row"
            )
        out = out.reshape(len(X), -1)
        contrasts = len(getattr(self, "arms_", ())) - 1
        if contrasts > 0 and out.shape[1] != contrasts:
            raise ValueError(
                f"the learner returned {out.shape[1]} effects per row, but `T` has "
                f"{contrasts + 1} arms: expected {contrasts}, one per arm against the base"
            )
        if not np.isfinite(out).all():
            raise ValueError("the learner returned NaN or infinite effects")
        return out[:, 0] if out.shape[1] == 1 else out


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
          (never a DataFrame) and returns ``(n, A − 1)`` for a treatment with ``A > 2`` arms;
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
